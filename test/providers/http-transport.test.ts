// The Chat Completions adapter's direct HTTP path (src/providers/http.ts) against real servers on
// 127.0.0.1: keep-alive sockets, headers, compressed bodies, a JSON answer to a stream request,
// timeouts while the body is still coming, non-JSON error bodies, a custom fetch.
import assert from "node:assert/strict";
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import { getEventListeners } from "node:events";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import type { AgentLoopError } from "../../src/errors.js";
import type { Model, ModelEvent } from "../../src/model/model.js";
import { openaiChat } from "../../src/providers/openai/index.js";
import { chatBody, chatFrames } from "./wire-scripts.js";

interface RawServer {
  url: string;
  connections: number;
  requests: Array<{ headers: IncomingMessage["headers"]; body: any }>;
  close(): Promise<void>;
}

/** A node:http server that counts TCP connections and answers every request with `answer`. */
async function rawServer(answer: (request: IncomingMessage, response: ServerResponse, index: number) => void): Promise<RawServer> {
  const state: RawServer = { url: "", connections: 0, requests: [], close: async () => undefined };
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    state.requests.push({ headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
    answer(request, response, state.requests.length - 1);
  });
  server.on("connection", () => state.connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

async function withRawServer(answer: Parameters<typeof rawServer>[0], body: (server: RawServer) => Promise<void>): Promise<void> {
  const server = await rawServer(answer);
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

async function collect(model: Model): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of model.stream({ messages: [{ role: "user", content: "hi" }] })) events.push(event);
  return events;
}

/** Resolves once `condition` holds (checked on each turn of the event loop). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

const text = (events: ModelEvent[]) => events.map((event) => (event.type === "text-delta" ? event.delta : "")).join("");
const last = (events: ModelEvent[]) => events[events.length - 1];
const errorOf = (events: ModelEvent[]) => {
  const event = last(events);
  assert.equal(event.type, "error", `expected an error event last, got ${JSON.stringify(event)}`);
  return (event as { error: AgentLoopError }).error;
};

const streamFrames = (response: ServerResponse, frames: readonly string[]) => {
  response.writeHead(200, { "content-type": "text/event-stream" });
  response.end(frames.join(""));
};

describe("openai chat: the direct HTTP path", () => {
  test("consecutive calls reuse one keep-alive connection (streaming and JSON)", async () => {
    await withRawServer((_request, response, index) => {
      if (index < 3) return streamFrames(response, chatFrames({ text: `answer ${index}` }));
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(chatBody({ text: `answer ${index}` })));
    }, async (server) => {
      const streaming = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" });
      const json = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", stream: false });
      for (let index = 0; index < 3; index++) assert.equal(text(await collect(streaming)), `answer ${index}`);
      for (let index = 3; index < 6; index++) assert.equal(text(await collect(json)), `answer ${index}`);
      assert.equal(server.requests.length, 6);
      assert.equal(server.connections, 1, "all six calls on one socket");
    });
  });

  test("headers: bearer key, event-stream accept, organization and project from env, caller headers win case-insensitively", async () => {
    await withRawServer((_request, response) => streamFrames(response, chatFrames({ text: "ok" })), async (server) => {
      const env = { OPENAI_ORG_ID: "org-1", OPENAI_PROJECT_ID: "proj-1" };
      await collect(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "sk-test", env }));
      await collect(openaiChat("m", { baseURL: `${server.url}/v1/`, apiKey: "sk-test", headers: { Authorization: "Token custom", "X-Extra": "1" } }));
      const [first, second] = server.requests.map((request) => request.headers);
      assert.equal(first.authorization, "Bearer sk-test");
      assert.equal(first.accept, "text/event-stream");
      assert.equal(first["content-type"], "application/json");
      assert.equal(first["openai-organization"], "org-1");
      assert.equal(first["openai-project"], "proj-1");
      assert.equal(second.authorization, "Token custom", "one authorization header, the caller's");
      assert.equal(second["x-extra"], "1");
      assert.equal(second["openai-organization"], undefined);
      assert.equal(server.requests[1].body.stream, true);
    });
  });

  test("a gzip-compressed stream is decompressed", async () => {
    await withRawServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream", "content-encoding": "gzip" });
      response.end(gzipSync(chatFrames({ text: "compressed but fine" }).join("")));
    }, async (server) => {
      const events = await collect(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" }));
      assert.equal(text(events), "compressed but fine");
      assert.equal(last(events).type, "finish");
    });
  });

  test("a server that answers a stream request with a JSON body gives the same events", async () => {
    await withRawServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/json; charset=utf-8" });
      response.end(JSON.stringify(chatBody({ text: "not streamed", toolCalls: [{ id: "call_1", name: "lookup", arguments: { q: 1 } }] })));
    }, async (server) => {
      const events = await collect(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" }));
      assert.equal(text(events), "not streamed");
      const end = events.find((event) => event.type === "tool-call-end");
      assert.deepEqual(end, { type: "tool-call-end", id: "call_1", name: "lookup", arguments: '{"q":1}' });
      assert.equal(last(events).type, "finish");
    });
  });

  test("timeoutMs covers a JSON body that starts but never finishes", async () => {
    await withRawServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.write('{"id":"chatcmpl-1","choices":[');
    }, async (server) => {
      const started = Date.now();
      const events = await collect(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", stream: false, timeoutMs: 150, retry: { maxRetries: 0 } }));
      const error = errorOf(events);
      assert.equal(error.kind, "timeout");
      assert.match(error.message, /timed out/);
      assert.ok(Date.now() - started < 2000);
    });
  });

  test("a streamed answer may take longer than timeoutMs once it has started", async (t) => {
    const frames = chatFrames({ text: "slow but steady words" });
    let sendRest: () => void = () => undefined;
    await withRawServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write(frames[0] + frames[1]); // the role, then the first words
      sendRest = () => response.end(frames.slice(2).join(""));
    }, async (server) => {
      // The clock is the test's: no wall-clock race, however loaded the machine.
      t.mock.timers.enable({ apis: ["setTimeout"] });
      const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", timeoutMs: 100, retry: { maxRetries: 0 } });
      const iterator = model.stream({ messages: [{ role: "user", content: "hi" }] })[Symbol.asyncIterator]();
      const events: ModelEvent[] = [];
      while (!events.some((event) => event.type === "text-delta")) events.push((await iterator.next()).value as ModelEvent);
      // The answer has started: a timeout still armed would cancel the request now.
      t.mock.timers.tick(60_000);
      sendRest();
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) events.push(next.value);
      assert.equal(text(events), "slow but steady words");
      assert.equal(last(events).type, "finish");
    });
  });

  test("a non-JSON error body (a proxy's 502 page) is a retryable server error quoting the body", async () => {
    await withRawServer((_request, response, index) => {
      if (index === 0) {
        response.writeHead(502, { "content-type": "text/html" });
        response.end("<html>Bad Gateway</html>");
      } else streamFrames(response, chatFrames({ text: "second try" }));
    }, async (server) => {
      const retries: string[] = [];
      const events = await collect(
        openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", retry: { initialDelayMs: 5, onRetry: ({ error }) => retries.push(`${error.kind} ${error.status} ${error.message}`) } }),
      );
      assert.equal(text(events), "second try");
      assert.equal(retries.length, 1);
      assert.match(retries[0], /^server 502 .*Bad Gateway/);
    });
  });

  test("a JSON body cut off by the server is a retryable network error", async () => {
    await withRawServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/json", "content-length": "500" });
      response.write('{"id":"chatcmpl-1","choices":[', () => response.socket?.destroy());
    }, async (server) => {
      const error = errorOf(await collect(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", stream: false, retry: { maxRetries: 0 } })));
      assert.equal(error.kind, "network");
      assert.equal(error.retryable, true);
    });
  });

  test("an abort while a JSON body is coming ends the call as aborted, and leaves no listener on the signal", async () => {
    const controller = new AbortController();
    await withRawServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.write('{"id":"chatcmpl-1","choices":[', () => controller.abort("stop"));
    }, async (server) => {
      const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", stream: false, retry: { maxRetries: 0 } });
      const events: ModelEvent[] = [];
      for await (const event of model.stream({ messages: [{ role: "user", content: "hi" }], signal: controller.signal })) events.push(event);
      assert.equal(errorOf(events).kind, "aborted");
      assert.equal(getEventListeners(controller.signal, "abort").length, 0);
    });
  });

  test("JSON calls in flight together with one timeoutMs: each times out on its own deadline, an answered one not at all", async () => {
    await withRawServer((_request, response, index) => {
      if (index !== 1) return; // the first and third requests never get an answer
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(chatBody({ text: "in time" })));
    }, async (server) => {
      const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", stream: false, timeoutMs: 150, retry: { maxRetries: 0 } });
      const timed = async () => {
        const started = Date.now();
        const events = await collect(model);
        return { events, took: Date.now() - started };
      };
      const first = timed();
      await until(() => server.requests.length === 1);
      const second = timed();
      await until(() => server.requests.length === 2);
      const third = timed();
      const [a, b, c] = await Promise.all([first, second, third]);
      assert.equal(text(b.events), "in time");
      for (const { events, took } of [a, c]) {
        assert.equal(errorOf(events).kind, "timeout");
        assert.ok(took >= 145, `timed out after ${took} ms, before its 150 ms`);
      }
    });
  });

  test("timeoutMs follows the clock setTimeout runs on: a test's fake clock, then the real one again", { timeout: 10_000 }, async (t) => {
    let arrived = 0;
    await withRawServer(() => {
      arrived++; // no request gets an answer
    }, async (server) => {
      const options = { baseURL: `${server.url}/v1`, apiKey: "k", stream: false, timeoutMs: 120, retry: { maxRetries: 0 } } as const;
      t.mock.timers.enable({ apis: ["setTimeout"] });
      const faked = collect(openaiChat("m", options));
      await until(() => arrived === 1);
      t.mock.timers.tick(120);
      assert.equal(errorOf(await faked).kind, "timeout");
      // A call started under the fake clock and never ticked must not hold up the real clock's calls.
      const stuck = collect(openaiChat("m", options));
      await until(() => arrived === 2);
      t.mock.timers.reset();
      const real = await collect(openaiChat("m", options));
      assert.equal(errorOf(real).kind, "timeout");
      assert.equal(errorOf(await stuck).kind, "timeout");
    });
  });

  test("fetch: a caller's fetch carries every request", async () => {
    await withRawServer((_request, response) => streamFrames(response, chatFrames({ text: "via fetch" })), async (server) => {
      const urls: string[] = [];
      const countingFetch: typeof fetch = (input, init) => {
        urls.push(String(input));
        return fetch(input, init);
      };
      const events = await collect(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", fetch: countingFetch }));
      assert.equal(text(events), "via fetch");
      assert.deepEqual(urls, [`${server.url}/v1/chat/completions`]);
    });
  });

  test("fetch: a 401 still names the variable, and a timeout is a timeout", async () => {
    await withRawServer((_request, response, index) => {
      if (index === 0) {
        response.writeHead(401, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } }));
      }
      // the second request never gets an answer
    }, async (server) => {
      const unauthorized = errorOf(await collect(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", fetch })));
      assert.equal(unauthorized.kind, "authentication");
      assert.match(unauthorized.message, /OPENAI_API_KEY/);
      const timedOut = errorOf(await collect(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", fetch, timeoutMs: 100, retry: { maxRetries: 0 } })));
      assert.equal(timedOut.kind, "timeout");
    });
  });
});
