// Time limits on model calls against real loopback servers that stall: before the headers, after
// the headers, and mid-stream, on every wire format (Chat Completions direct and through a caller's
// `openai` client, Responses, Anthropic Messages, Gemini). A stalled call ends with a `timeout` error within
// its limit, is retried by the retry policy, and its connection is closed.
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { describe, test } from "node:test";
import OpenAI from "openai";
import type { AgentLoopError } from "../../src/errors.js";
import { Agent } from "../../src/loop/agent.js";
import type { Model, ModelEvent, ModelOptions } from "../../src/model/model.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { google } from "../../src/providers/google/index.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import type { CallLimits } from "../../src/providers/shared.js";
import { type Responder, type TestServer, sse, startServer } from "./fixture-server.js";
import { anthropicFrames, chatFrames, geminiFrames, responsesFrames } from "./wire-scripts.js";

const fastRetry = { initialDelayMs: 5, maxDelayMs: 10 };

interface Wire {
  name: string;
  frames: string[];
  slowFrames: (turn: { text: string }) => string[];
  model(server: TestServer, options: CallLimits & { retry?: { maxRetries?: number } }): Model;
}

const turn = { text: "one two three four five six" };
const wires: Wire[] = [
  {
    name: "Chat Completions (direct)",
    frames: chatFrames(turn),
    slowFrames: (turn) => chatFrames(turn),
    model: (server, options) => openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", ...options, retry: { ...fastRetry, ...options.retry } }),
  },
  {
    name: "Chat Completions (caller's openai client)",
    frames: chatFrames(turn),
    slowFrames: (turn) => chatFrames(turn),
    model: (server, options) =>
      openaiChat("m", { client: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "k", maxRetries: 0 }), ...options, retry: { ...fastRetry, ...options.retry } }),
  },
  {
    name: "Responses",
    frames: responsesFrames(turn),
    slowFrames: (turn) => responsesFrames(turn),
    model: (server, options) => openaiResponses("m", { baseURL: `${server.url}/v1`, apiKey: "k", ...options, retry: { ...fastRetry, ...options.retry } }),
  },
  {
    name: "Anthropic Messages",
    frames: anthropicFrames(turn),
    slowFrames: (turn) => anthropicFrames(turn),
    model: (server, options) => anthropic("m", { baseURL: server.url, apiKey: "k", ...options, retry: { ...fastRetry, ...options.retry } }),
  },
  {
    name: "Gemini",
    frames: geminiFrames(turn),
    slowFrames: (turn) => geminiFrames(turn),
    model: (server, options) => google("m", { baseURL: server.url, apiKey: "k", ...options, retry: { ...fastRetry, ...options.retry } }),
  },
];

/** A responder that never answers; `closed` counts the connections the client gave up. */
function stalls(where: "before-headers" | "after-headers" | { after: string[] }, closed: { count: number }): Responder {
  return (_request, response: ServerResponse) =>
    new Promise<void>((resolve) => {
      const onClose = () => {
        closed.count++;
        resolve();
      };
      // Under load the client may give up while the server still reads the request body.
      if (!response.socket || response.socket.destroyed) return onClose();
      response.on("close", onClose);
      if (where === "before-headers") return;
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.flushHeaders();
      if (where !== "after-headers") for (const frame of where.after) response.write(frame);
    });
}

async function collect(model: Model, options?: ModelOptions): Promise<{ events: ModelEvent[]; ms: number }> {
  const started = performance.now();
  const events: ModelEvent[] = [];
  for await (const event of model.stream({ messages: [{ role: "user", content: "hi" }], options })) events.push(event);
  return { events, ms: performance.now() - started };
}

function lastError(events: ModelEvent[]): AgentLoopError {
  const last = events.at(-1);
  assert.equal(last?.type, "error", `expected an error last, got ${JSON.stringify(last)}`);
  return (last as { error: AgentLoopError }).error;
}

const text = (events: ModelEvent[]) => events.map((event) => (event.type === "text-delta" ? event.delta : "")).join("");

async function withServer(script: Responder[], body: (server: TestServer) => Promise<void>): Promise<void> {
  const server = await startServer(script);
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

/** Waits until `check` holds (the server sees a close a moment after the client gives up). */
async function eventually(check: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!check() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(check(), what);
}

for (const wire of wires) {
  describe(`time limits: ${wire.name}`, () => {
    test("a server that never sends headers: timeout after firstByteTimeoutMs, connection closed", async () => {
      const closed = { count: 0 };
      await withServer([stalls("before-headers", closed)], async (server) => {
        const { events, ms } = await collect(wire.model(server, { firstByteTimeoutMs: 400, retry: { maxRetries: 0 } }));
        const error = lastError(events);
        assert.equal(error.kind, "timeout");
        assert.equal(error.retryable, true);
        assert.match(error.message, /no response within 400 ms \(firstByteTimeoutMs\)/);
        assert.ok(ms >= 390 && ms < 10_000, `ended after ${Math.round(ms)} ms`);
        // (Under heavy load an SDK may not even have sent the request within the limit.)
        await eventually(() => closed.count === server.requests.length, "the stalled request's connection was closed");
      });
    });

    test("headers but no chunk counts as no first byte; retried, then the second attempt answers", async () => {
      const closed = { count: 0 };
      await withServer([stalls("after-headers", closed), sse(wire.frames)], async (server) => {
        const { events } = await collect(wire.model(server, { firstByteTimeoutMs: 500 }));
        assert.equal(events.at(-1)?.type, "finish", JSON.stringify(events.at(-1)));
        assert.equal(text(events), turn.text);
        assert.equal(server.requests.length, 2);
        await eventually(() => closed.count === 1, "the stalled attempt's connection was closed");
      });
    });

    test("a stream that stalls mid-way: timeout after idleTimeoutMs, what came before is kept", async () => {
      const closed = { count: 0 };
      // Enough frames that text reached the caller: the failure is not retried after that.
      const partial = wire.frames.slice(0, Math.ceil(wire.frames.length / 2));
      await withServer([stalls({ after: partial }, closed)], async (server) => {
        const { events, ms } = await collect(wire.model(server, { idleTimeoutMs: 200 }));
        const error = lastError(events);
        assert.equal(error.kind, "timeout");
        assert.match(error.message, /stalled: no data for 200 ms \(idleTimeoutMs\)/);
        assert.ok(text(events).length > 0, "the text before the stall reached the caller");
        assert.ok(ms >= 190 && ms < 10_000, `ended after ${Math.round(ms)} ms`);
        assert.equal(server.requests.length, 1, "not retried once text was delivered");
        await eventually(() => closed.count === 1, "the stalled stream's connection was closed");
      });
    });

    test("a slow but steady stream is not an idle timeout, even when it lasts longer than the limit", async () => {
      // 16 words 80 ms apart: longer in all than the idle limit, never idle for 1 s (generous on a busy machine).
      const long = { text: Array.from({ length: 16 }, (_, index) => `word${index}`).join(" ") };
      await withServer([sse(wire.slowFrames(long), { delayMs: 80 })], async (server) => {
        const { events, ms } = await collect(wire.model(server, { idleTimeoutMs: 1_000, firstByteTimeoutMs: 10_000, retry: { maxRetries: 0 } }));
        assert.equal(events.at(-1)?.type, "finish", JSON.stringify(events.at(-1)));
        assert.ok(ms > 1_000, `the stream took ${Math.round(ms)} ms, longer than either limit`);
      });
    });
  });
}

describe("time limits: configuration", () => {
  test("a request's options win over the adapter's, and 0 turns a limit off", async () => {
    const closed = { count: 0 };
    await withServer([stalls("before-headers", closed)], async (server) => {
      const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", firstByteTimeoutMs: 0, retry: { maxRetries: 0 } });
      const { events } = await collect(model, { firstByteTimeoutMs: 100 });
      assert.match(lastError(events).message, /within 100 ms/);
    });
    // Off: the call is still waiting when the caller gives up.
    await withServer([stalls("after-headers", closed)], async (server) => {
      const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", firstByteTimeoutMs: 0, idleTimeoutMs: 0, retry: { maxRetries: 0 } });
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 300);
      const events: ModelEvent[] = [];
      for await (const event of model.stream({ messages: [{ role: "user", content: "hi" }], signal: controller.signal })) events.push(event);
      clearTimeout(timer);
      assert.equal(lastError(events).kind, "aborted");
    });
  });

  test("every attempt gets the limit: two retries of a stalled server end within 3 limits plus backoff", async () => {
    const closed = { count: 0 };
    await withServer([stalls("before-headers", closed), stalls("before-headers", closed), stalls("before-headers", closed)], async (server) => {
      const { events, ms } = await collect(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", firstByteTimeoutMs: 100, retry: { ...fastRetry, maxRetries: 2 } }));
      assert.equal(lastError(events).kind, "timeout");
      assert.ok(ms >= 290 && ms < 10_000, `ended after ${Math.round(ms)} ms`);
      // The server (in this process) may read the last attempt only after the client gave up on it.
      await eventually(() => server.requests.length === 3, "three attempts reached the server");
      await eventually(() => closed.count === 3, "every stalled attempt's connection was closed");
    });
  });

  test("an Agent run on a stalled model ends FAILED with kind timeout; modelOptions set the limits per agent", async () => {
    const closed = { count: 0 };
    await withServer([stalls({ after: chatFrames(turn).slice(0, 3) }, closed)], async (server) => {
      const agent = new Agent({
        model: openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", retry: { maxRetries: 0 } }),
        modelOptions: { idleTimeoutMs: 150 },
      });
      const started = performance.now();
      const result = await agent.run("hello");
      assert.equal(result.state, "FAILED");
      assert.equal(result.error?.kind, "timeout");
      assert.ok(performance.now() - started < 10_000);
    });
  });
});
