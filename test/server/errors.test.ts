import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { ScriptedModel } from "../../src/index.js";
import { postJson, script, startTestServer, type TestServer } from "./helpers.js";
import { registeredRoutes } from "./registered-routes.js";

interface ErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

async function expectError(response: Response, status: number, code: string, param?: string | null): Promise<ErrorBody> {
  assert.equal(response.status, status);
  const body = (await response.json()) as ErrorBody;
  assert.equal(typeof body.error.message, "string");
  assert.ok(body.error.message.length > 0);
  assert.equal(typeof body.error.type, "string");
  assert.equal(body.error.code, code);
  if (param !== undefined) assert.equal(body.error.param, param);
  return body;
}

describe("bad input gets a 4xx with an OpenAI-style error body", () => {
  let test: TestServer;
  let endpoint: string;
  before(async () => {
    test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("ok") }, { bodyLimitBytes: 2048 });
    endpoint = `${test.url}/v1/chat/completions`;
  });
  after(() => test.close());

  it("rejects invalid JSON", async () => {
    const body = await expectError(await postJson(endpoint, "{not json"), 400, "invalid_json");
    assert.match(body.error.message, /not valid JSON/);
  });
  it("rejects an empty body", async () => {
    await expectError(await postJson(endpoint, ""), 400, "invalid_json");
  });
  it("rejects a body that is not an object", async () => {
    await expectError(await postJson(endpoint, "[1,2]"), 400, "invalid_body");
  });
  it("rejects missing messages", async () => {
    await expectError(await postJson(endpoint, { model: "x" }), 400, "missing_messages", "messages");
  });
  it("rejects empty messages", async () => {
    await expectError(await postJson(endpoint, { messages: [] }), 400, "empty_messages", "messages");
  });
  it("rejects messages of the wrong type", async () => {
    await expectError(await postJson(endpoint, { messages: "hello" }), 400, "invalid_type", "messages");
    await expectError(await postJson(endpoint, { messages: [{ role: "user", content: 42 }] }), 400, "invalid_type", "messages[0].content");
    await expectError(await postJson(endpoint, { messages: [{ role: 7, content: "x" }] }), 400, "invalid_type", "messages[0].role");
    await expectError(await postJson(endpoint, { messages: [{ role: "wizard", content: "x" }] }), 400, "invalid_role", "messages[0].role");
    await expectError(await postJson(endpoint, { messages: [{ role: "user", content: "x" }], stream: "yes" }), 400, "invalid_type", "stream");
    await expectError(await postJson(endpoint, { messages: [{ role: "user", content: "x" }], model: 1 }), 400, "invalid_type", "model");
    await expectError(await postJson(endpoint, { messages: [{ role: "user", content: "x" }], session_id: "bad id with spaces" }), 400, "invalid_session_id", "session_id");
  });
  it("rejects a conversation without a user message", async () => {
    await expectError(await postJson(endpoint, { messages: [{ role: "system", content: "be nice" }] }), 400, "no_user_message", "messages");
  });
  it("rejects an empty user message", async () => {
    await expectError(await postJson(endpoint, { messages: [{ role: "user", content: "   " }] }), 400, "empty_content");
  });
  it("rejects a body over the size limit with 413", async () => {
    await expectError(await postJson(endpoint, { messages: [{ role: "user", content: "x".repeat(5000) }] }), 413, "request_too_large");
    // Sent in chunks, without a content-length: counted as it arrives.
    const body = JSON.stringify({ messages: [{ role: "user", content: "y".repeat(5000) }] });
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let index = 0; index < body.length; index += 1000) controller.enqueue(new TextEncoder().encode(body.slice(index, index + 1000)));
        controller.close();
      },
    });
    const init = { method: "POST", headers: { "content-type": "application/json" }, body: chunked, duplex: "half" } as RequestInit;
    await expectError(await fetch(endpoint, init), 413, "request_too_large");
  });
  it("answers an unknown session's events like KAOS: 200 with no events", async () => {
    const response = await fetch(`${test.url}/memory/events?session_id=never-seen`);
    assert.equal(response.status, 200);
    const body = (await response.json()) as { events: unknown[]; total: number };
    assert.deepEqual([body.events, body.total], [[], 0]);
  });
  it("rejects a bad limit", async () => {
    await expectError(await fetch(`${test.url}/memory/events?limit=-3`), 400, "invalid_limit", "limit");
  });
  it("answers 404 with an error body for an unknown route", async () => {
    await expectError(await fetch(`${test.url}/v2/nothing`), 404, "unknown_route");
  });
  it("surfaces errors through the openai client as APIError with the status", async () => {
    const client = new OpenAI({ baseURL: `${test.url}/v1`, apiKey: "unused", maxRetries: 0 });
    await assert.rejects(client.chat.completions.create({ model: "x", messages: [{ role: "system", content: "only system" }] }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.BadRequestError);
      assert.match(error.message, /user message/);
      return true;
    });
  });
  it("keeps serving after all of that", async () => {
    const response = await postJson(endpoint, { messages: [{ role: "user", content: "hi" }] });
    assert.equal(response.status, 200);
  });
});

describe("bearer auth (AGENT_API_KEY)", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_API_KEY: "s3cret-key", DEBUG_MOCK_RESPONSES: script("authorized answer") });
  });
  after(() => test.close());

  it("leaves health and ready open", async () => {
    assert.equal((await fetch(`${test.url}/health`)).status, 200);
    assert.equal((await fetch(`${test.url}/ready`)).status, 200);
  });
  it("answers 401 without a token, with a wrong token, and with a token of another length", async () => {
    await expectError(await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }] }), 401, "invalid_api_key");
    await expectError(await fetch(`${test.url}/memory/sessions`, { headers: { authorization: "Bearer s3cret-kez" } }), 401, "invalid_api_key");
    await expectError(await fetch(`${test.url}/v1/models`, { headers: { authorization: "Bearer s" } }), 401, "invalid_api_key");
    await expectError(await fetch(`${test.url}/.well-known/agent.json`, { headers: { authorization: "Basic czNjcmV0LWtleQ==" } }), 401, "invalid_api_key");
  });
  it("answers 401 to a POST with a body on the other routes too (node answers it before reading the body)", async () => {
    const denied = await postJson(`${test.url}/a2a`, { jsonrpc: "2.0", id: 1, method: "message/send", params: {} });
    assert.equal(denied.headers.get("www-authenticate"), 'Bearer realm="agentloop"');
    await expectError(denied, 401, "invalid_api_key");
    await expectError(await postJson(`${test.url}/v1/runs`, { input: "hi" }), 401, "invalid_api_key");
  });
  // The guard is shared (a Hono middleware, and node's check before a body): every route the server
  // registers, read from its source, is behind it, over node:http and through AgentServer.fetch.
  // The studio's page and assets are open too: they hold no data (the page asks for the key, and
  // every route it reads is behind the guard); test/studio checks the page's key prompt.
  const OPEN = ["GET /health", "GET /ready", "GET /studio", "GET /studio/", "GET /studio/assets/:name"];
  for (const route of registeredRoutes().filter((each) => !OPEN.includes(each))) {
    it(`${route}: 401 without the token, over node:http and AgentServer.fetch`, async () => {
      const [method, path] = route.split(" ");
      const init = { method, headers: { "content-type": "application/json" }, body: method === "POST" ? JSON.stringify({ session_id: "s", messages: [] }) : undefined };
      const target = path.replace(":run_id", "run_x");
      for (const response of [await fetch(`${test.url}${target}`, init), await test.server.fetch(new Request(`http://agent${target}`, init))]) {
        assert.equal(response.headers.get("www-authenticate"), 'Bearer realm="agentloop"');
        await expectError(response, 401, "invalid_api_key");
      }
    });
  }

  it("accepts the right token (the openai client sends it as its apiKey)", async () => {
    const client = new OpenAI({ baseURL: `${test.url}/v1`, apiKey: "s3cret-key", maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: "x", messages: [{ role: "user", content: "hi" }] });
    assert.equal(completion.choices[0].message.content, "authorized answer");
    const wrong = new OpenAI({ baseURL: `${test.url}/v1`, apiKey: "nope", maxRetries: 0 });
    await assert.rejects(wrong.models.list(), OpenAI.AuthenticationError);
  });
});

describe("a client that disconnects mid-stream", () => {
  it("aborts its run and the log records ABORTED", async () => {
    const model = new ScriptedModel([Array.from({ length: 200 }, (_, index) => `word${index}`).join(" ")], { chunkDelayMs: 10 });
    const test = await startTestServer({}, { build: { model } });
    try {
      const controller = new AbortController();
      const response = await fetch(`${test.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ messages: [{ role: "user", content: "talk a lot" }], stream: true, session_id: "gone" }),
        signal: controller.signal,
      });
      const reader = response.body!.getReader();
      let received = "";
      while (!received.includes("word3")) received += new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      const line = await test.waitForLog(/session gone ABORTED/);
      assert.match(line, /client disconnected/);
      const events = (await (await fetch(`${test.url}/memory/events?session_id=gone`)).json()) as { events: Array<{ event_type: string; content: { state?: string } }> };
      const ended = events.events.find((event) => event.event_type === "run_ended");
      assert.equal(ended?.content.state, "ABORTED");
    } finally {
      await test.close();
    }
  });
});

describe("a client that disconnects before a non-streamed answer", () => {
  it("aborts its run too", async () => {
    const { defineTool } = await import("../../src/index.js");
    let markStarted!: () => void;
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    // A tool that runs until its run is aborted.
    const hold = defineTool({
      name: "hold",
      description: "waits for the abort",
      parameters: { type: "object" },
      execute: (_args, context) =>
        new Promise<string>((resolve) => {
          markStarted();
          context.signal.addEventListener("abort", () => resolve("stopped"));
        }),
    });
    const test = await startTestServer({ DEBUG_MOCK_RESPONSES: script({ tool_calls: [{ id: "h1", name: "hold", arguments: {} }] }, "never") }, { build: { tools: [hold] } });
    try {
      const controller = new AbortController();
      const request = postJson(`${test.url}/v1/chat/completions`, { session_id: "hung-up", messages: [{ role: "user", content: "wait" }] }, {}, controller.signal);
      await started;
      controller.abort();
      await assert.rejects(request);
      assert.match(await test.waitForLog(/session hung-up ABORTED/), /client disconnected/);
    } finally {
      await test.close();
    }
  });
});

describe("store failures", () => {
  it("answers 503 with an error body when the memory store fails", async () => {
    const { InMemoryStore } = await import("../../src/memory/index.js");
    const store = new InMemoryStore();
    const test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("ok") }, { memory: store });
    try {
      await store.close();
      const body = await expectError(await fetch(`${test.url}/memory/sessions`), 503, (await store.listSessions().catch((error) => error.kind)) as string);
      assert.ok(body.error.message.length > 0);
      await test.waitForLog(/GET \/memory\/sessions failed/);
    } finally {
      await test.close();
    }
  });
});

describe("model failures", () => {
  it("answers 502 with an error body when the model fails, never 500", async () => {
    const failing = {
      provider: "test",
      modelId: "broken",
      async *stream() {
        yield { type: "error" as const, error: new (await import("../../src/index.js")).AgentLoopError("server", "upstream exploded", { status: 500 }) };
      },
    };
    const test = await startTestServer({}, { build: { model: failing } });
    try {
      const body = await expectError(await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }] }), 502, "server");
      assert.match(body.error.message, /upstream exploded/);
      const stream = await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }], stream: true });
      assert.equal(stream.status, 200);
      const text = await stream.text();
      assert.match(text, /"error":\{"message":"[^"]*upstream exploded/);
      assert.doesNotMatch(text, /"finish_reason":"(stop|length)"/, "no finish chunk for a failed answer");
      assert.match(text, /data: \[DONE\]\n\n$/);
    } finally {
      await test.close();
    }
  });
});
