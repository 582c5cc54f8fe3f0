// Replays the recorded real provider streams (test/fixtures/provider-streams) from a local
// HTTP server through the official SDK adapters and checks the normalized events.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Model, ModelEvent, ModelRequest } from "../../src/model/model.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import { type FixtureFolder, type TestServer, collect, fixtureJson, fixtureLines, joined, json, last, replay, startServer, weatherRequest } from "./fixture-server.js";


/** The full text of a recorded stream, read straight from the fixture lines. */
function fixtureText(folder: FixtureFolder, name: string): string {
  let text = "";
  for (const line of fixtureLines(folder, name)) {
    const payload = JSON.parse(line);
    if (folder === "openai-chat") text += payload.choices?.[0]?.delta?.content ?? "";
    if (folder === "openai-responses" && payload.type === "response.output_text.delta") text += payload.delta;
    if (folder === "anthropic-messages" && payload.delta?.type === "text_delta") text += payload.delta.text;
  }
  return text;
}

function toolCalls(events: ModelEvent[]) {
  return events.filter((event) => event.type === "tool-call-end").map((event) => ({ id: event.id, name: event.name, args: JSON.parse(event.arguments) }));
}

describe("recorded OpenAI Chat Completions streams", () => {
  let server: TestServer;
  let model: Model;
  before(async () => {
    server = await startServer([
      replay("openai-chat", "alibaba-text"),
      replay("openai-chat", "alibaba-tool-call"),
      replay("openai-chat", "groq-tool-call"),
      replay("openai-chat", "groq-text"),
    ]);
    model = openaiChat("qwen3-max", { baseURL: `${server.url}/v1`, apiKey: "test-key", priceAs: false });
  });
  after(() => server.close());

  test("alibaba-text: many small deltas, usage in a last chunk with empty choices", async () => {
    const events = await collect(model, { messages: [{ role: "user", content: "Invent a holiday" }] });
    const expected = fixtureText("openai-chat", "alibaba-text");
    assert.ok(expected.length > 1000);
    assert.equal(joined(events), expected);
    assert.deepEqual(events[0], { type: "response-start", id: "chatcmpl-d2d6aab7-cbca-970f-8aa6-7d58c9724733", model: "qwen3-max" });
    assert.deepEqual(last(events), {
      type: "finish",
      reason: { unified: "stop", raw: "stop" },
      usage: { inputTokens: 18, outputTokens: 779, totalTokens: 797, cachedInputTokens: 0, reasoningTokens: 0 },
    });
    // The request asked for usage in the stream.
    assert.equal(server.requests[0].path, "/v1/chat/completions");
    assert.equal(server.requests[0].body.stream, true);
    assert.deepEqual(server.requests[0].body.stream_options, { include_usage: true });
  });

  test("alibaba-tool-call: arguments arrive in pieces and accumulate by index", async () => {
    const events = await collect(model);
    assert.deepEqual(toolCalls(events), [{ id: "call_eee11723464a4b9eb8cee71d", name: "weather", args: { location: "San Francisco" } }]);
    assert.equal(events.filter((event) => event.type === "tool-call-start").length, 1);
    assert.equal(
      events
        .filter((event) => event.type === "tool-call-delta")
        .map((event) => event.delta)
        .join(""),
      '{"location": "San Francisco"}',
    );
    assert.deepEqual(last(events), {
      type: "finish",
      reason: { unified: "tool-calls", raw: "tool_calls" },
      usage: { inputTokens: 295, outputTokens: 22, totalTokens: 317, cachedInputTokens: 0, reasoningTokens: 0 },
    });
  });

  test("groq-tool-call: the whole call in one chunk, usage on the finish chunk", async () => {
    const events = await collect(model);
    assert.deepEqual(toolCalls(events), [{ id: "tk85n1k4m", name: "weather", args: {} }]);
    const finish = last(events);
    assert.equal(finish.type, "finish");
    assert.deepEqual(finish.type === "finish" && finish.reason, { unified: "tool-calls", raw: "tool_calls" });
    assert.deepEqual(finish.type === "finish" && finish.usage, { inputTokens: 210, outputTokens: 15, totalTokens: 225, cachedInputTokens: 0, reasoningTokens: 0 });
  });

  test("groq-text: a long answer", async () => {
    const events = await collect(model, { messages: [{ role: "user", content: "Write an essay" }] });
    assert.equal(joined(events), fixtureText("openai-chat", "groq-text"));
    const finish = last(events);
    assert.equal(finish.type === "finish" && finish.reason.unified, "stop");
    assert.equal(finish.type === "finish" && finish.usage?.outputTokens, 662);
  });
});

describe("OpenAI Chat Completions non-streaming bodies (stream: false)", () => {
  test("the JSON body maps to the same events", async () => {
    const server = await startServer([json(200, fixtureJson("openai-chat", "alibaba-tool-call")), json(200, fixtureJson("openai-chat", "alibaba-text"))]);
    try {
      const model = openaiChat("qwen3-max", { baseURL: `${server.url}/v1`, apiKey: "test-key", priceAs: false, stream: false });
      const toolEvents = await collect(model);
      assert.deepEqual(toolCalls(toolEvents), [{ id: "call_962bfd2ab8f54b89a1161356", name: "weather", args: { location: "San Francisco" } }]);
      assert.deepEqual(last(toolEvents), {
        type: "finish",
        reason: { unified: "tool-calls", raw: "tool_calls" },
        usage: { inputTokens: 295, outputTokens: 22, totalTokens: 317, cachedInputTokens: 0, reasoningTokens: 0 },
      });
      const textEvents = await collect(model, { messages: [{ role: "user", content: "Invent a holiday" }] });
      assert.equal(joined(textEvents), fixtureJson("openai-chat", "alibaba-text").choices[0].message.content);
      assert.equal(server.requests[0].body.stream, false);
      assert.equal(server.requests[0].body.stream_options, undefined);
    } finally {
      await server.close();
    }
  });
});

describe("recorded OpenAI Responses streams", () => {
  let server: TestServer;
  let model: Model;
  before(async () => {
    server = await startServer([replay("openai-responses", "azure-text.1"), replay("openai-responses", "azure-tool-call.1")]);
    model = openaiResponses("gpt-5.1", { baseURL: `${server.url}/v1`, apiKey: "test-key", priceAs: false });
  });
  after(() => server.close());

  test("azure-text.1: a plain answer", async () => {
    const events = await collect(model, { messages: [{ role: "user", content: "Hello" }] });
    assert.equal(joined(events), fixtureText("openai-responses", "azure-text.1"));
    assert.equal(joined(events), "Hello");
    assert.equal(events[0].type === "response-start" && events[0].id, "resp_02ce8deeb6197db200698c5196e9588197a572bbea62d38cd1");
    const textEnd = events.find((event) => event.type === "text-end");
    assert.deepEqual(textEnd?.type === "text-end" && textEnd.providerData, { openaiResponses: { itemId: "msg_02ce8deeb6197db200698c5198ca0c81979bedbe6c98a8ab93" } });
    const finish = last(events);
    assert.equal(finish.type, "finish");
    assert.deepEqual(finish.type === "finish" && finish.reason, { unified: "stop", raw: "completed" });
    assert.equal(server.requests[0].path, "/v1/responses");
  });

  test("azure-tool-call.1: one function_call item with streamed arguments", async () => {
    const events = await collect(model);
    assert.deepEqual(toolCalls(events), [{ id: "call_H5DxLSFnsGhiROnUiDHmgyc8", name: "weather", args: { location: "San Francisco" } }]);
    const end = events.find((event) => event.type === "tool-call-end");
    assert.deepEqual(end?.type === "tool-call-end" && end.providerData, {
      openaiResponses: {
        item: {
          id: "fc_04041325ab8ae30400698c51c5468c8197a395f18875a5339f",
          type: "function_call",
          status: "completed",
          arguments: '{"location":"San Francisco"}',
          call_id: "call_H5DxLSFnsGhiROnUiDHmgyc8",
          name: "weather",
        },
      },
    });
    assert.deepEqual(last(events), {
      type: "finish",
      reason: { unified: "tool-calls", raw: "completed" },
      usage: { inputTokens: 45, outputTokens: 24, totalTokens: 69, cachedInputTokens: 0, reasoningTokens: 0 },
    });
  });
});

describe("recorded Anthropic Messages streams", () => {
  let server: TestServer;
  let model: Model;
  before(async () => {
    server = await startServer([replay("anthropic-messages", "anthropic-text"), replay("anthropic-messages", "anthropic-json-other-tool.1")]);
    model = anthropic("claude-test", { baseURL: server.url, apiKey: "test-key", priceAs: false });
  });
  after(() => server.close());

  test("anthropic-text: a plain answer", async () => {
    const events = await collect(model, { messages: [{ role: "user", content: "Hi, how are you?" }] });
    assert.equal(joined(events), fixtureText("anthropic-messages", "anthropic-text"));
    assert.equal(events[0].type === "response-start" && events[0].model, "claude-sonnet-4-5-20250929");
    assert.deepEqual(last(events), {
      type: "finish",
      reason: { unified: "stop", raw: "end_turn" },
      usage: { inputTokens: 12, outputTokens: 30, totalTokens: 42, cachedInputTokens: 0, reasoningTokens: 0 },
    });
    assert.equal(server.requests[0].path, "/v1/messages");
    const headers = server.requests[0].headers;
    assert.ok(headers["x-api-key"] === "test-key" || headers.authorization === "Bearer test-key", "the key is sent");
    assert.equal(server.requests[0].body.max_tokens, 4096);
  });

  test("anthropic-json-other-tool.1: tool_use with input_json_delta pieces and pings", async () => {
    const events = await collect(model);
    assert.deepEqual(toolCalls(events), [{ id: "toolu_019Zvehfe1XQWweT1pm7okyt", name: "weather", args: { location: "San Francisco" } }]);
    const end = events.find((event) => event.type === "tool-call-end");
    assert.deepEqual(end?.type === "tool-call-end" && end.providerData, {
      anthropic: { block: { type: "tool_use", id: "toolu_019Zvehfe1XQWweT1pm7okyt", name: "weather", input: { location: "San Francisco" } } },
    });
    assert.deepEqual(last(events), {
      type: "finish",
      reason: { unified: "tool-calls", raw: "tool_use" },
      usage: { inputTokens: 843, outputTokens: 28, totalTokens: 871, cachedInputTokens: 0, reasoningTokens: 0 },
    });
  });
});

/**
 * The normalized shape of a stream: event types in order, with each run of deltas of one part
 * counted once (a JSON body delivers a part in one delta, a stream in many).
 */
function eventShape(events: ModelEvent[]): string[] {
  const shape: string[] = [];
  for (const event of events) {
    const isDelta = event.type === "text-delta" || event.type === "reasoning-delta" || event.type === "tool-call-delta";
    if (isDelta && shape[shape.length - 1] === event.type) continue;
    shape.push(event.type);
  }
  return shape;
}

/** Each recorded stream next to the recorded JSON body of a similar request, through the same adapter. */
async function streamAndBody(folder: FixtureFolder, name: string, makeModel: (url: string, stream: boolean) => Model, request: ModelRequest) {
  const server = await startServer([replay(folder, name), json(200, fixtureJson(folder, name))]);
  try {
    const streamed = await collect(makeModel(server.url, true), request);
    const fromBody = await collect(makeModel(server.url, false), request);
    return { streamed, fromBody, requests: server.requests };
  } finally {
    await server.close();
  }
}

describe("OpenAI Responses non-streaming bodies (stream: false)", () => {
  const makeModel = (url: string, stream: boolean) => openaiResponses("gpt-5.1", { baseURL: `${url}/v1`, apiKey: "test-key", priceAs: false, stream });

  test("azure-text.1.json: the same events as the stream, with the body's text, item id and usage", async () => {
    const { streamed, fromBody, requests } = await streamAndBody("openai-responses", "azure-text.1", makeModel, { messages: [{ role: "user", content: "Hello" }] });
    assert.deepEqual(eventShape(fromBody), eventShape(streamed));
    const itemId = "msg_0d6bb044bb6ff37200698c51952e288193beb9044db4d8c810";
    const usage = { inputTokens: 11, outputTokens: 11, totalTokens: 22, cachedInputTokens: 0, reasoningTokens: 0 };
    assert.deepEqual(fromBody, [
      { type: "response-start", id: "resp_0d6bb044bb6ff37200698c51948054819385e24e2ad931ae6e", model: "gpt-5.1" },
      { type: "text-start", id: `${itemId}:0` },
      { type: "text-delta", id: `${itemId}:0`, delta: "Word" },
      { type: "text-end", id: `${itemId}:0`, providerData: { openaiResponses: { itemId } } },
      { type: "usage", usage },
      { type: "finish", reason: { unified: "stop", raw: "completed" }, usage },
    ]);
    assert.equal(requests[0].body.stream, true);
    assert.equal(requests[1].body.stream, false);
    assert.equal(requests[1].path, "/v1/responses");
  });

  test("azure-tool-call.1.json: the function_call item is kept whole, as in the stream", async () => {
    const { streamed, fromBody } = await streamAndBody("openai-responses", "azure-tool-call.1", makeModel, weatherRequest);
    assert.deepEqual(eventShape(fromBody), eventShape(streamed));
    assert.deepEqual(toolCalls(fromBody), [{ id: "call_YunNGbIwdVJ2i0y0Mybva4Pw", name: "weather", args: { location: "San Francisco" } }]);
    const end = fromBody.find((event) => event.type === "tool-call-end");
    assert.deepEqual(end?.type === "tool-call-end" && end.providerData, { openaiResponses: { item: fixtureJson("openai-responses", "azure-tool-call.1").output[0] } });
    assert.deepEqual(last(fromBody), {
      type: "finish",
      reason: { unified: "tool-calls", raw: "completed" },
      usage: { inputTokens: 45, outputTokens: 24, totalTokens: 69, cachedInputTokens: 0, reasoningTokens: 0 },
    });
  });

  test("an incomplete body (max_output_tokens) finishes with length; a refusal part ends with a refusal error", async () => {
    const body = fixtureJson("openai-responses", "azure-text.1");
    const incomplete = { ...body, status: "incomplete", incomplete_details: { reason: "max_output_tokens" } };
    const refused = { ...body, output: [{ ...body.output[0], content: [{ type: "refusal", refusal: "I can't help with that." }] }] };
    const server = await startServer([json(200, incomplete), json(200, refused)]);
    try {
      const model = makeModel(server.url, false);
      const cut = last(await collect(model, { messages: [{ role: "user", content: "Hello" }] }));
      assert.deepEqual(cut.type === "finish" && cut.reason, { unified: "length", raw: "max_output_tokens" });
      const refusal = last(await collect(model, { messages: [{ role: "user", content: "Hello" }] }));
      assert.equal(refusal.type === "error" && refusal.error.kind, "refusal");
      assert.match(refusal.type === "error" ? refusal.error.message : "", /I can't help with that/);
    } finally {
      await server.close();
    }
  });
});

describe("Anthropic Messages non-streaming bodies (stream: false)", () => {
  const makeModel = (url: string, stream: boolean) => anthropic("claude-test", { baseURL: url, apiKey: "test-key", priceAs: false, stream });

  test("anthropic-text.json: the same events as the stream, with the body's text and usage", async () => {
    const { streamed, fromBody, requests } = await streamAndBody("anthropic-messages", "anthropic-text", makeModel, {
      messages: [{ role: "user", content: "Hi, how are you?" }],
    });
    assert.deepEqual(eventShape(fromBody), eventShape(streamed));
    const text = fixtureJson("anthropic-messages", "anthropic-text").content[0].text;
    const usage = { inputTokens: 12, outputTokens: 29, totalTokens: 41, cachedInputTokens: 0, reasoningTokens: 0 };
    assert.deepEqual(fromBody, [
      { type: "response-start", id: "msg_01VdEjxAP5ahtHKrrRdNBteQ", model: "claude-sonnet-4-5-20250929" },
      { type: "text-start", id: "block-0" },
      { type: "text-delta", id: "block-0", delta: text },
      { type: "text-end", id: "block-0", providerData: { anthropic: { block: { type: "text", text } } } },
      { type: "usage", usage },
      { type: "finish", reason: { unified: "stop", raw: "end_turn" }, usage },
    ]);
    assert.equal(requests[0].body.stream, true);
    assert.equal(requests[1].body.stream, false);
    assert.equal(requests[1].path, "/v1/messages");
  });

  test("anthropic-json-other-tool.1.json: the tool_use block is kept whole, as in the stream", async () => {
    const { streamed, fromBody } = await streamAndBody("anthropic-messages", "anthropic-json-other-tool.1", makeModel, weatherRequest);
    assert.deepEqual(eventShape(fromBody), eventShape(streamed));
    assert.deepEqual(toolCalls(fromBody), [{ id: "toolu_01PQjhxo3eirCdKNvCJrKc8f", name: "weather", args: { location: "San Francisco" } }]);
    const end = fromBody.find((event) => event.type === "tool-call-end");
    assert.deepEqual(end?.type === "tool-call-end" && end.providerData, {
      anthropic: { block: { type: "tool_use", id: "toolu_01PQjhxo3eirCdKNvCJrKc8f", name: "weather", input: { location: "San Francisco" } } },
    });
    assert.deepEqual(last(fromBody), {
      type: "finish",
      reason: { unified: "tool-calls", raw: "tool_use" },
      usage: { inputTokens: 843, outputTokens: 28, totalTokens: 871, cachedInputTokens: 0, reasoningTokens: 0 },
    });
  });

  test("thinking and server-tool blocks of a body round-trip like the stream's", async () => {
    const body = {
      ...fixtureJson("anthropic-messages", "anthropic-text"),
      content: [
        { type: "thinking", thinking: "The user greets me.", signature: "EqQB-signature" },
        { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "greetings" } },
        { type: "text", text: "Hello!" },
      ],
    };
    const server = await startServer([json(200, body)]);
    try {
      const events = await collect(makeModel(server.url, false), { messages: [{ role: "user", content: "Hi" }] });
      assert.deepEqual(eventShape(events), ["response-start", "reasoning-start", "reasoning-delta", "reasoning-end", "text-start", "text-delta", "text-end", "usage", "finish"]);
      const reasoningEnd = events.find((event) => event.type === "reasoning-end");
      assert.deepEqual(reasoningEnd?.type === "reasoning-end" && reasoningEnd.providerData, { anthropic: { block: body.content[0] } });
      const finish = last(events);
      // The server tool block has no part: the whole block list is kept for the round trip.
      assert.deepEqual(finish.type === "finish" && finish.providerData, { anthropic: { content: body.content } });
    } finally {
      await server.close();
    }
  });

  test("a max_tokens too large for a non-streaming request ends with an error before any request", async () => {
    const server = await startServer([json(200, fixtureJson("anthropic-messages", "anthropic-text"))]);
    try {
      const model = anthropic("claude-test", { baseURL: server.url, apiKey: "test-key", priceAs: false, stream: false, defaultMaxTokens: 64_000 });
      const events = await collect(model, { messages: [{ role: "user", content: "Hi" }] });
      assert.equal(events.length, 1);
      const error = events[0].type === "error" ? events[0].error : undefined;
      assert.match(error?.message ?? "", /Streaming is required/);
      assert.equal(error?.retryable, false);
      assert.equal(server.requests.length, 0);
    } finally {
      await server.close();
    }
  });
});
