// Prompt caching: Anthropic breakpoints placed on every request (and the opt-out), OpenAI's
// prompt_cache_key from the session, and cached input (read and written) in usage, events and spans.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Agent } from "../../src/loop/agent.js";
import type { LoopEvent } from "../../src/loop/events.js";
import type { Message } from "../../src/messages.js";
import { generate } from "../../src/model/model.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import { defineTool } from "../../src/tools/tool.js";
import { otelInstrumentation } from "../../src/tracing/index.js";
import { memoryTracer } from "../tracing/helpers.js";
import { sse, startServer } from "./fixture-server.js";
import { anthropicFrames, chatFrames, responsesFrames } from "./wire-scripts.js";

const ephemeral = { type: "ephemeral" };
const lookup = defineTool({ name: "lookup", description: "Looks up", parameters: { type: "object", properties: {} }, execute: () => "found" });
const tools = [{ name: "lookup", description: "Looks up", parameters: { type: "object", properties: {} } }];

describe("Anthropic cache breakpoints", () => {
  const thinking = { type: "thinking", thinking: "Hmm.", signature: "sig" };
  const conversation = (): Message[] => [
    { role: "system", content: "You are terse." },
    { role: "user", content: "Look it up" },
    {
      role: "assistant",
      content: [
        { type: "reasoning", text: "Hmm.", providerData: { anthropic: { block: thinking } } },
        { type: "tool-call", id: "toolu_1", name: "lookup", arguments: "{}", providerData: { anthropic: { block: { type: "tool_use", id: "toolu_1", name: "lookup", input: {} } } } },
      ],
    },
    { role: "tool", toolCallId: "toolu_1", toolName: "lookup", content: "found" },
  ];

  test("on by default: after the tools, on the system prompt and on the newest message; kept blocks unchanged", async () => {
    const server = await startServer(sse(anthropicFrames({ text: "ok" })));
    try {
      const messages = conversation();
      await generate(anthropic("claude-sonnet-4-5", { baseURL: server.url, apiKey: "k" }), { messages, tools });
      const body = server.requests[0].body;
      assert.deepEqual(body.system, [{ type: "text", text: "You are terse.", cache_control: ephemeral }]);
      assert.deepEqual(body.tools[0].cache_control, ephemeral);
      assert.deepEqual(body.messages.at(-1), { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "found", cache_control: ephemeral }] });
      // Only those three: the thinking and tool_use blocks go back as they were.
      assert.deepEqual(body.messages[1].content, [thinking, { type: "tool_use", id: "toolu_1", name: "lookup", input: {} }]);
      assert.equal(JSON.stringify(body).split('"cache_control"').length - 1, 3);
      assert.deepEqual(thinking, { type: "thinking", thinking: "Hmm.", signature: "sig" }, "the stored block was not marked");
    } finally {
      await server.close();
    }
  });

  test("opt-out: promptCaching: false on the adapter or in the request's options", async () => {
    const server = await startServer([sse(anthropicFrames({ text: "ok" })), sse(anthropicFrames({ text: "ok" }))]);
    try {
      await generate(anthropic("claude-sonnet-4-5", { baseURL: server.url, apiKey: "k", promptCaching: false }), { messages: conversation(), tools });
      await generate(anthropic("claude-sonnet-4-5", { baseURL: server.url, apiKey: "k" }), { messages: conversation(), tools, options: { promptCaching: false } });
      for (const request of server.requests) {
        assert.equal(JSON.stringify(request.body).includes("cache_control"), false);
        assert.equal(request.body.system, "You are terse.");
      }
    } finally {
      await server.close();
    }
  });

  test("cache reads and writes in usage, the usage event, RunResult and the GenAI span attributes", async () => {
    const frames = anthropicFrames({ text: "ok", usage: { input: 1000, output: 5, cached: 600 } }).map((frame) =>
      frame.replace('"cache_creation_input_tokens":0', '"cache_creation_input_tokens":300'),
    );
    const server = await startServer(sse(frames));
    const { exporter, tracer } = memoryTracer();
    try {
      const agent = new Agent({ name: "c", model: anthropic("claude-sonnet-4-5", { baseURL: server.url, apiKey: "k", priceAs: false }), instrumentation: otelInstrumentation({ tracer }) });
      const run = agent.run("hi");
      const events: LoopEvent[] = [];
      for await (const event of run) events.push(event);
      const result = await run;
      // input_tokens 400 + read 600 + written 300.
      assert.deepEqual(result.usage, { inputTokens: 1300, outputTokens: 5, totalTokens: 1305, cachedInputTokens: 600, cacheWriteInputTokens: 300, reasoningTokens: 0 });
      const usage = events.find((event) => event.type === "usage");
      assert.equal(usage?.type === "usage" && usage.usage.cacheWriteInputTokens, 300);
      const chat = exporter.getFinishedSpans().find((span) => span.name.startsWith("chat "));
      assert.equal(chat?.attributes["gen_ai.usage.cache_read.input_tokens"], 600);
      assert.equal(chat?.attributes["gen_ai.usage.cache_creation.input_tokens"], 300);
    } finally {
      await server.close();
    }
  });
});

describe("OpenAI prompt_cache_key", () => {
  test("Responses: the session id (hashed when longer than 64 characters); none without a session or with promptCaching: false", async () => {
    const server = await startServer(Array.from({ length: 5 }, () => sse(responsesFrames({ text: "ok" }))));
    try {
      const model = openaiResponses("gpt-5", { baseURL: `${server.url}/v1`, apiKey: "k" });
      const agent = new Agent({ name: "r", model, tools: [lookup] });
      await agent.run("hi", { sessionId: "session-1" });
      await agent.run("hi");
      await agent.run("hi", { sessionId: "x".repeat(100) });
      await new Agent({ name: "r", model, modelOptions: { promptCaching: false } }).run("hi", { sessionId: "session-1" });
      const keys = server.requests.map((request) => request.body.prompt_cache_key);
      assert.equal(keys[0], "session-1");
      assert.equal(keys[1], undefined);
      assert.match(keys[2], /^[0-9a-f]{64}$/);
      assert.equal(keys[3], undefined);
    } finally {
      await server.close();
    }
  });

  test("Chat Completions sends it to OpenAI's own API only (a compatible server never sees the field)", async () => {
    const server = await startServer(sse(chatFrames({ text: "ok" })));
    try {
      await new Agent({ name: "c", model: openaiChat("llama", { baseURL: `${server.url}/v1` }) }).run("hi", { sessionId: "session-1" });
      assert.equal("prompt_cache_key" in server.requests[0].body, false);
    } finally {
      await server.close();
    }
  });
});
