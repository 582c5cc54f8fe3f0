import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { AgentServer } from "../../src/server/index.js";
import { postJson, script, startTestServer, TRICKY, type TestServer, twinServers } from "./helpers.js";

// POST /v1/chat/completions has two implementations: straight on node:http when listening (the hot
// path) and the Hono route behind `AgentServer.fetch`. Both must put the same bytes on the wire.

/** An answer whose deltas need JSON escaping (quotes, backslash, newline, non-ASCII). */
const chatBody = (extra: object = {}) => JSON.stringify({ model: 'm"x\n', messages: [{ role: "user", content: "say it" }], ...extra });

/** The data events of an SSE body, with the per-stream id and timestamp blanked. */
function events(text: string): string[] {
  assert.ok(text.endsWith("data: [DONE]\n\n"), "[DONE] is the last event");
  return text
    .split("\n\n")
    .filter((block) => block !== "")
    .map((block) => {
      assert.ok(block.startsWith("data: "), `an SSE data event: ${block}`);
      return block.slice(6).replace(/"id":"chatcmpl-[^"]+","object":"chat.completion.chunk","created":\d+/, '"id":"ID","object":"chat.completion.chunk","created":0');
    });
}

describe("the node:http hot path and fetch() answer alike", () => {
  let test: TestServer;
  let embedded: AgentServer;
  before(async () => {
    ({ test, embedded } = await twinServers());
  });
  after(async () => {
    await test.close();
    await embedded.close({ graceMs: 100 });
  });

  it("streams byte-identical chunks (JSON-escaped content and model), each one canonical JSON", async () => {
    const overHttp = await postJson(`${test.url}/v1/chat/completions`, chatBody({ stream: true, stream_options: { include_usage: true } }));
    const throughFetch = await embedded.fetch(
      new Request("http://agent/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: chatBody({ stream: true, stream_options: { include_usage: true } }) }),
    );
    for (const response of [overHttp, throughFetch]) {
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("content-type"), "text/event-stream; charset=utf-8");
      // A session the server made: a time-ordered id (a UUID in the version 7 layout).
      assert.match(response.headers.get("x-session-id") ?? "", /^session_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    }
    const http = events(await overHttp.text());
    const fetched = events(await throughFetch.text());
    assert.deepEqual(http, fetched);
    assert.equal(http.pop(), "[DONE]");
    for (const data of http) assert.equal(data, JSON.stringify(JSON.parse(data)), "the text JSON.stringify gives");
    const chunks = http.map((data) => JSON.parse(data) as { model: string; choices: Array<{ delta: { content?: string }; finish_reason: string | null }>; usage?: object });
    assert.ok(chunks.every((chunk) => chunk.model === 'm"x\n'));
    assert.equal(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join(""), TRICKY);
    assert.deepEqual(chunks.at(-1)!.choices, []);
    assert.ok(chunks.at(-1)!.usage);
    assert.equal(chunks.at(-2)!.choices[0].finish_reason, "stop");
  });

  it("answers a non-streamed request alike, with X-Session-ID", async () => {
    const headers = { "content-type": "application/json", "x-session-id": "twin-session" };
    const overHttp = await postJson(`${test.url}/v1/chat/completions?trace=1`, chatBody(), { "x-session-id": "twin-session" });
    const throughFetch = await embedded.fetch(new Request("http://agent/v1/chat/completions", { method: "POST", headers, body: chatBody() }));
    for (const response of [overHttp, throughFetch]) {
      assert.equal(response.status, 200);
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
      assert.equal(response.headers.get("x-session-id"), "twin-session");
      const body = (await response.json()) as { object: string; session_id: string; choices: Array<{ message: { content: string } }> };
      assert.equal(body.object, "chat.completion");
      assert.equal(body.session_id, "twin-session");
      assert.equal(body.choices[0].message.content, TRICKY);
    }
  });

  it("gives the same 4xx answers: 413 over the limit, 400 for bad JSON, 404 for a near-miss path", async () => {
    const big = JSON.stringify({ messages: [{ role: "user", content: "z".repeat(3000) }] });
    const overHttp = await postJson(`${test.url}/v1/chat/completions`, big);
    const throughFetch = await embedded.fetch(new Request("http://agent/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: big }));
    for (const response of [overHttp, throughFetch]) {
      assert.equal(response.status, 413);
      assert.equal(((await response.json()) as { error: { code: string } }).error.code, "request_too_large");
    }
    const bad = await postJson(`${test.url}/v1/chat/completions`, "{nope");
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, "invalid_json");
    const nearMiss = await postJson(`${test.url}/v1/chat/completionsx`, chatBody());
    assert.equal(nearMiss.status, 404);
    assert.equal(((await nearMiss.json()) as { error: { code: string } }).error.code, "unknown_route");
    // Still serving on the hot path after all of that.
    assert.equal((await postJson(`${test.url}/v1/chat/completions`, chatBody())).status, 200);
  });
});

describe("the hot path keeps bearer auth", () => {
  it("answers 401 with WWW-Authenticate without the right key, and serves the right one", async () => {
    const test = await startTestServer({ AGENT_API_KEY: "k3y", DEBUG_MOCK_RESPONSES: script("fine") });
    try {
      const denied = await postJson(`${test.url}/v1/chat/completions`, chatBody(), { authorization: "Bearer wrong" });
      assert.equal(denied.status, 401);
      assert.equal(denied.headers.get("www-authenticate"), 'Bearer realm="agentloop"');
      assert.equal(((await denied.json()) as { error: { code: string } }).error.code, "invalid_api_key");
      const allowed = await postJson(`${test.url}/v1/chat/completions`, chatBody(), { authorization: "Bearer k3y" });
      assert.equal(allowed.status, 200);
      await allowed.body?.cancel();
    } finally {
      await test.close();
    }
  });
});
