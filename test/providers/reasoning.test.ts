// Reasoning across the adapters: the recorded Anthropic thinking and DeepSeek reasoning streams
// through the real Agent (reasoning apart from the answer, sent back as each provider requires),
// and the one `reasoning` setting mapped to each provider's own field.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Agent } from "../../src/loop/agent.js";
import type { LoopEvent } from "../../src/loop/events.js";
import type { AssistantMessage } from "../../src/messages.js";
import { type ModelRequest, generate } from "../../src/model/model.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import { defineTool } from "../../src/tools/tool.js";
import { fixtureLines, replay, sse, startServer } from "./fixture-server.js";
import { anthropicFrames, chatFrames, responsesFrames } from "./wire-scripts.js";

const lookup = defineTool({
  name: "lookup",
  description: "Looks a thing up",
  parameters: { type: "object", properties: { q: { type: "string" } } },
  execute: () => "found",
});

async function runEvents(agent: Agent, input: string) {
  const run = agent.run(input);
  const events: LoopEvent[] = [];
  for await (const event of run) events.push(event);
  return { events, result: await run };
}

const deltas = (events: LoopEvent[], type: "reasoning-delta" | "text-delta") =>
  events.map((event) => (event.type === type ? event.delta : "")).join("");

describe("recorded reasoning streams through the Agent", () => {
  test("anthropic-clear-thinking: thinking streams as reasoning, apart from the answer; the next request carries the block and its signature unchanged", async () => {
    const lines = fixtureLines("anthropic-messages", "anthropic-clear-thinking.1").map((line) => JSON.parse(line));
    const thinking = lines.map((line) => (line.delta?.type === "thinking_delta" ? line.delta.thinking : "")).join("");
    const signature = lines.map((line) => (line.delta?.type === "signature_delta" ? line.delta.signature : "")).join("");
    const server = await startServer([replay("anthropic-messages", "anthropic-clear-thinking.1"), sse(anthropicFrames({ text: "Done." }))]);
    try {
      const model = anthropic("claude-sonnet-4-5", { baseURL: server.url, apiKey: "k" });
      const agent = new Agent({ name: "t", model, modelOptions: { reasoning: { budgetTokens: 2000 } } });
      const { events, result } = await runEvents(agent, "925 / 5?");
      assert.equal(deltas(events, "reasoning-delta"), thinking);
      assert.equal(deltas(events, "text-delta"), "925 ÷ 5 = 185");
      assert.equal(result.text, "925 ÷ 5 = 185");
      // The thinking setting became Anthropic's own.
      assert.deepEqual(server.requests[0].body.thinking, { type: "enabled", budget_tokens: 2000 });
      assert.equal(server.requests[0].body.max_tokens, 4096);
      // The next request of the conversation: the thinking block first, verbatim, then the text.
      const answer = result.newMessages.find((message) => message.role === "assistant") as AssistantMessage;
      await generate(model, { messages: [...result.messages, { role: "user", content: "And times 2?" }] });
      const sent = server.requests[1].body.messages[1];
      assert.equal(sent.role, "assistant");
      assert.deepEqual(sent.content[0], { type: "thinking", thinking, signature });
      assert.deepEqual(sent.content[1], { type: "text", text: "925 ÷ 5 = 185" });
      assert.deepEqual(
        answer.content.map((part) => part.type),
        ["reasoning", "text"],
      );
    } finally {
      await server.close();
    }
  });

  test("deepseek-reasoning: reasoning_content streams as reasoning; the answer and its reasoning tokens apart", async () => {
    const lines = fixtureLines("openai-chat", "deepseek-reasoning").map((line) => JSON.parse(line));
    const reasoning = lines.map((line) => line.choices[0]?.delta?.reasoning_content ?? "").join("");
    const content = lines.map((line) => line.choices[0]?.delta?.content ?? "").join("");
    const server = await startServer(replay("openai-chat", "deepseek-reasoning"));
    try {
      const agent = new Agent({ name: "d", model: openaiChat("deepseek-reasoner", { baseURL: `${server.url}/v1`, apiKey: "k" }) });
      const { events, result } = await runEvents(agent, "Count the r's");
      assert.ok(reasoning.length > 100);
      assert.equal(deltas(events, "reasoning-delta"), reasoning);
      assert.equal(result.text, content);
      assert.ok(!result.text.includes(reasoning.slice(0, 40)), "no reasoning in the answer");
      assert.equal(result.usage.reasoningTokens, 205);
      const turnEnd = events.find((event) => event.type === "turn-end");
      assert.deepEqual(
        turnEnd?.type === "turn-end" && turnEnd.message.content.map((part) => [part.type, part.type === "tool-call" ? "" : part.text.length]),
        [
          ["reasoning", reasoning.length],
          ["text", content.length],
        ],
      );
    } finally {
      await server.close();
    }
  });
});

describe("reasoning sent back and the reasoning setting", () => {
  test("Chat Completions: a tool round sends its reasoning_content back (DeepSeek thinking with tools); an earlier answer's is left out", async () => {
    const toolTurn = { reasoning: "I should look it up.", toolCalls: [{ id: "call_1", name: "lookup", arguments: { q: "x" } }] };
    const server = await startServer([sse(chatFrames(toolTurn)), sse(chatFrames({ text: "It is x." }))]);
    try {
      const agent = new Agent({
        name: "d",
        model: openaiChat("deepseek-reasoner", { baseURL: `${server.url}/v1`, apiKey: "k" }),
        tools: [lookup],
        modelOptions: { reasoning: { effort: "high" } },
      });
      const history = [
        { role: "user" as const, content: "Earlier question" },
        { role: "assistant" as const, content: [{ type: "reasoning" as const, text: "old thoughts", providerData: { openaiChat: { field: "reasoning_content" } } }, { type: "text" as const, text: "Old answer" }] },
      ];
      const result = await agent.run("Look up x", { history });
      assert.equal(result.state, "COMPLETED", result.reason);
      const body = server.requests[1].body;
      assert.equal(body.reasoning_effort, "high");
      assert.deepEqual(body.messages[1], { role: "assistant", content: "Old answer" });
      assert.deepEqual(body.messages[3], {
        role: "assistant",
        reasoning_content: "I should look it up.",
        tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } }],
      });
    } finally {
      await server.close();
    }
  });

  test("Responses: effort and a summary; with store: false the encrypted reasoning is asked for", async () => {
    const server = await startServer([sse(responsesFrames({ text: "ok" })), sse(responsesFrames({ text: "ok" }))]);
    try {
      const model = openaiResponses("gpt-5", { baseURL: `${server.url}/v1`, apiKey: "k" });
      const request: ModelRequest = { messages: [{ role: "user", content: "hi" }], options: { reasoning: { budgetTokens: 3000 }, providerOptions: { openai: { store: false } } } };
      await generate(model, request);
      assert.deepEqual(server.requests[0].body.reasoning, { effort: "medium", summary: "auto" });
      assert.deepEqual(server.requests[0].body.include, ["reasoning.encrypted_content"]);
      await generate(model, { messages: [{ role: "user", content: "hi" }], options: { reasoning: { effort: "minimal" } } });
      assert.deepEqual(server.requests[1].body.reasoning, { effort: "minimal", summary: "auto" });
      assert.equal(server.requests[1].body.include, undefined);
    } finally {
      await server.close();
    }
  });

  test("Anthropic: an effort becomes a budget, and max_tokens grows above it", async () => {
    const server = await startServer(sse(anthropicFrames({ text: "ok" })));
    try {
      await generate(anthropic("claude-sonnet-4-5", { baseURL: server.url, apiKey: "k" }), {
        messages: [{ role: "user", content: "hi" }],
        options: { maxOutputTokens: 1000, reasoning: { effort: "medium" } },
      });
      assert.deepEqual(server.requests[0].body.thinking, { type: "enabled", budget_tokens: 8192 });
      assert.equal(server.requests[0].body.max_tokens, 8192 + 4096);
    } finally {
      await server.close();
    }
  });

  test("a bad setting ends the call with a configuration error naming reasoning, before any request", async () => {
    const server = await startServer(sse(chatFrames({ text: "never" })));
    try {
      const response = await generate(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" }), {
        messages: [{ role: "user", content: "hi" }],
        options: { reasoning: { effort: "extreme" } as never },
      });
      assert.equal(response.error?.kind, "configuration");
      assert.match(response.error?.message ?? "", /reasoning must be \{ effort: "minimal" \| "low" \| "medium" \| "high" \} or \{ budgetTokens/);
      assert.equal(server.requests.length, 0);
    } finally {
      await server.close();
    }
  });
});
