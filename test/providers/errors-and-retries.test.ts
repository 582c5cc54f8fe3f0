// Errors and retries against a local server: 429 with Retry-After, 500, 401, a stream cut
// mid-way, malformed SSE, errors inside a stream, refusals, timeouts, unreachable servers.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { describe, test } from "node:test";
import type { AgentLoopError } from "../../src/errors.js";
import { Agent } from "../../src/loop/agent.js";
import type { Model, ModelEvent } from "../../src/model/model.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { toAgentLoopError } from "../../src/providers/errors.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import { retryDelayMs, withRetry } from "../../src/providers/retry.js";
import { type Responder, type TestServer, json, sse, startServer } from "./fixture-server.js";
import { anthropicFrames, chatFrames, responsesFrames } from "./wire-scripts.js";

async function collect(model: Model, signal?: AbortSignal): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of model.stream({ messages: [{ role: "user", content: "hi" }], signal })) events.push(event);
  return events;
}

function terminalError(events: ModelEvent[]): AgentLoopError {
  const last = events[events.length - 1];
  assert.equal(last?.type, "error", `expected an error event last, got ${JSON.stringify(last)}`);
  return (last as { error: AgentLoopError }).error;
}

const text = (events: ModelEvent[]) => events.map((event) => (event.type === "text-delta" ? event.delta : "")).join("");

async function withServer<T>(script: Responder[], body: (server: TestServer) => Promise<T>): Promise<T> {
  const server = await startServer(script);
  try {
    return await body(server);
  } finally {
    await server.close();
  }
}

const fastRetry = { initialDelayMs: 5, maxDelayMs: 20 };
const chat = (server: TestServer, retry = {}) => openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", retry: { ...fastRetry, ...retry } });
const claude = (server: TestServer, retry = {}) => anthropic("m", { baseURL: server.url, apiKey: "k", retry: { ...fastRetry, ...retry } });
const rateLimited = { error: { message: "Rate limit reached", type: "rate_limit_error" } };

describe("retries", () => {
  test("429 with Retry-After: waits the given time, then retries and succeeds", async () => {
    await withServer([json(429, rateLimited, { "retry-after": "1" }), sse(chatFrames({ text: "after the wait" }))], async (server) => {
      const started = Date.now();
      const events = await collect(chat(server));
      const elapsed = Date.now() - started;
      assert.equal(text(events), "after the wait");
      assert.equal(events[events.length - 1].type, "finish");
      assert.equal(server.requests.length, 2);
      assert.ok(elapsed >= 950, `waited ${elapsed} ms for Retry-After: 1`);
      assert.ok(elapsed < 5000);
    });
  });

  test("429 with retry-after-ms on Anthropic: retried after that many milliseconds", async () => {
    const retries: number[] = [];
    await withServer(
      [json(429, { type: "error", error: { type: "rate_limit_error", message: "slow down" } }, { "retry-after-ms": "120" }), sse(anthropicFrames({ text: "ok" }))],
      async (server) => {
        const model = anthropic("m", { baseURL: server.url, apiKey: "k", retry: { onRetry: ({ delayMs }) => retries.push(delayMs) } });
        const events = await collect(model);
        assert.equal(text(events), "ok");
        assert.deepEqual(retries, [120]);
        assert.equal(server.requests.length, 2);
      },
    );
  });

  test("500 is retried, then fails with kind server after maxRetries", async () => {
    const failure = json(500, { error: { message: "upstream exploded", type: "server_error" } });
    await withServer([failure, failure, failure, failure], async (server) => {
      const error = terminalError(await collect(chat(server, { maxRetries: 2 })));
      assert.equal(error.kind, "server");
      assert.equal(error.status, 500);
      assert.equal(error.retryable, true);
      assert.equal(error.provider, "openai");
      assert.match(error.message, /upstream exploded/);
      assert.equal(server.requests.length, 3, "first attempt + 2 retries");
    });
  });

  test("stream: false requests are retried the same way (500, then the JSON body), and 401 names the variable", async () => {
    const failure = json(500, { error: { message: "upstream exploded", type: "server_error" } });
    const responsesBody = { id: "resp_1", object: "response", model: "m", status: "completed", output: [{ id: "msg_1", type: "message", role: "assistant", content: [{ type: "output_text", text: "Hi!" }] }] };
    const messagesBody = { id: "msg_1", type: "message", role: "assistant", model: "m", content: [{ type: "text", text: "Hi!" }], stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 1 } };
    const unauthorized = json(401, { error: { message: "invalid x-api-key", type: "authentication_error" } });
    await withServer([failure, json(200, responsesBody), failure, json(200, messagesBody), unauthorized, unauthorized], async (server) => {
      const responses = openaiResponses("m", { baseURL: `${server.url}/v1`, apiKey: "k", stream: false, retry: fastRetry });
      const messages = anthropic("m", { baseURL: server.url, apiKey: "k", stream: false, retry: fastRetry });
      for (const model of [responses, messages]) {
        const events = await collect(model);
        assert.equal(text(events), "Hi!");
        assert.equal(events[events.length - 1].type, "finish");
      }
      assert.equal(server.requests.length, 4);
      for (const model of [responses, messages]) {
        const error = terminalError(await collect(model));
        assert.equal(error.kind, "authentication");
        assert.match(error.message, model === responses ? /OPENAI_API_KEY/ : /ANTHROPIC_API_KEY/);
      }
      assert.equal(server.requests.length, 6, "401 is not retried");
      assert.deepEqual(
        server.requests.map((request) => request.body.stream),
        [false, false, false, false, false, false],
      );
    });
  });

  test("the SDK's own retries are off: maxRetries 0 means exactly one request", async () => {
    await withServer([json(503, { error: { message: "busy" } }), json(503, { error: { message: "busy" } })], async (server) => {
      const error = terminalError(await collect(claude(server, { maxRetries: 0 })));
      assert.equal(error.kind, "server");
      assert.equal(server.requests.length, 1);
      assert.equal(server.requests[0].headers["x-stainless-retry-count"], "0");
    });
  });

  test("401 is not retried: kind authentication, the message names the provider and the variable", async () => {
    await withServer([json(401, { error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } })], async (server) => {
      const error = terminalError(await collect(chat(server)));
      assert.equal(error.kind, "authentication");
      assert.equal(error.retryable, false);
      assert.match(error.message, /openai/);
      assert.match(error.message, /OPENAI_API_KEY/);
      assert.equal(server.requests.length, 1);
    });
    await withServer([json(401, { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } })], async (server) => {
      const error = terminalError(await collect(claude(server)));
      assert.equal(error.kind, "authentication");
      assert.match(error.message, /anthropic/);
      assert.match(error.message, /ANTHROPIC_API_KEY/);
      assert.equal(server.requests.length, 1);
    });
  });

  test("an authentication error ends an Agent run FAILED with the variable named", async () => {
    await withServer([json(401, { error: { message: "Incorrect API key provided" } })], async (server) => {
      const agent = new Agent({ model: openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "bad" }) });
      const result = await agent.run("hello");
      assert.equal(result.state, "FAILED");
      assert.equal(result.error?.kind, "authentication");
      assert.match(`${result.reason} ${result.error?.message}`, /OPENAI_API_KEY/);
    });
  });

  test("run.abort() while a real adapter streams ends the Agent run ABORTED, promptly", async () => {
    const frames = chatFrames({ text: "a long slow answer that keeps coming word after word after word after word" });
    await withServer([sse(frames, { delayMs: 30 })], async (server) => {
      const agent = new Agent({ model: chat(server) });
      const run = agent.run("go");
      const started = Date.now();
      for await (const event of run) {
        if (event.type === "text-delta") {
          run.abort("user pressed stop");
          break;
        }
      }
      const result = await run;
      assert.equal(result.state, "ABORTED");
      assert.ok(Date.now() - started < 2000);
      assert.equal(server.requests.length, 1);
    });
  });

  test("context length and other 4xx are not retried", async () => {
    await withServer(
      [
        json(400, { error: { message: "This model's maximum context length is 128000 tokens.", type: "invalid_request_error", code: "context_length_exceeded" } }),
        json(400, { type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens > 200000 maximum" } }),
        json(404, { error: { message: "The model `nope` does not exist" } }),
        json(403, { error: { message: "not allowed" } }),
        json(422, { error: { message: "tools are not supported" } }),
      ],
      async (server) => {
        const kinds = [
          terminalError(await collect(chat(server))),
          terminalError(await collect(claude(server))),
          terminalError(await collect(chat(server))),
          terminalError(await collect(chat(server))),
          terminalError(await collect(chat(server))),
        ].map((error) => [error.kind, error.retryable, error.status]);
        assert.deepEqual(kinds, [
          ["context_length", false, 400],
          ["context_length", false, 400],
          ["not_found", false, 404],
          ["permission", false, 403],
          ["invalid_request", false, 422],
        ]);
        assert.equal(server.requests.length, 5);
      },
    );
  });

  test("an unreachable server is a network error, retried", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const retries: number[] = [];
    const model = openaiChat("m", { baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "k", retry: { ...fastRetry, maxRetries: 1, onRetry: ({ attempt }) => retries.push(attempt) } });
    const error = terminalError(await collect(model));
    assert.equal(error.kind, "network");
    assert.equal(error.retryable, true);
    assert.deepEqual(retries, [1]);
  });

  test("a request that outlives timeoutMs is a timeout error", async () => {
    await withServer([() => undefined], async (server) => {
      const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", timeoutMs: 150, retry: { maxRetries: 0 } });
      const error = terminalError(await collect(model));
      assert.equal(error.kind, "timeout");
    });
  });

  test("aborting during the backoff wait ends with aborted, without another request", async () => {
    await withServer([json(429, rateLimited, { "retry-after": "30" }), sse(chatFrames({ text: "never" }))], async (server) => {
      const controller = new AbortController();
      const model = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", retry: { onRetry: () => setTimeout(() => controller.abort(), 20) } });
      const started = Date.now();
      const error = terminalError(await collect(model, controller.signal));
      assert.equal(error.kind, "aborted");
      assert.ok(Date.now() - started < 2000);
      assert.equal(server.requests.length, 1);
    });
  });

  test("a Retry-After longer than maxRetryAfterMs is not waited for", async () => {
    await withServer([json(429, rateLimited, { "retry-after": "3600" })], async (server) => {
      const error = terminalError(await collect(chat(server, { maxRetryAfterMs: 1000 })));
      assert.equal(error.kind, "rate_limit");
      assert.equal(error.retryAfterMs, 3_600_000);
      assert.equal(server.requests.length, 1);
    });
  });

  test("an exhausted quota (429 insufficient_quota) is not retried", async () => {
    await withServer([json(429, { error: { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" } })], async (server) => {
      const error = terminalError(await collect(chat(server)));
      assert.equal(error.kind, "rate_limit");
      assert.equal(error.retryable, false);
      assert.equal(server.requests.length, 1);
    });
  });
});

describe("failures inside a stream", () => {
  test("a stream cut mid-way: the text so far, then an error event of kind network, never retried", async () => {
    const frames = chatFrames({ text: "one two three four five six seven eight" });
    await withServer([sse(frames, { cutAfter: 4 }), sse(frames)], async (server) => {
      const events = await collect(chat(server));
      assert.equal(text(events), "one two three ");
      const error = terminalError(events);
      assert.equal(error.kind, "network");
      assert.equal(server.requests.length, 1, "no retry once events reached the caller");
    });
  });

  test("a stream that ends without finishing is a network error for every adapter", async () => {
    await withServer(
      [
        sse(chatFrames({ text: "partial answer" }).slice(0, 3)),
        sse(responsesFrames({ text: "partial answer" }).slice(0, 5)),
        sse(anthropicFrames({ text: "partial answer" }).slice(0, 4)),
      ],
      async (server) => {
        const models = [
          chat(server, { maxRetries: 0 }),
          openaiResponses("m", { baseURL: `${server.url}/v1`, apiKey: "k", retry: { maxRetries: 0 } }),
          claude(server, { maxRetries: 0 }),
        ];
        for (const model of models) {
          const events = await collect(model);
          assert.equal(terminalError(events).kind, "network", model.provider);
          assert.ok(text(events).length > 0, model.provider);
        }
      },
    );
  });

  test("malformed SSE ends with an error event, not a throw", async () => {
    const frames = chatFrames({ text: "fine so far" });
    const broken = [...frames.slice(0, 3), "data: {this is not json\n\n", ...frames.slice(3)];
    await withServer([sse(broken)], async (server) => {
      const events = await collect(chat(server));
      const error = terminalError(events);
      assert.equal(error.kind, "server");
      assert.match(error.message, /malformed/);
      assert.equal(text(events), "fine so ");
      assert.equal(server.requests.length, 1);
    });
  });

  test("an error event inside an Anthropic stream maps by its type (overloaded → server)", async () => {
    const frames = anthropicFrames({ text: "a b c" });
    const overloaded = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
    await withServer([sse([...frames.slice(0, 3), overloaded])], async (server) => {
      const events = await collect(claude(server));
      const error = terminalError(events);
      assert.equal(error.kind, "server");
      assert.match(error.message, /Overloaded/);
    });
  });

  test("an overloaded error right after message_start is still retried (nothing of the answer was delivered)", async () => {
    const frames = anthropicFrames({ text: "second try" });
    const overloaded = 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n';
    await withServer([sse([frames[0], overloaded]), sse(frames)], async (server) => {
      const events = await collect(claude(server));
      assert.equal(text(events), "second try");
      assert.equal(events.filter((event) => event.type === "response-start").length, 1);
      assert.equal(events[events.length - 1].type, "finish");
      assert.equal(server.requests.length, 2);
    });
  });

  test("an error object inside a Chat Completions stream maps by its type", async () => {
    await withServer([sse([...chatFrames({ text: "a b" }).slice(0, 2), 'data: {"error":{"message":"Rate limit hit mid-stream","type":"rate_limit_exceeded"}}\n\n'])], async (server) => {
      const error = terminalError(await collect(chat(server)));
      assert.equal(error.kind, "rate_limit");
      assert.match(error.message, /mid-stream/);
    });
  });

  test("a failed Responses response is an error event with its code", async () => {
    const failed = `event: response.failed\ndata: ${JSON.stringify({
      type: "response.failed",
      response: { id: "resp_1", status: "failed", error: { code: "server_error", message: "The model failed" } },
    })}\n\n`;
    await withServer([sse([responsesFrames({ text: "x" })[0], failed])], async (server) => {
      const model = openaiResponses("m", { baseURL: `${server.url}/v1`, apiKey: "k", retry: { maxRetries: 0 } });
      const error = terminalError(await collect(model));
      assert.equal(error.kind, "server");
      assert.match(error.message, /The model failed/);
    });
  });

  test("delta.refusal ends the turn with a refusal error", async () => {
    const base = { id: "c", object: "chat.completion.chunk", created: 1, model: "m" };
    const frames = [
      `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: "assistant", refusal: "" }, finish_reason: null }] })}\n\n`,
      `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { refusal: "I can't help " }, finish_reason: null }] })}\n\n`,
      `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { refusal: "with that." }, finish_reason: null }] })}\n\n`,
      `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`,
      "data: [DONE]\n\n",
    ];
    await withServer([sse(frames)], async (server) => {
      const error = terminalError(await collect(chat(server)));
      assert.equal(error.kind, "refusal");
      assert.match(error.message, /I can't help with that\./);
      assert.equal(error.retryable, false);
    });
  });

  test("reasoning_content from a compatible server becomes reasoning events", async () => {
    await withServer([sse(chatFrames({ reasoning: "think first", text: "answer" }))], async (server) => {
      const events = await collect(chat(server));
      const reasoning = events.map((event) => (event.type === "reasoning-delta" ? event.delta : "")).join("");
      assert.equal(reasoning, "think first");
      assert.equal(text(events), "answer");
      assert.ok(events.findIndex((event) => event.type === "reasoning-end") < events.findIndex((event) => event.type === "text-start"));
    });
  });
});

describe("error mapping and backoff helpers", () => {
  test("retryDelayMs: Retry-After wins; backoff grows, is jittered and capped", () => {
    const plain = toAgentLoopError({ status: 500, headers: new Headers(), error: { message: "x" } }, { provider: "p" });
    const delays = [1, 2, 3, 10].map((attempt) => retryDelayMs(attempt, plain, { initialDelayMs: 100, maxDelayMs: 1000 }) ?? -1);
    assert.ok(delays[0] >= 50 && delays[0] <= 100);
    assert.ok(delays[1] >= 100 && delays[1] <= 200);
    assert.ok(delays[2] >= 200 && delays[2] <= 400);
    assert.ok(delays[3] >= 500 && delays[3] <= 1000);
    const hinted = toAgentLoopError({ status: 429, headers: new Headers({ "retry-after": "2" }), error: {} }, { provider: "p" });
    assert.equal(retryDelayMs(1, hinted), 2000);
    const dated = toAgentLoopError({ status: 429, headers: new Headers({ "retry-after": new Date(Date.now() + 5000).toUTCString() }), error: {} }, { provider: "p" });
    assert.ok((dated.retryAfterMs ?? 0) > 3000 && (dated.retryAfterMs ?? 0) <= 5000);
  });

  test("withRetry wraps any model and never retries after the first event", async () => {
    let calls = 0;
    const flaky: Model = {
      provider: "flaky",
      modelId: "f",
      async *stream() {
        calls++;
        if (calls === 1) {
          yield { type: "error", error: toAgentLoopError({ status: 503, headers: new Headers(), error: {} }, { provider: "flaky" }) };
          return;
        }
        yield { type: "text-start", id: "t" };
        yield { type: "text-delta", id: "t", delta: "partial" };
        yield { type: "error", error: toAgentLoopError({ status: 503, headers: new Headers(), error: {} }, { provider: "flaky" }) };
      },
    };
    const events = await collect(withRetry(flaky, { initialDelayMs: 1, maxRetries: 5 }));
    assert.equal(calls, 2);
    assert.equal(text(events), "partial");
    assert.equal(terminalError(events).kind, "server");
  });
});
