// The checks in front of every route (src/server/routes/guards.ts), at their edges: what a bearer
// header must look like to pass, and what a server that is draining answers while a run finishes.
import assert from "node:assert/strict";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import { defineTool, ScriptedModel } from "../../src/index.js";
import { postJson, script, startTestServer, type TestServer } from "./helpers.js";

describe("bearer auth at its edges", () => {
  let test: TestServer;
  let model: ScriptedModel;
  before(async () => {
    model = new ScriptedModel(["ok"]);
    test = await startTestServer({ AGENT_API_KEY: "s3cret-key" }, { build: { model } });
  });
  after(() => test.close());

  const models = (authorization: string) => fetch(`${test.url}/v1/models`, { headers: { authorization } });

  it("takes the scheme in any case and any whitespace after it", async () => {
    for (const header of ["Bearer s3cret-key", "bearer s3cret-key", "BEARER s3cret-key", "Bearer   s3cret-key", "Bearer\ts3cret-key"]) {
      assert.equal((await models(header)).status, 200, header);
    }
  });

  it("refuses a header that only contains the token, a scheme not at the start, or a token with more after it", async () => {
    for (const header of ["s3cret-key", "Token Bearer s3cret-key", "xBearer s3cret-key", "Bearers3cret-key", "Bearer s3cret-key extra", "Bearer ", "Bearer"]) {
      const response = await models(header);
      assert.equal(response.status, 401, header);
      assert.equal(response.headers.get("www-authenticate"), 'Bearer realm="agentloop"');
      const body = (await response.json()) as { error: { type: string; code: string; message: string } };
      assert.deepEqual([body.error.type, body.error.code], ["authentication_error", "invalid_api_key"]);
      assert.match(body.error.message, /Authorization: Bearer <AGENT_API_KEY>/);
    }
  });

  it("a refused chat runs nothing: over node:http the 401 is the whole answer", async () => {
    const response = await postJson(`${test.url}/v1/chat/completions`, { session_id: "sneaky", messages: [{ role: "user", content: "hi" }] }, { authorization: "Bearer wrong" });
    assert.equal(response.status, 401);
    assert.equal(((await response.json()) as { error: { code: string } }).error.code, "invalid_api_key");
    assert.equal(model.requests.length, 0, "the model was never asked");
    const events = await fetch(`${test.url}/v1/sessions/sneaky/events`, { headers: { authorization: "Bearer s3cret-key" } });
    assert.deepEqual(((await events.json()) as { events: unknown[] }).events, []);
  });
});

describe("a body declared over the limit", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ DEBUG_MOCK_RESPONSES: script("ok") }, { bodyLimitBytes: 1024 });
  });
  after(() => test.close());

  for (const path of ["/v1/chat/completions", "/v1/approvals"]) {
    it(`${path}: 413 as soon as the headers declare it, before any of the body is sent`, { timeout: 15_000 }, async () => {
      const socket = connect(Number(new URL(test.url).port), "127.0.0.1");
      let received = "";
      socket.setEncoding("utf8");
      const answered = new Promise<void>((resolve, reject) => {
        socket.on("data", (text: string) => {
          received += text;
          if (received.includes("\r\n\r\n") && received.includes("}")) resolve();
        });
        socket.on("error", reject);
        socket.on("close", () => reject(new Error(`closed before an answer: ${received}`)));
      });
      socket.write(`POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1025\r\n\r\n`);
      try {
        await answered;
        assert.match(received, /^HTTP\/1\.1 413 /);
        assert.match(received, /"code":"request_too_large"/);
        assert.match(received, /larger than 1024 bytes/);
      } finally {
        socket.destroy();
      }
    });
  }
});

describe("a server that is draining", () => {
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let entered: () => void = () => undefined;
  const running = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const hold = defineTool({
    name: "hold",
    description: "Waits until the test lets it go",
    parameters: { type: "object" },
    execute: async () => {
      entered();
      await held;
      return "released";
    },
  });

  it("answers every route but /health with 503 shutting_down and Connection: close, until the run in flight ends", async () => {
    const model = new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "h1", name: "hold", arguments: {} }] }), "finished after the drain"]);
    const test = await startTestServer({ AGENT_NAME: "drainer" }, { build: { model, tools: [hold] } });
    const answer = postJson(`${test.url}/v1/chat/completions`, { session_id: "drain-1", messages: [{ role: "user", content: "go" }] });
    await running;
    const closed = test.server.close({ graceMs: 10_000 });
    try {
      for (const [method, path] of [
        ["GET", "/v1/models"],
        ["GET", "/ready"],
        ["GET", "/memory/sessions"],
        ["POST", "/v1/chat/completions"],
      ]) {
        const init = method === "POST" ? { method, headers: { "content-type": "application/json" }, body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }) } : { method };
        const response = await test.server.fetch(new Request(`http://agent${path}`, init));
        assert.equal(response.status, 503, path);
        assert.equal(response.headers.get("connection"), "close", path);
        const body = (await response.json()) as { error: { code: string; message: string } };
        assert.equal(body.error.code, "shutting_down", path);
        assert.match(body.error.message, /shutting down/);
      }
      const health = await test.server.fetch(new Request("http://agent/health"));
      assert.equal(health.status, 200);
      assert.equal(((await health.json()) as { status: string }).status, "healthy");
    } finally {
      release();
    }
    const completion = (await (await answer).json()) as { choices: Array<{ message: { content: string } }> };
    assert.equal(completion.choices[0].message.content, "finished after the drain");
    await closed;
  });
});

describe("a server that is draining, on node:http", () => {
  it("answers a request arriving on a kept-alive connection with 503 shutting_down and closes it", async () => {
    const gates: Array<() => void> = [];
    let entered: () => void = () => undefined;
    const hold = defineTool({
      name: "hold",
      description: "Waits until the test lets it go",
      parameters: { type: "object" },
      execute: () =>
        new Promise<string>((resolve) => {
          gates.push(() => resolve("released"));
          entered();
        }),
    });
    const call = JSON.stringify({ tool_calls: [{ id: "h1", name: "hold", arguments: {} }] });
    const model = new ScriptedModel([call, "answered"]);
    const test = await startTestServer({ AGENT_NAME: "drainer" }, { build: { model, tools: [hold] } });
    const { port } = new URL(test.url);
    const body = (session: string) => JSON.stringify({ session_id: session, messages: [{ role: "user", content: "go" }] });
    const requestText = (session: string) =>
      `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body(session))}\r\n\r\n${body(session)}`;
    // One run holds the server open while it drains; the other ends, and its connection stays open for one more request.
    let running = new Promise<void>((resolve) => (entered = resolve));
    const first = postJson(`${test.url}/v1/chat/completions`, JSON.parse(body("a")));
    await running;
    running = new Promise<void>((resolve) => (entered = resolve));
    const socket = connect(Number(port), "127.0.0.1");
    let received = "";
    let closedSocket = false;
    const closed = new Promise<void>((resolve) =>
      socket.on("close", () => {
        closedSocket = true;
        resolve();
      }),
    );
    const waitFor = (pattern: RegExp) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (pattern.test(received)) resolve();
          else if (closedSocket) reject(new Error(`the connection closed; received:\n${received}`));
          else setImmediate(check);
        };
        check();
      });
    socket.setEncoding("utf8");
    socket.on("data", (text: string) => (received += text));
    socket.write(requestText("b"));
    await running;
    const closing = test.server.close({ graceMs: 10_000 });
    try {
      gates[1]();
      await waitFor(/"answered"[\s\S]*$/);
      assert.match(received, /^HTTP\/1\.1 200 /);
      received = "";
      socket.write(requestText("c"));
      await closed;
      assert.match(received, /^HTTP\/1\.1 503 /);
      assert.match(received, /\r\nconnection: close\r\n/i);
      assert.match(received, /"code":"shutting_down"/);
    } finally {
      socket.destroy();
      gates[0]();
    }
    assert.equal((await first).status, 200);
    await closing;
  });
});
