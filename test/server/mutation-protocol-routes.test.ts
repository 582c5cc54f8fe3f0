// The UI protocols' routes (src/server/routes/ui-chat.ts, ag-ui.ts, protocol-post.ts) and chat
// completions' answers (routes/chat-completions.ts) at what a client reads first and last: each
// stream's opening event, the message id a UI stream carries, the ids of completions and chunks, a
// route answering only POST, the agent file's client tools clashing with the agent's own, the
// refusal of an invalid output schema through both doors.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ScriptedModel } from "../../src/index.js";
import { type AgentServer, createAgentServer } from "../../src/server/index.js";
import { echoTool, postJson, startTestServer, type TestServer } from "./helpers.js";

/** The SSE data events of a body, parsed (`[DONE]` kept as is). */
const events = (text: string): unknown[] =>
  text
    .split("\n\n")
    .filter((block) => block.startsWith("data: "))
    .map((block) => (block.slice(6) === "[DONE]" ? "[DONE]" : JSON.parse(block.slice(6))));

const uiBody = (id: string, messageId?: string) => ({ id, messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }], trigger: "submit-message", ...(messageId ? { messageId } : {}) });
const agUiBody = (threadId: string) => ({ threadId, runId: "r1", state: {}, messages: [{ id: "u1", role: "user", content: "hi" }], tools: [], context: [], forwardedProps: {} });

describe("the protocol routes' openings and ids", () => {
  let test: TestServer;
  let embedded: AgentServer;
  before(async () => {
    const build = { model: new ScriptedModel(["Hello."]) };
    test = await startTestServer({ AGENT_NAME: "opener" }, { build });
    embedded = await createAgentServer({ env: { AGENT_NAME: "opener" }, build, log: () => undefined });
  });
  after(async () => {
    await test.close();
    await embedded.close({ graceMs: 100 });
  });

  it("/ag-ui opens with RUN_STARTED for the thread and run", async () => {
    const list = events(await (await postJson(`${test.url}/ag-ui`, agUiBody("open-ag"))).text()) as Array<{ type: string; threadId?: string; runId?: string }>;
    assert.deepEqual([list[0].type, list[0].threadId, list[0].runId], ["RUN_STARTED", "open-ag", "r1"]);
    assert.equal(list.at(-1)!.type, "RUN_FINISHED");
  });

  it("/api/chat opens with start carrying a new msg_ id for the answer to a new input", async () => {
    const list = events(await (await postJson(`${test.url}/api/chat`, uiBody("open-ui", "m-given"))).text()) as Array<{ type: string; messageId?: string }>;
    assert.equal(list[0].type, "start");
    assert.match(list[0].messageId ?? "", /^msg_[0-9a-f-]{36}$/);
    assert.equal(list.at(-1), "[DONE]");
  });

  it("a completion's id and its chunks' ids are chatcmpl- ids", async () => {
    const json = (await (await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }] })).json()) as { id: string };
    assert.match(json.id, /^chatcmpl-.+/);
    const chunks = events(await (await postJson(`${test.url}/v1/chat/completions`, { stream: true, messages: [{ role: "user", content: "hi" }] })).text());
    const ids = new Set(chunks.filter((chunk) => chunk !== "[DONE]").map((chunk) => (chunk as { id: string }).id));
    assert.equal(ids.size, 1);
    assert.match([...ids][0], /^chatcmpl-[0-9a-f-]{36}$/);
  });

  it("/ag-ui and /api/chat answer only POST: any other method is an unknown route", async () => {
    for (const path of ["/ag-ui", "/api/chat", "/ag-ui?x=1"]) {
      for (const method of ["GET", "PUT"]) {
        const response = await fetch(`${test.url}${path}`, { method, ...(method === "PUT" ? { body: JSON.stringify(agUiBody("put")), headers: { "content-type": "application/json" } } : {}) });
        assert.equal(response.status, 404, `${method} ${path}`);
        assert.equal(((await response.json()) as { error: { code: string } }).error.code, "unknown_route");
      }
    }
  });

  it("an invalid response_format schema is a 400 naming it through both doors, before any run", async () => {
    const body = { messages: [{ role: "user", content: "hi" }], response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "no-such-type" } } } };
    const overHttp = await postJson(`${test.url}/v1/chat/completions`, body);
    const throughFetch = await embedded.fetch(new Request("http://agent/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
    for (const response of [overHttp, throughFetch]) {
      assert.equal(response.status, 400);
      const { error } = (await response.json()) as { error: { param: string; code: string; message: string } };
      assert.deepEqual([error.param, error.code], ["response_format.json_schema.schema", "invalid_value"]);
      assert.match(error.message, /^response_format\.json_schema\.schema is not a valid JSON Schema: /);
    }
  });
});

describe("the agent file's client tools named like the agent's own", () => {
  let test: TestServer;
  before(async () => {
    const file = { tools: [{ name: "echo", description: "the browser's echo", client: true as const }] };
    test = await startTestServer({ AGENT_NAME: "clash" }, { file, build: { model: new ScriptedModel(["never"]), tools: [echoTool] } });
  });
  after(() => test.close());

  it("/api/chat answers 503 configuration naming the clash, and runs nothing", async () => {
    const response = await postJson(`${test.url}/api/chat`, uiBody("clash"));
    assert.equal(response.status, 503);
    const { error } = (await response.json()) as { error: { type: string; code: string; message: string } };
    assert.deepEqual([error.type, error.code], ["server_error", "configuration"]);
    assert.match(error.message, /^the agent file's .*echo/);
    const stored = (await (await fetch(`${test.url}/memory/events?session_id=clash`)).json()) as { total: number };
    assert.equal(stored.total, 0);
  });
});
