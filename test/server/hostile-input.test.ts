// Issue 12, failures 3, 6 and 7: hostile text, session ids and nesting, through the wire.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { InMemoryStore } from "../../src/memory/index.js";
import { postJson, startTestServer, type TestServer } from "./helpers.js";

/** An A2A 0.3 `message/send` (what a client sends without an `A2A-Version` header). */
const a2aSend = (contextId: unknown, text = "hi", metadata?: unknown) => ({
  jsonrpc: "2.0",
  id: 7,
  method: "message/send",
  params: { message: { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text }], contextId, ...(metadata === undefined ? {} : { metadata }) } },
});

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

describe("hostile input on the wire", () => {
  let test: TestServer;
  const store = new InMemoryStore();
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "hostile", DEBUG_MOCK_RESPONSES: JSON.stringify(Array(20).fill("ok \ud800 answer")) }, { memory: store });
  });
  after(() => test.close());

  it("stores a user message and an answer with a lone surrogate (as U+FFFD) and serves them through /memory/events", async () => {
    const response = await postJson(`${test.url}/v1/chat/completions`, `{"messages":[{"role":"user","content":"bad \\ud800 text"}],"session_id":"surrogate-1"}`);
    assert.equal(response.status, 200);
    const events = (await (await fetch(`${test.url}/memory/events?session_id=surrogate-1`)).json()) as { events: Array<{ event_type: string; content: unknown }> };
    assert.deepEqual(
      events.events.map((event) => [event.event_type, event.content]).filter(([type]) => type === "user_message" || type === "agent_response"),
      [
        ["user_message", "bad \uFFFD text"],
        ["agent_response", "ok \uFFFD answer"],
      ],
    );
  });

  // Hostile session ids on every route that takes one: hostile-ids.test.ts.

  it("refuses ../../etc/passwd as an A2A contextId with a 400 naming it, and runs nothing", async () => {
    const before = (await store.listSessions()).length;
    const response = await postJson(`${test.url}/a2a`, a2aSend("../../etc/passwd"));
    assert.equal(response.status, 400);
    const body = (await response.json()) as { id: number; error: { code: number; message: string; data: { param: string; code: string } } };
    assert.equal(body.id, 7);
    assert.equal(body.error.code, -32602);
    assert.match(body.error.message, /params\.message\.contextId must be 1-200 characters/);
    assert.equal(body.error.data.code, "invalid_session_id");
    assert.equal((await store.listSessions()).length, before);
    // A valid contextId is a session readable through /memory/events.
    const ok = await postJson(`${test.url}/a2a`, a2aSend("ctx-ok"));
    assert.equal(ok.status, 200);
    assert.equal(((await ok.json()) as { result: { contextId: string } }).result.contextId, "ctx-ok");
    assert.equal((await fetch(`${test.url}/memory/events?session_id=ctx-ok`)).status, 200);
  });

  it("answers JSON nested 100,000 deep with a 400 naming the depth limit (chat and A2A, body and metadata)", async () => {
    const chat = await postJson(`${test.url}/v1/chat/completions`, `{"messages":[{"role":"user","content":"hi"}],"x":${nested(100_000)}}`);
    assert.equal(chat.status, 400);
    const chatBody = (await chat.json()) as { error: { code: string; message: string } };
    assert.equal(chatBody.error.code, "json_too_deep");
    assert.match(chatBody.error.message, /deeper than 64 levels/);

    const a2a = await postJson(`${test.url}/a2a`, nested(100_000));
    assert.equal(a2a.status, 400);
    assert.match(((await a2a.json()) as { error: { message: string } }).error.message, /deeper than 64 levels/);

    const metadata = JSON.stringify(a2aSend("ctx-deep")).replace('"contextId"', `"metadata":{"deep":${nested(100_000)}},"contextId"`);
    const deepMetadata = await postJson(`${test.url}/a2a`, metadata);
    assert.equal(deepMetadata.status, 400);
    const deepBody = (await deepMetadata.json()) as { error: { code: number; message: string } };
    assert.equal(deepBody.error.code, -32600);
    assert.doesNotMatch(deepBody.error.message, /call stack/);

    // Brackets inside strings do not count, and ordinary nesting is accepted.
    const fine = await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "[".repeat(1000) }], metadata: JSON.parse(nested(60)) });
    assert.equal(fine.status, 200);
  });
});
