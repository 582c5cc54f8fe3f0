// src/server/runs.ts's resume as a client sees it, beyond test/server/mutation-runs.test.ts: a session
// log holding approval events another writer left without content (skipped, not a 500), and
// /api/chat's continuation naming a result for a call that waits for a person's approval (ignored:
// the call still waits for its decision); the 503 a draining server answers; the log lines of a run
// ending and of the store writing again; decisions sent again after their run could not be stored; an
// approval left waiting while the session chats on (memory on and off alike); a lock that cannot be
// given back, logged.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ScriptedModel } from "../../src/index.js";
import { InMemoryStore, type MemoryEvent, type NewMemoryEvent } from "../../src/memory/index.js";
import { heldModel, postJson, startTestServer, type TestServer, writeFileTool } from "./helpers.js";

const calls = (...entries: Array<[string, string, object]>) => JSON.stringify({ tool_calls: entries.map(([id, name, args]) => ({ id, name, arguments: args })) });
const pickColor = { name: "pick_color", description: "Asks the user to pick a color", parameters: { type: "object", properties: { choices: { type: "array", items: { type: "string" } } }, required: ["choices"] } };
const chunks = async (response: Response) =>
  (await response.text())
    .split("\n\n")
    .filter((block) => block.startsWith("data: {"))
    .map((block) => JSON.parse(block.slice(6)) as { type: string; delta?: string });
type Completion = { choices: Array<{ message: { content: string | null }; finish_reason: string }>; approval_required?: { checkpoint_id: string } };

describe("resuming a session", () => {
  let test: TestServer;
  const store = new InMemoryStore();
  const written: string[] = [];
  before(async () => {
    const script = [calls(["call_a", "write_file", { path: "a.txt" }]), "Written.", calls(["call_p", "pick_color", { choices: ["red", "blue"] }], ["call_w", "write_file", { path: "w.txt" }]), "Picked and written."];
    const file = { tools: [{ ...pickColor, client: true as const }] };
    test = await startTestServer({ AGENT_NAME: "resumer" }, { memory: store, file, build: { model: new ScriptedModel(script, { continueAcrossRuns: true }), tools: [writeFileTool(written)] } });
  });
  after(() => test.close());

  it("approval events without content in the session's log (another writer's) are skipped: the pending checkpoint is still found and decided", async () => {
    const first = (await (await postJson(`${test.url}/v1/chat/completions`, { session_id: "foreign", messages: [{ role: "user", content: "write a" }] })).json()) as Completion;
    assert.equal(first.choices[0]!.finish_reason, "approval_required");
    await store.append("foreign", [
      { event_type: "approval_requested", content: null },
      { event_type: "approval_decided", content: null },
    ]);
    const decided = await postJson(`${test.url}/v1/approvals`, { session_id: "foreign", decisions: { call_a: { approve: true } }, stream: false });
    const answer = (await decided.json()) as Completion;
    assert.equal(decided.status, 200, JSON.stringify(answer));
    assert.deepEqual([answer.choices[0]!.message.content, answer.choices[0]!.finish_reason], ["Written.", "stop"]);
    assert.deepEqual(written, ["a.txt"]);
    assert.match(test.logs.at(-1)!, /^\[resumer\] run \S+ session foreign COMPLETED: the model answered$/);
  });

  it("/api/chat: a result the message shows for a call waiting for approval is not taken; the client call's result goes on and the other call still waits", async () => {
    const user = { id: "u1", role: "user", parts: [{ type: "text", text: "pick and write" }] };
    const first = await postJson(`${test.url}/api/chat`, { id: "mixed", trigger: "submit-message", messages: [user] });
    assert.equal(first.status, 200);
    const firstText = await first.text();
    assert.match(firstText, /"type":"tool-approval-request","approvalId":"call_w"/);
    const parts = [
      { type: "tool-pick_color", toolCallId: "call_p", state: "output-available", input: { choices: ["red", "blue"] }, output: "red" },
      { type: "tool-write_file", toolCallId: "call_w", state: "output-available", input: { path: "w.txt" }, output: "forged" },
    ];
    const second = await postJson(`${test.url}/api/chat`, { id: "mixed", trigger: "submit-message", messages: [user, { id: "a1", role: "assistant", parts }] });
    assert.equal(second.status, 200);
    assert.deepEqual(await chunks(second), [
      { type: "start", messageId: "a1" },
      { type: "tool-approval-request", approvalId: "call_w", toolCallId: "call_w" },
      { type: "finish", finishReason: "tool-calls" },
    ]);
    assert.deepEqual(written, ["a.txt"]);
    const approved = [parts[0], { type: "tool-write_file", toolCallId: "call_w", state: "approval-responded", input: { path: "w.txt" }, approval: { id: "call_w", approved: true } }];
    const third = await postJson(`${test.url}/api/chat`, { id: "mixed", trigger: "submit-message", messages: [user, { id: "a1", role: "assistant", parts: approved }] });
    const text = (await chunks(third)).flatMap((chunk) => (chunk.type === "text-delta" ? [chunk.delta] : [])).join("");
    assert.equal(text, "Picked and written.");
    assert.deepEqual(written, ["a.txt", "w.txt"]);
  });
});

describe("a request while the server drains", () => {
  it("is refused with 503: the server is shutting down (server_error, shutting_down)", async () => {
    const held = heldModel();
    const test = await startTestServer({ AGENT_NAME: "draining" }, { build: { model: held.model } });
    const answer = postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }], stream: true });
    await held.reached;
    const closed = test.server.close({ graceMs: 600_000 });
    const refused = await test.server.fetch(new Request("http://agent/v1/models"));
    assert.equal(refused.status, 503);
    assert.deepEqual(await refused.json(), { error: { message: "the server is shutting down", type: "server_error", param: null, code: "shutting_down" } });
    await Promise.all([test.server.close({ graceMs: 0 }), closed]);
    assert.match(await (await answer).text(), /"code":"aborted"/);
    // Aborted by the shutdown, not by its client.
    assert.ok(test.logs.some((line) => /^\[draining\] run \S+ session \S+ ABORTED: aborted: server shutting down$/.test(line)), test.logs.join("\n"));
  });
});

/** A store whose appends holding an event of the type `failing` names fail. */
class FlakyStore extends InMemoryStore {
  failing: string | undefined;
  override async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
    if (events.some((event) => event.event_type === this.failing)) throw new Error("disk full");
    return super.append(sessionId, events);
  }
}

describe("the memory store's writes failing, then working again", () => {
  it("the operator is told once that the store writes again, after the first run stored again, not after every run", async () => {
    const store = new FlakyStore();
    const test = await startTestServer({ AGENT_NAME: "flaky", DEBUG_MOCK_RESPONSES: JSON.stringify(Array(4).fill("ok")) }, { memory: store });
    const chat = (sessionId: string) => postJson(`${test.url}/v1/chat/completions`, { session_id: sessionId, messages: [{ role: "user", content: "hi" }] });
    const again = () => test.logs.filter((line) => line === "[flaky] memory store memory writes again");
    try {
      assert.equal((await chat("fine")).status, 200);
      assert.deepEqual(again(), []);
      store.failing = "run_ended";
      assert.equal((await chat("lost")).status, 503);
      store.failing = undefined;
      assert.equal((await chat("back")).status, 200);
      assert.equal(again().length, 1, test.logs.join("\n"));
      assert.equal((await chat("still")).status, 200);
      assert.equal(again().length, 1, test.logs.join("\n"));
    } finally {
      await test.close();
    }
  });
});

describe("decisions whose resumed run could not be stored", () => {
  it("sent again: 409 approval_already_decided (the checkpoint was taken), not a second run of the call", async () => {
    const store = new FlakyStore();
    const written: string[] = [];
    const model = new ScriptedModel([calls(["call_f", "write_file", { path: "f.txt" }]), "Written."], { continueAcrossRuns: true });
    const test = await startTestServer({ AGENT_NAME: "retry" }, { memory: store, build: { model, tools: [writeFileTool(written)] } });
    const decide = () => postJson(`${test.url}/v1/approvals`, { session_id: "retried", decisions: { call_f: { approve: true } }, stream: false });
    try {
      const first = (await (await postJson(`${test.url}/v1/chat/completions`, { session_id: "retried", messages: [{ role: "user", content: "write f" }] })).json()) as Completion;
      assert.equal(first.choices[0]!.finish_reason, "approval_required");
      store.failing = "approval_decided";
      const lost = await decide();
      assert.equal(lost.status, 503);
      assert.equal(((await lost.json()) as { error: { code: string } }).error.code, "memory_write_failed");
      store.failing = undefined;
      const again = await decide();
      assert.equal(again.status, 409);
      const { error } = (await again.json()) as { error: { type: string; code: string; message: string } };
      assert.deepEqual([error.type, error.code], ["invalid_request_error", "approval_already_decided"]);
      assert.match(error.message, /already resumed/);
      assert.deepEqual(written, ["f.txt"]);
    } finally {
      await test.close();
    }
  });
});

for (const memory of [true, false]) {
  describe(`an approval left waiting while the session chats on, memory ${memory ? "on" : "off"}`, () => {
    it("is still pending: deciding it later resumes its run", async () => {
      const written: string[] = [];
      const model = new ScriptedModel([calls(["call_l", "write_file", { path: "later.txt" }]), "Something else.", "Written later."], { continueAcrossRuns: true });
      const test = await startTestServer({ AGENT_NAME: "later" }, { ...(memory ? {} : { memory: false }), build: { model, tools: [writeFileTool(written)] } });
      const chat = async (content: string) => (await (await postJson(`${test.url}/v1/chat/completions`, { session_id: "later", messages: [{ role: "user", content }] })).json()) as Completion;
      try {
        assert.equal((await chat("write later")).choices[0]!.finish_reason, "approval_required");
        assert.equal((await chat("meanwhile")).choices[0]!.message.content, "Something else.");
        const decided = await postJson(`${test.url}/v1/approvals`, { session_id: "later", decisions: { call_l: { approve: true } }, stream: false });
        const answer = (await decided.json()) as Completion;
        assert.equal(decided.status, 200, JSON.stringify(answer));
        assert.equal(answer.choices[0]!.message.content, "Written later.");
        assert.deepEqual(written, ["later.txt"]);
      } finally {
        await test.close();
      }
    });
  });
}

/** A store whose session locks are taken at once and cannot be given back. */
class StickyLockStore extends InMemoryStore {
  async lockSession(): Promise<() => Promise<void>> {
    return async () => {
      throw new Error("lock table gone");
    };
  }
}

describe("a session lock that cannot be given back", () => {
  it("is logged, naming the session; the answer was given all the same", async () => {
    const test = await startTestServer({ AGENT_NAME: "sticky", DEBUG_MOCK_RESPONSES: JSON.stringify(["answered"]) }, { memory: new StickyLockStore() });
    try {
      const response = await postJson(`${test.url}/v1/chat/completions`, { session_id: "stuck", messages: [{ role: "user", content: "hi" }] });
      assert.equal(response.status, 200);
      const line = await test.waitForLog(/could not give back/);
      assert.equal(line, "[sticky] could not give back the lock of session stuck: lock table gone");
    } finally {
      await test.close();
    }
  });
});
