// Model fallback through the real Agent and real adapters on loopback servers: a primary that
// answers 429 forever hands the same request to a second provider once its retries are spent (a
// `model-fallback` event, a span attribute); never after text of the call reached the caller.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { providerModelOfSettings } from "../../src/config/build-agent.js";
import { parseAgentFile, settingsFrom } from "../../src/config/settings.js";
import { Agent } from "../../src/loop/agent.js";
import type { LoopEvent } from "../../src/loop/events.js";
import { withFallback } from "../../src/model/fallback.js";
import { generate } from "../../src/model/model.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { openaiChat } from "../../src/providers/openai/index.js";
import { parsePrompty, resolvePromptyModel } from "../../src/prompty/index.js";
import { otelInstrumentation } from "../../src/tracing/index.js";
import { memoryTracer } from "../tracing/helpers.js";
import { type Responder, json, sse, startServer } from "./fixture-server.js";
import { anthropicFrames, chatFrames } from "./wire-scripts.js";

const rateLimited: Responder = json(429, { type: "error", error: { type: "rate_limit_error", message: "Number of requests has exceeded your rate limit" } }, { "retry-after": "0" });

async function eventsOf(agent: Agent, input: string) {
  const run = agent.run(input);
  const events: LoopEvent[] = [];
  for await (const event of run) events.push(event);
  return { events, result: await run };
}

describe("model fallback", () => {
  test("a 429-forever primary falls back once, after its retries, to a second provider with the same request", async () => {
    const primary = await startServer(rateLimited);
    const secondary = await startServer(sse(chatFrames({ text: "Paris.", usage: { input: 20, output: 2 } })));
    const { exporter, tracer } = memoryTracer();
    try {
      const agent = new Agent({
        name: "f",
        instructions: "Be brief.",
        model: [
          anthropic("claude-sonnet-4-5", { baseURL: primary.url, apiKey: "k", retry: { maxRetries: 2, initialDelayMs: 1 } }),
          openaiChat("gpt-4.1", { baseURL: `${secondary.url}/v1`, apiKey: "k" }),
        ],
        instrumentation: otelInstrumentation({ tracer }),
      });
      const { events, result } = await eventsOf(agent, "Capital of France?");
      assert.equal(result.state, "COMPLETED", result.reason);
      assert.equal(result.text, "Paris.");
      assert.equal(primary.requests.length, 3, "the primary's retry policy ran first (1 + 2 retries)");
      assert.equal(secondary.requests.length, 1);
      // The same request, in the second provider's wire format.
      assert.deepEqual(secondary.requests[0].body.messages, [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Capital of France?" },
      ]);
      const fallbacks = events.filter((event) => event.type === "model-fallback");
      assert.equal(fallbacks.length, 1);
      assert.deepEqual(
        fallbacks.map((event) => event.type === "model-fallback" && [event.from, event.to, event.errorKind]),
        [["anthropic:claude-sonnet-4-5", "openai:gpt-4.1", "rate_limit"]],
      );
      assert.match(fallbacks[0].type === "model-fallback" ? fallbacks[0].reason : "", /429/);
      const chat = exporter.getFinishedSpans().find((span) => span.name.startsWith("chat "));
      assert.equal(chat?.attributes["agentloop.model.fallback.from"], "anthropic:claude-sonnet-4-5");
      assert.equal(chat?.attributes["agentloop.model.fallback.to"], "openai:gpt-4.1");
    } finally {
      await primary.close();
      await secondary.close();
    }
  });

  test("never after text reached the caller: a stream cut mid-answer ends the run FAILED, the second model never asked", async () => {
    const cut = sse(anthropicFrames({ text: "The capital of France is Paris, a city on the Seine." }), { cutAfter: 5 });
    const primary = await startServer(cut);
    const secondary = await startServer(sse(chatFrames({ text: "never" })));
    try {
      const agent = new Agent({
        name: "f",
        model: [anthropic("claude-sonnet-4-5", { baseURL: primary.url, apiKey: "k" }), openaiChat("gpt-4.1", { baseURL: `${secondary.url}/v1`, apiKey: "k" })],
      });
      const { events, result } = await eventsOf(agent, "Capital of France?");
      assert.ok(events.some((event) => event.type === "text-delta"), "text was streamed");
      assert.equal(result.state, "FAILED");
      assert.equal(result.error?.kind, "network");
      assert.equal(events.filter((event) => event.type === "model-fallback").length, 0);
      assert.equal(secondary.requests.length, 0);
    } finally {
      await primary.close();
      await secondary.close();
    }
  });

  test("failures another model cannot fix (a bad key, a bad request) do not fall back; the last model's failure ends the run", async () => {
    const unauthorized = await startServer(json(401, { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } }));
    const alsoLimited = await startServer(json(429, { error: { message: "slow down", type: "rate_limit_error" } }, { "retry-after": "0" }));
    const secondary = await startServer(sse(chatFrames({ text: "never" })));
    try {
      const noRetry = { maxRetries: 0 };
      const auth = await new Agent({
        name: "f",
        model: [anthropic("m", { baseURL: unauthorized.url, apiKey: "k", retry: noRetry }), openaiChat("gpt-4.1", { baseURL: `${secondary.url}/v1`, apiKey: "k" })],
      }).run("hi");
      assert.equal(auth.error?.kind, "authentication");
      assert.equal(secondary.requests.length, 0);
      const both = await new Agent({
        name: "f",
        model: withFallback([
          anthropic("m", { baseURL: unauthorized.url, apiKey: "k", retry: noRetry }),
          openaiChat("gpt-4.1", { baseURL: `${alsoLimited.url}/v1`, apiKey: "k", retry: noRetry }),
        ]),
      }).run("hi");
      assert.equal(both.error?.kind, "authentication", "the first failure was not one to hand on");
      const chain = await new Agent({
        name: "f",
        model: [openaiChat("a", { baseURL: `${alsoLimited.url}/v1`, apiKey: "k", retry: noRetry }), openaiChat("b", { baseURL: `${alsoLimited.url}/v1`, apiKey: "k", retry: noRetry })],
      }).run("hi");
      assert.equal(chain.state, "FAILED");
      assert.equal(chain.error?.kind, "rate_limit");
    } finally {
      await unauthorized.close();
      await alsoLimited.close();
      await secondary.close();
    }
  });

  test("withFallback of one model is that model; an empty list is refused", () => {
    const only = new ScriptedModel(["hi"]);
    assert.equal(withFallback([only]), only);
    assert.throws(() => withFallback([]), /withFallback: give at least one model/);
  });
});

describe("fallback in the agent file and in .prompty", () => {
  const hi = { messages: [{ role: "user" as const, content: "hi" }] };

  test("agent file: `model: [primary, fallback]` and `fallback:` both build the chain; a bad entry is named", async () => {
    const primary = await startServer(rateLimited);
    const secondary = await startServer([sse(chatFrames({ text: "from list" })), sse(chatFrames({ text: "from fallback" }))]);
    try {
      const env = { ANTHROPIC_BASE_URL: primary.url, ANTHROPIC_API_KEY: "k", OPENAI_BASE_URL: `${secondary.url}/v1`, OPENAI_API_KEY: "k" };
      for (const [file, text] of [
        [{ model: ["anthropic:claude-sonnet-4-5", "openai:gpt-4.1"] }, "from list"],
        [{ model: "anthropic:claude-sonnet-4-5", fallback: "openai:gpt-4.1" }, "from fallback"],
      ] as const) {
        const settings = settingsFrom(parseAgentFile(JSON.stringify(file)), env);
        const model = await providerModelOfSettings(settings, env);
        const response = await generate(model, hi);
        assert.equal(response.message.content[0].type === "text" && response.message.content[0].text, text);
      }
      assert.equal(secondary.requests.length, 2);
      assert.throws(() => parseAgentFile('{"model": "anthropic:claude-sonnet-4-5", "fallback": ["gpt-4.1"]}'), /fallback\[0\]: must be a model spec like "openai:gpt-4.1", got "gpt-4.1"/);
      assert.throws(() => parseAgentFile('{"model": []}'), /model: must be a model spec or a non-empty list/);
    } finally {
      await primary.close();
      await secondary.close();
    }
  });

  test(".prompty: `model.fallback` takes the request the file's model could not serve", async () => {
    const primary = await startServer(rateLimited);
    const secondary = await startServer(sse(chatFrames({ text: "from prompty fallback" })));
    try {
      const text = `---
name: fallback
model:
  id: claude-sonnet-4-5
  provider: anthropic
  connection:
    endpoint: ${primary.url}
    apiKey: k
  fallback:
    - openai:gpt-4.1
---
system:
Be brief.
`;
      const agent = parsePrompty(text);
      const model = await resolvePromptyModel(agent, { env: { OPENAI_BASE_URL: `${secondary.url}/v1`, OPENAI_API_KEY: "k", ANTHROPIC_API_KEY: "k" } });
      const response = await generate(model, hi);
      assert.equal(response.message.content[0].type === "text" && response.message.content[0].text, "from prompty fallback");
      assert.throws(() => parsePrompty(text.replace("    - openai:gpt-4.1", "    - 42")), /model.fallback in the prompty text must be a model spec or a list of them/);
    } finally {
      await primary.close();
      await secondary.close();
    }
  });
});
