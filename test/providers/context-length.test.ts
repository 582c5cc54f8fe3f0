// A provider's "context length exceeded" answer, per provider, makes the loop trim the request and
// try once more (real HTTP on loopback; the second request is checked on the wire).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Agent } from "../../src/loop/agent.js";
import type { Message } from "../../src/messages.js";
import type { Model } from "../../src/model/model.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import { json, type Responder, sse, startServer } from "./fixture-server.js";
import { anthropicFrames, chatFrames, responsesFrames } from "./wire-scripts.js";

const history: Message[] = Array.from({ length: 4 }, (_, index) => [
  { role: "user" as const, content: `old question ${index} ${"x".repeat(200)}` },
  { role: "assistant" as const, content: [{ type: "text" as const, text: `old answer ${index} ${"y".repeat(200)}` }] },
]).flat();

const cases: Array<{ name: string; refusal: Responder; answer: Responder; model: (url: string) => Model; sent: (body: any) => unknown[] }> = [
  {
    name: "Chat Completions (400 context_length_exceeded)",
    refusal: json(400, { error: { message: "This model's maximum context length is 8192 tokens.", type: "invalid_request_error", code: "context_length_exceeded" } }),
    answer: sse(chatFrames({ text: "Fits now." })),
    model: (url) => openaiChat("m", { baseURL: `${url}/v1`, apiKey: "k" }),
    sent: (body) => body.messages,
  },
  {
    name: "Responses (400 context_length_exceeded)",
    refusal: json(400, { error: { message: "Your input exceeds the context window of this model.", type: "invalid_request_error", code: "context_length_exceeded" } }),
    answer: sse(responsesFrames({ text: "Fits now." })),
    model: (url) => openaiResponses("m", { baseURL: `${url}/v1`, apiKey: "k" }),
    sent: (body) => body.input,
  },
  {
    name: "Anthropic Messages (400 prompt is too long)",
    refusal: json(400, { type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 210000 tokens > 200000 maximum" } }),
    answer: sse(anthropicFrames({ text: "Fits now." })),
    model: (url) => anthropic("claude-test", { baseURL: url, apiKey: "k" }),
    sent: (body) => body.messages,
  },
];

describe("context length exceeded → one trim and retry", () => {
  for (const { name, refusal, answer, model, sent } of cases) {
    test(name, async () => {
      const server = await startServer([refusal, answer]);
      try {
        const run = new Agent({ model: model(server.url), instructions: "sys" }).run("the question", { history });
        const trimmed = [];
        for await (const event of run) if (event.type === "context-trimmed") trimmed.push(event);
        const result = await run;
        assert.equal(result.state, "COMPLETED", result.reason);
        assert.equal(result.text, "Fits now.");
        assert.equal(server.requests.length, 2);
        assert.ok(sent(server.requests[1]!.body).length < sent(server.requests[0]!.body).length, "the retry sends less");
        assert.equal(trimmed.length, 1);
        assert.equal(trimmed[0]!.reason, "context_length");
        assert.equal(result.messages.length, 11, "the transcript keeps everything");
      } finally {
        await server.close();
      }
    });
  }
});
