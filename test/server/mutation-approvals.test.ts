// POST /v1/approvals and GET /v1/approvals (src/server/routes/approvals.ts, src/server/decisions.ts)
// at their edges: every malformed body refused with a 400 naming the field and running nothing, the
// default of `stream`, a refusal answered as JSON whether streamed or not, a rejection's reason
// reaching the model's conversation, and the pending list with what it names.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ScriptedModel } from "../../src/index.js";
import { InMemoryStore } from "../../src/memory/index.js";
import { postJson, startTestServer, type TestServer, writeFileTool } from "./helpers.js";

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}
interface Pending {
  session_id: string;
  checkpoint_id: string;
  run_id?: string;
  requested_at: string;
  tool_call_id: string;
  tool: string;
  arguments: unknown;
  arguments_hash: string;
  agent_path: string[];
}

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
  const seen: string[] = [];
  let test: TestServer;
  let store: InMemoryStore;
  before(async () => {
    // The model's second call answers with what the rejected call's result said, so the reason's path to the model shows.
    const model = new ScriptedModel([twoWrites, "first done", twoWrites, "second done", twoWrites, "third done"], { continueAcrossRuns: true });
    const wrapped = Object.assign(Object.create(Object.getPrototypeOf(model)), model);
    wrapped.stream = (request: { messages: Array<{ role: string; content: unknown }> }, options: unknown) => {
      for (const message of request.messages) if (message.role === "tool") seen.push(JSON.stringify(message.content));
      return model.stream(request as never, options as never);
    };
    store = new InMemoryStore();
    test = await startTestServer({ AGENT_NAME: "shaper" }, { memory: store, build: { model: wrapped, tools: [writeFileTool(written)] } });
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
    seen.length = 0;
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
      seen.some((content) => content.includes("Rejected: b.txt is read-only")),
      seen.join("\n"),
    );
  });

  it("a rejection without a reason still reaches the model as a rejection", async () => {
    await stop("no-reason");
    seen.length = 0;
    written.length = 0;
    const response = await postJson(`${test.url}/v1/approvals`, { session_id: "no-reason", stream: false, decisions: { call_a: { approve: false }, call_b: { approve: false } } });
    const completion = (await response.json()) as { object: string; model: string; choices: Array<{ message: { content: string }; finish_reason: string }> };
    assert.equal(completion.object, "chat.completion");
    assert.equal(completion.model, "shaper");
    assert.deepEqual([completion.choices[0].message.content, completion.choices[0].finish_reason], ["second done", "stop"]);
    assert.deepEqual(written, []);
    assert.equal(seen.filter((content) => content.includes("Rejected")).length, 2, seen.join("\n"));
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
    test = await startTestServer({ AGENT_NAME: "inbox", DEBUG_MOCK_RESPONSES: "[\"unused\"]" }, { memory: store });
  });
  after(() => test.close());

  it("lists every waiting call newest first, with the run when the log names it and the agent's own path by default", async () => {
    const listing = (await (await fetch(`${test.url}/v1/approvals`)).json()) as { pending: Array<Record<string, unknown>>; total: number };
    assert.deepEqual(listing.pending, [
      { session_id: "newer", checkpoint_id: "cp-4", requested_at: "2026-01-01T00:00:09.000Z", tool_call_id: "n1", tool: "write_file", arguments: { path: "n1.txt" }, arguments_hash: "hash-n1", agent_path: ["boss", "helper"] },
      { session_id: "newer", checkpoint_id: "cp-4", requested_at: "2026-01-01T00:00:09.000Z", tool_call_id: "n2", tool: "write_file", arguments: { path: "n2.txt" }, arguments_hash: "hash-n2", agent_path: ["inbox"] },
      { session_id: "malformed", checkpoint_id: "cp-3", requested_at: "2026-01-01T00:00:07.000Z", tool_call_id: "m3", tool: "write_file", arguments: { path: "m3.txt" }, arguments_hash: "hash-m3", agent_path: ["inbox"] },
      { session_id: "older", checkpoint_id: "cp-1", run_id: "run-older", requested_at: "2026-01-01T00:00:01.000Z", tool_call_id: "o1", tool: "write_file", arguments: { path: "o1.txt" }, arguments_hash: "hash-o1", agent_path: ["inbox"] },
    ]);
    assert.equal(listing.total, 4);
  });
});
