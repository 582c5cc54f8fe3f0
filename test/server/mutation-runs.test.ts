// The run lifecycle of src/server/runs.ts as a client and an operator see it: approvals over two
// rounds in one session (the second decided as the first was), the refusals' error bodies with and
// without memory, and the shutdown (a run held by its model aborted at the grace period's end, one
// queued behind it aborted too; a server with no request going on waits for none).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ScriptedModel } from "../../src/index.js";
import { InMemoryStore, type MemoryEvent, type NewMemoryEvent } from "../../src/memory/index.js";
import { heldModel, postJson, startTestServer, type TestServer, writeFileTool } from "./helpers.js";

const calls = (id: string, path: string) => JSON.stringify({ tool_calls: [{ id, name: "write_file", arguments: { path } }] });
type Completion = { choices: Array<{ message: { content: string | null }; finish_reason: string }>; approval_required?: { checkpoint_id: string; pending: Array<{ tool_call_id: string }> } };
type ErrorBody = { error: { message: string; type: string; code: string; param: string | null } };

for (const memory of [true, false]) {
  describe(`approvals in two rounds, memory ${memory ? "on" : "off"}`, () => {
    let test: TestServer;
    const written: string[] = [];
    before(async () => {
      // One run: a call needing approval, then (resumed) another, then the answer; the next test's run asks for one call.
      const model = new ScriptedModel([calls("call_a", "a.txt"), calls("call_b", "b.txt"), "Both written.", calls("call_c", "c.txt")], { continueAcrossRuns: true });
      test = await startTestServer({ AGENT_NAME: "rounds" }, { ...(memory ? {} : { memory: false }), build: { model, tools: [writeFileTool(written)] } });
    });
    after(() => test.close());
    const chat = (content: string, sessionId: string) => postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content }], session_id: sessionId });
    const decide = (sessionId: string, decisions: object) => postJson(`${test.url}/v1/approvals`, { session_id: sessionId, decisions, stream: false });

    it("the resumed leg stops again for its next call; that checkpoint is decided in turn; a checkpoint decided twice is refused with 409", async () => {
      const first = (await (await chat("write both", "rounds")).json()) as Completion;
      assert.equal(first.choices[0]!.finish_reason, "approval_required");
      const checkpointA = first.approval_required!.checkpoint_id;
      assert.deepEqual(
        first.approval_required!.pending.map((entry) => entry.tool_call_id),
        ["call_a"],
      );
      const second = (await (await decide("rounds", { call_a: { approve: true } })).json()) as Completion;
      assert.equal(second.choices[0]!.finish_reason, "approval_required");
      assert.deepEqual(
        second.approval_required!.pending.map((entry) => entry.tool_call_id),
        ["call_b"],
      );
      assert.notEqual(second.approval_required!.checkpoint_id, checkpointA);
      const done = await decide("rounds", { call_b: { approve: true } });
      assert.equal(done.status, 200);
      const end = (await done.json()) as Completion;
      assert.deepEqual([end.choices[0]!.message.content, end.choices[0]!.finish_reason], ["Both written.", "stop"]);
      assert.deepEqual(written, ["a.txt", "b.txt"]);

      const again = await decide("rounds", { call_b: { approve: true } });
      const refused = (await again.json()) as ErrorBody;
      if (memory) {
        assert.equal(again.status, 409);
        assert.deepEqual(refused.error, {
          message: `the approvals of checkpoint ${second.approval_required!.checkpoint_id} in session "rounds" were decided already`,
          type: "invalid_request_error",
          code: "approval_already_decided",
          param: null,
        });
      } else {
        // Without memory, a resumed checkpoint is forgotten: nothing is pending.
        assert.equal(again.status, 404);
        assert.deepEqual(refused.error, { message: 'no approval is pending in session "rounds"', type: "not_found_error", code: "no_pending_approval", param: "session_id" });
      }
    });

    it("the run routes of a server without durable runs: 404 durable_off", async () => {
      for (const [method, path] of [
        ["GET", "/v1/runs"],
        ["GET", "/v1/runs/run_1"],
        ["POST", "/v1/runs/run_1/cancel"],
      ]) {
        const response = await fetch(`${test.url}${path}`, { method });
        assert.equal(response.status, 404, path);
        assert.deepEqual(((await response.json()) as ErrorBody).error, { message: "durable runs are off on this server (DURABLE=true turns them on)", type: "not_found_error", code: "durable_off", param: null });
      }
    });

    it("nothing pending: 404 naming the session; a decision for a call not pending: 400 invalid_decisions", async () => {
      const none = await decide("never-asked", { call_x: { approve: true } });
      assert.equal(none.status, 404);
      assert.deepEqual(((await none.json()) as ErrorBody).error, { message: 'no approval is pending in session "never-asked"', type: "not_found_error", code: "no_pending_approval", param: "session_id" });

      const asked = (await (await chat("write c", "unknown-call")).json()) as Completion;
      assert.equal(asked.choices[0]!.finish_reason, "approval_required");
      const unknown = await decide("unknown-call", { call_nope: { approve: true } });
      assert.equal(unknown.status, 400);
      const { error } = (await unknown.json()) as ErrorBody;
      assert.deepEqual([error.type, error.code], ["invalid_request_error", "invalid_decisions"]);
      assert.match(error.message, /call_nope/);
    });
  });
}

describe("shutdown", () => {
  it("a server with no request going on waits for none; the runs held when the grace period ends are aborted, the one queued behind them too", async () => {
    const held = heldModel();
    const test = await startTestServer({ AGENT_NAME: "closing" }, { build: { model: new ScriptedModel(["quick"], { continueAcrossRuns: true }) } });
    const answered = await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }] });
    assert.equal(answered.status, 200);
    await answered.json();
    await test.server.close({ graceMs: 5_000 });
    assert.ok(!test.logs.some((line) => /waiting up to/.test(line)), test.logs.join("\n"));

    const holding = await startTestServer({ AGENT_NAME: "holding" }, { build: { model: held.model } });
    const running = postJson(`${holding.url}/v1/chat/completions`, { messages: [{ role: "user", content: "one" }], session_id: "held", stream: true });
    await held.reached;
    // Through AgentServer.fetch: the request is in before the shutdown starts (no socket between).
    const queued = holding.server.fetch(
      new Request("http://agent/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: "two" }], session_id: "held", stream: true }) }),
    );
    const closed = holding.server.close({ graceMs: 50 });
    const [first, second] = await Promise.all([running, queued]);
    const texts = await Promise.all([first.text(), second.text()]);
    await closed;
    for (const text of texts) {
      assert.match(text, /"code":"aborted"/, text);
      assert.ok(text.endsWith("data: [DONE]\n\n"), text);
    }
    assert.ok(holding.logs.some((line) => /grace period over: aborting \d request\(s\)/.test(line)), holding.logs.join("\n"));
    assert.equal(holding.logs.filter((line) => / ABORTED: /.test(line)).length, 2, holding.logs.join("\n"));
  });
});

describe("/api/chat's continuation carries the outputs of every client call the message shows", () => {
  let test: TestServer;
  const pickColor = { name: "pick_color", description: "Asks the user to pick a color", parameters: { type: "object", properties: { choices: { type: "array", items: { type: "string" } } }, required: ["choices"] } };
  const pick = (id: string) => JSON.stringify({ tool_calls: [{ id, name: "pick_color", arguments: { choices: ["red", "blue"] } }] });
  before(async () => {
    const file = { tools: [{ ...pickColor, client: true as const }] };
    test = await startTestServer({ AGENT_NAME: "two-picks" }, { file, build: { model: new ScriptedModel([pick("call_1"), pick("call_2"), "Red, then blue."], { continueAcrossRuns: true }) } });
  });
  after(() => test.close());

  const part = (id: string, output?: string) => ({ type: "tool-pick_color", toolCallId: id, input: { choices: ["red", "blue"] }, ...(output ? { state: "output-available", output } : { state: "input-available" }) });
  const send = (parts: object[]) =>
    postJson(`${test.url}/api/chat`, { id: "two-picks", trigger: "submit-message", messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "pick twice" }] }, { id: "a1", role: "assistant", parts }] });
  const chunks = async (response: Response) => {
    assert.equal(response.status, 200, await response.clone().text());
    return (await response.text())
      .split("\n\n")
      .filter((block) => block.startsWith("data: {"))
      .map((block) => JSON.parse(block.slice(6)) as { type: string; toolCallId?: string; delta?: string });
  };

  it("the output of a call answered before is not taken again: only the pending call's goes on", async () => {
    const first = await chunks(await postJson(`${test.url}/api/chat`, { id: "two-picks", trigger: "submit-message", messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "pick twice" }] }] }));
    assert.ok(first.some((chunk) => chunk.type === "tool-input-available" && chunk.toolCallId === "call_1"));
    const second = await chunks(await send([part("call_1", "red")]));
    assert.ok(second.some((chunk) => chunk.type === "tool-input-available" && chunk.toolCallId === "call_2"));
    const third = await chunks(await send([part("call_1", "red"), part("call_2", "blue")]));
    assert.equal(
      third
        .filter((chunk) => chunk.type === "text-delta")
        .map((chunk) => chunk.delta)
        .join(""),
      "Red, then blue.",
    );
  });
});

/** A store whose appends of `task_delegation_received` fail. */
class NoDelegationStore extends InMemoryStore {
  override async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
    if (events.some((event) => event.event_type === "task_delegation_received")) throw new Error("disk full");
    return super.append(sessionId, events);
  }
}

describe("a delegated task and a client that leaves", () => {
  const delegation = (sessionId: string) => ({ session_id: sessionId, messages: [{ role: "task-delegation", content: "process the data" }] });

  it("the task is recorded first, marked as a delegation; a failure to record it is logged and the run goes on", async () => {
    const test = await startTestServer({ AGENT_NAME: "worker", DEBUG_MOCK_RESPONSES: JSON.stringify(["done", "done again"]) });
    try {
      assert.equal((await postJson(`${test.url}/v1/chat/completions`, delegation("delegated"))).status, 200);
      const { events } = (await (await fetch(`${test.url}/memory/events?session_id=delegated`)).json()) as { events: Array<{ event_type: string; content: unknown; metadata: Record<string, unknown> }> };
      assert.equal(events[0]!.event_type, "task_delegation_received");
      assert.equal(events[0]!.content, "process the data");
      assert.equal(events[0]!.metadata.source, "task-delegation");
    } finally {
      await test.close();
    }
    const failing = await startTestServer({ AGENT_NAME: "worker" }, { memory: new NoDelegationStore(), build: { model: new ScriptedModel(["done anyway"]) } });
    try {
      const answered = await postJson(`${failing.url}/v1/chat/completions`, delegation("not-recorded"));
      assert.equal(answered.status, 200);
      assert.equal(((await answered.json()) as Completion).choices[0]!.message.content, "done anyway");
      assert.ok(failing.logs.includes("[worker] could not record task_delegation_received in not-recorded: disk full"), failing.logs.join("\n"));
    } finally {
      await failing.close();
    }
  });

  it("a client leaving mid-stream: the run is aborted and the log says the client disconnected", async () => {
    const held = heldModel();
    const test = await startTestServer({ AGENT_NAME: "leaving" }, { build: { model: held.model } });
    try {
      const controller = new AbortController();
      const response = await postJson(`${test.url}/v1/chat/completions`, { session_id: "leaving", stream: true, messages: [{ role: "user", content: "hi" }] }, {}, controller.signal);
      assert.equal(response.status, 200);
      await held.reached;
      controller.abort();
      const line = await test.waitForLog(/session leaving ABORTED/);
      assert.match(line, /^\[leaving\] run \S+ session leaving ABORTED: .* \(client disconnected\)$/);
    } finally {
      await test.close();
    }
  });
});
