// POST /ag-ui's continuation on the node:http door (src/server/routes/protocol-post.ts): the stream's
// status and headers wait until the run went on, so an approved resume answers 200 with the stream's
// headers and its whole stream, and a refused one (decided already) a JSON error, nothing
// streamed before it.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { AgentLoopError, ScriptedModel } from "../../src/index.js";
import { type EventQuery, InMemoryStore, type MemoryEvent } from "../../src/memory/index.js";
import { postJson, startTestServer, type TestServer, writeFileTool } from "./helpers.js";

/** A store whose reads take a macrotask, as a database's do: a refusal comes after the stream's opening was written. */
class SlowStore extends InMemoryStore {
  override async events(sessionId: string, query?: EventQuery): Promise<MemoryEvent[]> {
    await new Promise((resolve) => setImmediate(resolve));
    return super.events(sessionId, query);
  }
}

const calls = (...entries: Array<[string, string, object]>) => JSON.stringify({ tool_calls: entries.map(([id, name, args]) => ({ id, name, arguments: args })) });

/** The SSE data events of a body. */
const events = (text: string) =>
  text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => JSON.parse(block.slice(6)) as { type: string; outcome?: unknown });

describe("an AG-UI resume on the node:http door", () => {
  let test: TestServer;
  const written: string[] = [];
  before(async () => {
    const model = new ScriptedModel([calls(["call_w", "write_file", { path: "a.txt" }]), "Wrote it."], { continueAcrossRuns: true });
    test = await startTestServer({ AGENT_NAME: "ag-resume" }, { memory: new SlowStore(), build: { model, tools: [writeFileTool(written)] } });
  });
  after(() => test.close());

  const input = (extra: object) => ({ threadId: "ag-resume", runId: "r1", state: {}, messages: [{ id: "u1", role: "user", content: "write" }], tools: [], context: [], forwardedProps: {}, ...extra });

  it("approved: 200 with the stream's headers, the stream from RUN_STARTED to RUN_FINISHED; then refused once decided", async () => {
    const first = events(await (await postJson(`${test.url}/ag-ui`, input({}))).text());
    assert.equal(first.at(-1)!.type, "RUN_FINISHED");
    const resume = input({ runId: "r2", resume: [{ interruptId: "call_w", status: "resolved", payload: { approve: true } }] });
    const resumed = await postJson(`${test.url}/ag-ui`, resume);
    assert.equal(resumed.status, 200);
    assert.match(resumed.headers.get("content-type") ?? "", /^text\/event-stream/);
    assert.equal(resumed.headers.get("x-session-id"), "ag-resume");
    const list = events(await resumed.text());
    assert.deepEqual([list[0].type, list.at(-1)!.type], ["RUN_STARTED", "RUN_FINISHED"]);
    assert.deepEqual(written, ["a.txt"]);
    const again = await postJson(`${test.url}/ag-ui`, { ...resume, runId: "r3" });
    assert.ok(again.status >= 400 && again.status < 500, `refused: ${again.status}`);
    assert.match(again.headers.get("content-type") ?? "", /^application\/json/);
    const { error } = (await again.json()) as { error: { code: string } };
    assert.equal(error.code, "approval_already_decided");
    assert.deepEqual(written, ["a.txt"]);
  });
});

/** A store whose reads of one session's approvals fail, as a database gone away does. */
class FailingStore extends InMemoryStore {
  override async events(sessionId: string, query?: EventQuery): Promise<MemoryEvent[]> {
    if (sessionId === "ag-store-down" && query?.types?.includes("approval_requested")) throw new AgentLoopError("network", "the store is down");
    return super.events(sessionId, query);
  }
}

describe("an AG-UI resume on the node:http door whose checkpoint cannot be read", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "ag-store-down" }, { memory: new FailingStore(), build: { model: new ScriptedModel(["unused"]) } });
  });
  after(() => test.close());

  it("answers a JSON 503 naming the failure, nothing streamed, and logs the request's method and path", async () => {
    const resume = {
      threadId: "ag-store-down",
      runId: "r2",
      state: {},
      messages: [{ id: "u1", role: "user", content: "write" }],
      tools: [],
      context: [],
      forwardedProps: {},
      resume: [{ interruptId: "call_w", status: "resolved", payload: { approve: true } }],
    };
    // The log lines of this request only (a test may run again in the same process).
    const seen = test.logs.length;
    const refused = await postJson(`${test.url}/ag-ui`, resume);
    assert.equal(refused.status, 503);
    assert.match(refused.headers.get("content-type") ?? "", /^application\/json/);
    assert.deepEqual(((await refused.json()) as { error: { message: string; code: string } }).error, { message: "the store is down", type: "server_error", code: "network", param: null });
    assert.deepEqual(test.logs.slice(seen), ["[ag-store-down] POST /ag-ui failed: network: the store is down"]);
  });
});
