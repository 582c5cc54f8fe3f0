// POST /v1/approvals and GET /v1/approvals (src/server/routes/approvals.ts, src/server/decisions.ts)
// at their edges: every malformed body refused with a 400 naming the field and running nothing, the
// default of `stream`, a refusal answered as JSON whether streamed or not, a rejection's reason
// reaching the model's conversation, and the pending list with what it names.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { defineTool, ScriptedModel } from "../../src/index.js";
import { InMemoryStore } from "../../src/memory/index.js";
import { postJson, startTestServer, type TestServer, writeFileTool } from "./helpers.js";
import type { PendingApprovalView } from "../../src/server/routes/approvals.js";

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}
/** A waiting call as the routes answer it (what `GET /v1/approvals` lists). */
type Pending = PendingApprovalView;

const twoWrites = JSON.stringify({
  tool_calls: [
    { id: "call_a", name: "write_file", arguments: { path: "a.txt" } },
    { id: "call_b", name: "write_file", arguments: { path: "b.txt" } },
  ],
});

describe("POST /v1/approvals refuses a malformed body, naming the field, and runs nothing", () => {
  const written: string[] = [];
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "approver" }, { build: { model: new ScriptedModel([twoWrites, "done"]), tools: [writeFileTool(written)] } });
    const stopped = await postJson(`${test.url}/v1/chat/completions`, { session_id: "held", messages: [{ role: "user", content: "write both" }] });
    assert.equal(((await stopped.json()) as { choices: Array<{ finish_reason: string }> }).choices[0].finish_reason, "approval_required");
  });
  after(() => test.close());

  const cases: Array<[string, unknown, string | null, string, RegExp]> = [
    ["an array", [], null, "invalid_request", /^the body must be a JSON object \{ session_id, decisions \}$/],
    ["null", null, null, "invalid_request", /^the body must be a JSON object/],
    ["a string", "yes", null, "invalid_request", /^the body must be a JSON object/],
    ["no decisions", { session_id: "held" }, "decisions", "invalid_decisions", /^decisions must be an object .* with at least one decision$/],
    ["empty decisions", { session_id: "held", decisions: {} }, "decisions", "invalid_decisions", /at least one decision/],
    ["decisions as a list", { session_id: "held", decisions: [{ approve: true }] }, "decisions", "invalid_decisions", /^decisions must be an object/],
    ["decisions as null", { session_id: "held", decisions: null }, "decisions", "invalid_decisions", /^decisions must be an object/],
    ["a decision that is null", { session_id: "held", decisions: { call_a: null } }, "decisions.call_a", "invalid_decisions", /^decisions\.call_a must be \{ approve: true \} or \{ approve: false, reason\? \}$/],
    ["approve as a string", { session_id: "held", decisions: { call_a: { approve: "true" } } }, "decisions.call_a", "invalid_decisions", /^decisions\.call_a must be/],
    ["approve missing", { session_id: "held", decisions: { call_a: { reason: "why" } } }, "decisions.call_a", "invalid_decisions", /^decisions\.call_a must be/],
    ["a reason that is no string", { session_id: "held", decisions: { call_b: { approve: false, reason: 7 } } }, "decisions.call_b.reason", "invalid_decisions", /^decisions\.call_b\.reason must be a string$/],
    ["a hash that is no string", { session_id: "held", decisions: { call_a: { approve: true, arguments_hash: 12 } } }, "decisions.call_a.arguments_hash", "invalid_decisions", /^decisions\.call_a\.arguments_hash must be a string$/],
    ["stream as a string", { session_id: "held", stream: "false", decisions: { call_a: { approve: true } } }, "stream", "invalid_stream", /^stream must be a boolean$/],
    ["no session", { decisions: { call_a: { approve: true } } }, "session_id", "invalid_session_id", /^session_id must be 1-200 characters/],
  ];
  for (const [name, body, param, code, message] of cases) {
    it(`${name}: 400 ${code}`, async () => {
      const response = await postJson(`${test.url}/v1/approvals`, JSON.stringify(body));
      assert.equal(response.status, 400);
      assert.match(response.headers.get("content-type") ?? "", /application\/json/);
      const { error } = (await response.json()) as ErrorBody;
      assert.deepEqual([error.type, error.param, error.code], ["invalid_request_error", param, code]);
      assert.match(error.message, message);
      assert.deepEqual(written, []);
    });
  }

  it("a valid decision after all that still finds the calls waiting", async () => {
    const response = await postJson(`${test.url}/v1/approvals`, { session_id: "held", stream: false, decisions: { call_a: { approve: true }, call_b: { approve: true } } });
    assert.equal(response.status, 200);
    assert.deepEqual(written, ["a.txt", "b.txt"]);
  });
});

describe("POST /v1/approvals: the answer's shape", () => {
  const written: string[] = [];
  let model: ScriptedModel;
  let mark = 0;
  /** The tool results the model was sent since the mark. */
  const seenSinceMark = () =>
    model.requests.slice(mark).flatMap((request) => request.messages.filter((message) => message.role === "tool").map((message) => JSON.stringify(message.content)));
  let test: TestServer;
  let store: InMemoryStore;
  before(async () => {
    // The model's second call answers with what the rejected call's result said, so the reason's path to the model shows.
    model = new ScriptedModel([twoWrites, "first done", twoWrites, "second done", twoWrites, "third done"], { continueAcrossRuns: true });
    store = new InMemoryStore();
    test = await startTestServer({ AGENT_NAME: "shaper" }, { memory: store, build: { model, tools: [writeFileTool(written)] } });
  });
  after(() => test.close());

  const stop = async (sessionId: string) => {
    const response = await postJson(`${test.url}/v1/chat/completions`, { session_id: sessionId, messages: [{ role: "user", content: "write both" }] });
    const body = (await response.json()) as { choices: Array<{ finish_reason: string }>; approval_required: { checkpoint_id: string; pending: Pending[] } };
    assert.equal(body.choices[0].finish_reason, "approval_required");
    return body.approval_required;
  };

  it("streams by default: SSE with the session's header, a rejection's reason as the call's result", async () => {
    await stop("streamed");
    mark = model.requests.length;
    const response = await postJson(`${test.url}/v1/approvals`, { session_id: "streamed", decisions: { call_a: { approve: true }, call_b: { approve: false, reason: "b.txt is read-only" } } });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/);
    assert.equal(response.headers.get("x-session-id"), "streamed");
    const text = await response.text();
    const content = text
      .split("\n\n")
      .filter((block) => block.startsWith("data: {"))
      .map((block) => (JSON.parse(block.slice(6)) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "")
      .join("");
    assert.match(content, /first done$/);
    assert.match(text, /data: \[DONE\]\n\n$/);
    assert.deepEqual(written, ["a.txt"]);
    assert.ok(
      seenSinceMark().some((content) => content.includes("Rejected: b.txt is read-only")),
      seenSinceMark().join("\n"),
    );
  });

  it("a rejection without a reason still reaches the model as a rejection", async () => {
    await stop("no-reason");
    mark = model.requests.length;
    written.length = 0;
    const response = await postJson(`${test.url}/v1/approvals`, { session_id: "no-reason", stream: false, decisions: { call_a: { approve: false }, call_b: { approve: false } } });
    const completion = (await response.json()) as { object: string; model: string; choices: Array<{ message: { content: string }; finish_reason: string }> };
    assert.equal(completion.object, "chat.completion");
    assert.equal(completion.model, "shaper");
    assert.deepEqual([completion.choices[0].message.content, completion.choices[0].finish_reason], ["second done", "stop"]);
    assert.deepEqual(written, []);
    assert.equal(seenSinceMark().filter((content) => content.includes("Rejected")).length, 2, seenSinceMark().join("\n"));
  });

  it("a refusal is JSON whether or not the request asked for a stream: 404 nothing pending, 409 decided already", async () => {
    for (const stream of [undefined, true, false]) {
      const none = await postJson(`${test.url}/v1/approvals`, { session_id: "never-asked", stream, decisions: { x: { approve: true } } });
      assert.equal(none.status, 404);
      assert.match(none.headers.get("content-type") ?? "", /application\/json/);
      assert.equal(((await none.json()) as ErrorBody).error.code, "no_pending_approval");
      const again = await postJson(`${test.url}/v1/approvals`, { session_id: "streamed", stream, decisions: { call_a: { approve: true } } });
      assert.equal(again.status, 409);
      assert.equal(((await again.json()) as ErrorBody).error.code, "approval_already_decided");
    }
  });

  it("GET /v1/approvals names each waiting call with its session, checkpoint, run, time, arguments and hash, until it is decided", async () => {
    const before = Date.now();
    const asked = await stop("listed");
    const listing = (await (await fetch(`${test.url}/v1/approvals`)).json()) as { pending: Pending[]; total: number };
    assert.equal(listing.total, 2);
    assert.deepEqual(
      listing.pending.map((entry) => [entry.session_id, entry.tool_call_id, entry.tool, entry.arguments, entry.agent_path]),
      [
        ["listed", "call_a", "write_file", { path: "a.txt" }, ["shaper"]],
        ["listed", "call_b", "write_file", { path: "b.txt" }, ["shaper"]],
      ],
    );
    for (const [index, entry] of listing.pending.entries()) {
      assert.equal(entry.checkpoint_id, asked.checkpoint_id);
      assert.equal(entry.arguments_hash, asked.pending[index].arguments_hash);
      assert.match(entry.run_id ?? "", /\S/);
      assert.ok(Date.parse(entry.requested_at) >= before - 1000, entry.requested_at);
    }
    const decided = await postJson(`${test.url}/v1/approvals`, { session_id: "listed", stream: false, decisions: { call_a: { approve: true }, call_b: { approve: true } } });
    assert.equal(decided.status, 200);
    assert.deepEqual(await (await fetch(`${test.url}/v1/approvals`)).json(), { pending: [], total: 0 });
  });
});

describe("GET /v1/approvals reads the log as it is", () => {
  const pending = (id: string, extra: object = {}) => ({ toolCallId: id, toolName: "write_file", arguments: { path: `${id}.txt` }, argumentsHash: `hash-${id}`, ...extra });
  let store: InMemoryStore;
  let test: TestServer;
  before(async () => {
    store = new InMemoryStore();
    const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second));
    // Two sessions whose checkpoints have the same id: deciding one leaves the other waiting.
    await store.append("older", [{ event_type: "approval_requested", content: { checkpoint_id: "cp-1", pending: [pending("o1")] }, metadata: { run_id: "run-older" }, timestamp: at(1) }]);
    await store.append("decided", [
      { event_type: "approval_requested", content: { checkpoint_id: "cp-1", pending: [pending("d1")] }, timestamp: at(2) },
      { event_type: "approval_decided", content: { checkpoint_id: "cp-1" }, timestamp: at(3) },
    ]);
    // Not a checkpoint the server could resume: no id, no list of calls, or a decision without an id.
    await store.append("malformed", [
      { event_type: "approval_requested", content: { pending: [pending("m1")] }, timestamp: at(4) },
      { event_type: "approval_requested", content: { checkpoint_id: "cp-2", pending: "m2" }, timestamp: at(5) },
      { event_type: "approval_requested", content: null, timestamp: at(6) },
      { event_type: "approval_requested", content: { checkpoint_id: "cp-3", pending: [pending("m3")] }, timestamp: at(7) },
      { event_type: "approval_decided", content: { checkpoint_id: 3 }, timestamp: at(8) },
      { event_type: "approval_decided", content: null, timestamp: at(8) },
    ]);
    await store.append("newer", [{ event_type: "approval_requested", content: { checkpoint_id: "cp-4", pending: [pending("n1", { agentPath: ["boss", "helper"] }), pending("n2")] }, timestamp: at(9) }]);
    // Newer events of other kinds do not push the approvals out of what is read.
    await store.append("chatty", Array.from({ length: 150 }, (_, index) => ({ event_type: "user_message", content: `m${index}`, timestamp: at(10) })));
    // A decision whose checkpoint id is no string answers nothing, even a checkpoint named like it; a run id that is no string is none.
    await store.append("odd", [
      { event_type: "approval_requested", content: { checkpoint_id: "3", pending: [pending("x1")] }, metadata: { run_id: 7 } as never, timestamp: at(0) },
      { event_type: "approval_decided", content: { checkpoint_id: 3 }, timestamp: at(0) },
    ]);
    test = await startTestServer({ AGENT_NAME: "inbox", DEBUG_MOCK_RESPONSES: "[\"unused\"]" }, { memory: store });
  });
  after(() => test.close());

  it("lists every waiting call, the last recorded first, with the run when the log names it and the agent's own path by default", async () => {
    const listing = (await (await fetch(`${test.url}/v1/approvals`)).json()) as { pending: Array<Record<string, unknown>>; total: number };
    assert.deepEqual(listing.pending, [
      { session_id: "odd", checkpoint_id: "3", requested_at: "2026-01-01T00:00:00.000Z", tool_call_id: "x1", tool: "write_file", arguments: { path: "x1.txt" }, arguments_hash: "hash-x1", agent_path: ["inbox"] },
      { session_id: "newer", checkpoint_id: "cp-4", requested_at: "2026-01-01T00:00:09.000Z", tool_call_id: "n1", tool: "write_file", arguments: { path: "n1.txt" }, arguments_hash: "hash-n1", agent_path: ["boss", "helper"] },
      { session_id: "newer", checkpoint_id: "cp-4", requested_at: "2026-01-01T00:00:09.000Z", tool_call_id: "n2", tool: "write_file", arguments: { path: "n2.txt" }, arguments_hash: "hash-n2", agent_path: ["inbox"] },
      { session_id: "malformed", checkpoint_id: "cp-3", requested_at: "2026-01-01T00:00:07.000Z", tool_call_id: "m3", tool: "write_file", arguments: { path: "m3.txt" }, arguments_hash: "hash-m3", agent_path: ["inbox"] },
      { session_id: "older", checkpoint_id: "cp-1", run_id: "run-older", requested_at: "2026-01-01T00:00:01.000Z", tool_call_id: "o1", tool: "write_file", arguments: { path: "o1.txt" }, arguments_hash: "hash-o1", agent_path: ["inbox"] },
    ]);
    assert.equal(listing.total, 5);
  });
});

describe("POST /v1/approvals: the resumed run and its client", () => {
  /** An approved `hold` call waits until released or aborted; `entered` resolves when it runs. */
  function holdingServer() {
    let entered: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (entered = resolve));
    let release: () => void = () => undefined;
    let released = false;
    const hold = defineTool({
      name: "hold",
      description: "Waits until released or aborted",
      parameters: { type: "object" },
      needsApproval: true,
      execute: (_args, context) =>
        new Promise<string>((resolve) => {
          release = () => {
            released = true;
            resolve("released");
          };
          context.signal.addEventListener("abort", () => resolve("stopped"), { once: true });
          entered();
        }),
    });
    const model = new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "h1", name: "hold", arguments: {} }] }), "held and done"]);
    return { running, release: () => release(), released: () => released, build: { model, tools: [hold] } };
  }
  const ask = async (url: string, sessionId: string) => {
    const response = await postJson(`${url}/v1/chat/completions`, { session_id: sessionId, messages: [{ role: "user", content: "hold on" }] });
    assert.equal(((await response.json()) as { choices: Array<{ finish_reason: string }> }).choices[0].finish_reason, "approval_required");
  };

  it("streams as soon as the decisions are taken, before the resumed run ends", async () => {
    const held = holdingServer();
    const test = await startTestServer({ AGENT_NAME: "holder" }, { build: held.build });
    try {
      await ask(test.url, "early");
      const answer = postJson(`${test.url}/v1/approvals`, { session_id: "early", decisions: { h1: { approve: true } } });
      await held.running;
      // The safety net: were the headers held back until the run's end, this lets the run end (and the test fail).
      const safety = setTimeout(held.release, 10_000);
      const response = await answer;
      assert.equal(held.released(), false, "the response started while the approved call was still running");
      held.release();
      clearTimeout(safety);
      assert.equal(response.status, 200);
      assert.match(await response.text(), /data: \[DONE\]\n\n$/);
    } finally {
      await test.close();
    }
  });

  it("a client that leaves a non-streamed resume aborts the resumed run", async () => {
    const held = holdingServer();
    const test = await startTestServer({ AGENT_NAME: "holder" }, { build: held.build });
    try {
      await ask(test.url, "left-json");
      const controller = new AbortController();
      const answer = postJson(`${test.url}/v1/approvals`, { session_id: "left-json", stream: false, decisions: { h1: { approve: true } } }, {}, controller.signal);
      await held.running;
      controller.abort();
      await assert.rejects(answer);
      assert.match(await test.waitForLog(/session left-json ABORTED/), /client disconnected/);
    } finally {
      await test.close();
    }
  });

  it("a caller of AgentServer.fetch that cancels the streamed resume aborts the resumed run", async () => {
    const held = holdingServer();
    const test = await startTestServer({ AGENT_NAME: "holder" }, { build: held.build });
    try {
      await ask(test.url, "left-stream");
      const response = await test.server.fetch(
        new Request("http://agent/v1/approvals", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: "left-stream", decisions: { h1: { approve: true } } }) }),
      );
      assert.equal(response.status, 200);
      await held.running;
      await response.body!.cancel();
      assert.match(await test.waitForLog(/session left-stream ABORTED/), /client disconnected/);
    } finally {
      await test.close();
    }
  });
});
