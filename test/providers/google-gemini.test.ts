// The native Gemini adapter against loopback servers: the recorded real streams (Gemini 2.x and 3),
// the request it sends (and sends back: thought signatures, function responses), its errors, and
// model selection by name, in process and through the CLI.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Agent } from "../../src/loop/agent.js";
import { type ModelRequest, generate } from "../../src/model/model.js";
import { google } from "../../src/providers/google/index.js";
import { resolveModel } from "../../src/providers/registry.js";
import { defineTool } from "../../src/tools/tool.js";
import { cleanEnv, spawnCli } from "../cli/helpers.js";
import { type Responder, collect, fixtureJson, fixtureLines, joined, json, last, replay, sse, startServer, weatherRequest } from "./fixture-server.js";
import { geminiFrames } from "./wire-scripts.js";

const weather = defineTool({
  name: "weather",
  description: "Weather at a location",
  parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
  execute: () => "72°F and sunny",
});

const recorded = (name: string) => fixtureLines("google-gemini", name).map((line) => JSON.parse(line));
const noRetry = { maxRetries: 0 };

describe("recorded Gemini streams", () => {
  test("google-text: the text, usage with thoughts as output, and the closing signature kept on the text part", async () => {
    const server = await startServer(replay("google-gemini", "google-text"));
    try {
      const model = google("gemini-3-pro-preview", { baseURL: server.url, apiKey: "test-key", priceAs: false });
      const response = await generate(model, { messages: [{ role: "user", content: "How many r's in strawberry?" }] });
      const lines = recorded("google-text");
      assert.equal(
        response.message.content.map((part) => (part.type === "text" ? part.text : "")).join(""),
        lines.map((line) => line.candidates[0].content.parts[0].text).join(""),
      );
      assert.deepEqual(response.finishReason, { unified: "stop", raw: "STOP" });
      assert.deepEqual(response.usage, { inputTokens: 9, outputTokens: 23 + 185, totalTokens: 217, cachedInputTokens: 0, reasoningTokens: 185 });
      const text = response.message.content[0];
      assert.equal(text.type, "text");
      assert.deepEqual(text.providerData, { google: { thoughtSignature: lines[2].candidates[0].content.parts[0].thoughtSignature } });
      // The request: the stream endpoint, the key in its header.
      assert.equal(server.requests[0].path, "/models/gemini-3-pro-preview:streamGenerateContent?alt=sse");
      assert.equal(server.requests[0].headers["x-goog-api-key"], "test-key");
      assert.deepEqual(server.requests[0].body, { contents: [{ role: "user", parts: [{ text: "How many r's in strawberry?" }] }] });
    } finally {
      await server.close();
    }
  });

  test("google-tool-call and google-tool-call-gemini3: one functionCall with its signature, finish tool-calls", async () => {
    for (const name of ["google-tool-call", "google-tool-call-gemini3"]) {
      const server = await startServer(replay("google-gemini", name));
      try {
        const events = await collect(google("gemini-3-pro-preview", { baseURL: server.url, apiKey: "test-key", priceAs: false }));
        const ends = events.filter((event) => event.type === "tool-call-end");
        assert.equal(ends.length, 1, name);
        assert.equal(ends[0].name, "weather");
        assert.deepEqual(JSON.parse(ends[0].arguments), { location: "San Francisco" });
        assert.deepEqual(ends[0].providerData, { google: { thoughtSignature: recorded(name)[0].candidates[0].content.parts[0].thoughtSignature } });
        const finish = last(events);
        assert.equal(finish.type === "finish" && finish.reason.unified, "tool-calls", name);
        assert.equal(events.filter((event) => event.type === "text-start").length, 0, `${name}: the empty closing text part is no answer`);
      } finally {
        await server.close();
      }
    }
  });

  test("google-reasoning: thinking tokens reported as reasoning", async () => {
    const server = await startServer(replay("google-gemini", "google-reasoning"));
    try {
      const events = await collect(google("gemini-3-pro-preview", { baseURL: server.url, apiKey: "test-key", priceAs: false }), { messages: [{ role: "user", content: "r's?" }] });
      assert.match(joined(events), /^There are \*\*3\*\* "r"s in strawberry\./);
      const finish = last(events);
      assert.deepEqual(finish.type === "finish" && finish.usage, { inputTokens: 9, outputTokens: 29 + 256, totalTokens: 294, cachedInputTokens: 0, reasoningTokens: 256 });
    } finally {
      await server.close();
    }
  });

  test("the non-streaming bodies (stream: false) map to the same parts, from :generateContent", async () => {
    const server = await startServer([json(200, fixtureJson("google-gemini", "google-tool-call-gemini3")), json(200, fixtureJson("google-gemini", "google-text"))]);
    try {
      const model = google("gemini-3-pro-preview", { baseURL: server.url, apiKey: "test-key", stream: false });
      const call = await generate(model, weatherRequest);
      const part = call.message.content[0];
      assert.equal(part.type, "tool-call");
      assert.deepEqual(part.type === "tool-call" && part.providerData, {
        google: { thoughtSignature: fixtureJson("google-gemini", "google-tool-call-gemini3").candidates[0].content.parts[0].thoughtSignature },
      });
      assert.equal(call.finishReason.unified, "tool-calls");
      const text = await generate(model, { messages: [{ role: "user", content: "r's?" }] });
      assert.equal(text.message.content[0].type === "text" && text.message.content[0].text, fixtureJson("google-gemini", "google-text").candidates[0].content.parts[0].text);
      assert.equal(server.requests[0].path, "/models/gemini-3-pro-preview:generateContent");
    } finally {
      await server.close();
    }
  });
});

describe("Gemini requests", () => {
  test("a Gemini 3 tool turn: the next request carries the call with its thoughtSignature unchanged, and the functionResponse", async () => {
    const server = await startServer([replay("google-gemini", "google-tool-call-gemini3"), replay("google-gemini", "google-text")]);
    try {
      const agent = new Agent({ name: "g", instructions: "Be brief.", model: google("gemini-3-pro-preview", { baseURL: server.url, apiKey: "k" }), tools: [weather] });
      const result = await agent.run("What is the weather in San Francisco?");
      assert.equal(result.state, "COMPLETED", result.reason);
      const second = server.requests[1].body;
      const signature = recorded("google-tool-call-gemini3")[0].candidates[0].content.parts[0].thoughtSignature;
      assert.deepEqual(second.systemInstruction, { parts: [{ text: "Be brief." }] });
      assert.deepEqual(second.contents, [
        { role: "user", parts: [{ text: "What is the weather in San Francisco?" }] },
        { role: "model", parts: [{ functionCall: { name: "weather", args: { location: "San Francisco" } }, thoughtSignature: signature }] },
        { role: "user", parts: [{ functionResponse: { name: "weather", response: { result: "72°F and sunny" } } }] },
      ]);
      assert.deepEqual(second.tools, [
        { functionDeclarations: [{ name: "weather", description: "Weather at a location", parametersJsonSchema: weather.parameters }] },
      ]);
    } finally {
      await server.close();
    }
  });

  test("parallel calls: every call with its id, thoughts and text sent back in order, all responses in one content", async () => {
    const turn = {
      reasoning: "Two lookups.",
      text: "Checking.",
      toolCalls: [
        { id: "c1", name: "weather", arguments: { location: "Paris" } },
        { id: "c2", name: "weather", arguments: { location: "Oslo" } },
      ],
    };
    const server = await startServer([sse(geminiFrames(turn)), sse(geminiFrames({ text: "Both sunny." }))]);
    try {
      const agent = new Agent({ name: "g", model: google("gemini-2.5-flash", { baseURL: server.url, apiKey: "k" }), tools: [weather] });
      const run = agent.run("Paris and Oslo?");
      const reasoning: string[] = [];
      for await (const event of run) if (event.type === "reasoning-delta") reasoning.push(event.delta);
      const result = await run;
      assert.equal(result.text, "Both sunny.");
      assert.equal(reasoning.join(""), "Two lookups.");
      const [, model, responses] = server.requests[1].body.contents;
      assert.deepEqual(model.parts, [
        { text: "Two lookups.", thought: true },
        { text: "Checking." },
        { functionCall: { name: "weather", args: { location: "Paris" }, id: "c1" }, thoughtSignature: "sig-c1" },
        { functionCall: { name: "weather", args: { location: "Oslo" }, id: "c2" } },
      ]);
      assert.deepEqual(responses, {
        role: "user",
        parts: [
          { functionResponse: { name: "weather", response: { result: "72°F and sunny" }, id: "c1" } },
          { functionResponse: { name: "weather", response: { result: "72°F and sunny" }, id: "c2" } },
        ],
      });
    } finally {
      await server.close();
    }
  });

  test("options: generationConfig, reasoning as thinkingConfig, structured output through responseJsonSchema, tool choice", async () => {
    const server = await startServer([sse(geminiFrames({ text: "{}" })), sse(geminiFrames({ text: "{}" }))]);
    try {
      const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
      const request: ModelRequest = {
        ...weatherRequest,
        toolChoice: { type: "tool", name: "weather" },
        responseFormat: { type: "json_schema", name: "city", schema },
        options: { temperature: 0.2, maxOutputTokens: 100, stopSequences: ["END"], reasoning: { budgetTokens: 512 } },
      };
      await collect(google("gemini-2.5-flash", { baseURL: server.url, apiKey: "k" }), request);
      const body = server.requests[0].body;
      assert.deepEqual(body.generationConfig, {
        temperature: 0.2,
        maxOutputTokens: 100,
        stopSequences: ["END"],
        responseMimeType: "application/json",
        responseJsonSchema: schema,
        thinkingConfig: { includeThoughts: true, thinkingBudget: 512 },
      });
      assert.deepEqual(body.toolConfig, { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["weather"] } });
      await collect(google("gemini-3-pro-preview", { baseURL: server.url, apiKey: "k" }), { ...weatherRequest, options: { reasoning: { effort: "low" } } });
      assert.deepEqual(server.requests[1].body.generationConfig, { thinkingConfig: { includeThoughts: true, thinkingLevel: "low" } });
    } finally {
      await server.close();
    }
  });
});

describe("Gemini finish reasons and errors", () => {
  const chunk = (parts: unknown[], finishReason?: string) => `data: ${JSON.stringify({ candidates: [{ content: { parts, role: "model" }, index: 0, finishReason }] })}\n\n`;

  test("a safety block is content-filter; a blocked prompt too; MAX_TOKENS is length", async () => {
    const blockedPrompt = `data: ${JSON.stringify({ promptFeedback: { blockReason: "PROHIBITED_CONTENT" }, usageMetadata: { promptTokenCount: 4, totalTokenCount: 4 } })}\n\n`;
    const server = await startServer([
      sse([chunk([{ text: "Part" }]), chunk([], "SAFETY")]),
      sse([blockedPrompt]),
      sse([chunk([{ text: "Long" }], "MAX_TOKENS")]),
    ]);
    try {
      const model = google("gemini-2.5-flash", { baseURL: server.url, apiKey: "k" });
      const safety = last(await collect(model));
      assert.deepEqual(safety.type === "finish" && safety.reason, { unified: "content-filter", raw: "SAFETY" });
      const blocked = last(await collect(model));
      assert.deepEqual(blocked.type === "finish" && blocked.reason, { unified: "content-filter", raw: "PROHIBITED_CONTENT" });
      const length = last(await collect(model));
      assert.deepEqual(length.type === "finish" && length.reason, { unified: "length", raw: "MAX_TOKENS" });
    } finally {
      await server.close();
    }
  });

  test("a 429 with RetryInfo is retried after exactly the delay it asks for", async () => {
    const quota = {
      error: {
        code: 429,
        message: "You exceeded your current quota.",
        status: "RESOURCE_EXHAUSTED",
        details: [
          { "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [] },
          { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "0.2s" },
        ],
      },
    };
    const server = await startServer([json(429, quota), sse(geminiFrames({ text: "Hello" }))]);
    try {
      const delays: number[] = [];
      const model = google("gemini-2.5-flash", { baseURL: server.url, apiKey: "k", retry: { maxRetries: 1, onRetry: ({ delayMs, error }) => delays.push(delayMs) && error.kind === "rate_limit" } });
      const events = await collect(model);
      assert.equal(joined(events), "Hello");
      assert.deepEqual(delays, [200]);
      const only = await startServer(json(429, quota));
      try {
        const failed = last(await collect(google("gemini-2.5-flash", { baseURL: only.url, apiKey: "k", retry: noRetry })));
        assert.equal(failed.type, "error");
        assert.equal(failed.type === "error" && failed.error.kind, "rate_limit");
        assert.equal(failed.type === "error" && failed.error.retryAfterMs, 200);
        assert.match(failed.type === "error" ? failed.error.message : "", /google 429: You exceeded your current quota/);
      } finally {
        await only.close();
      }
    } finally {
      await server.close();
    }
  });

  test("a bad key (400 API_KEY_INVALID) is an authentication error naming the variable; an error inside the stream maps by its code", async () => {
    const badKey = {
      error: {
        code: 400,
        message: "API key not valid. Please pass a valid API key.",
        status: "INVALID_ARGUMENT",
        details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "API_KEY_INVALID", domain: "googleapis.com" }],
      },
    };
    const streamed: Responder = sse([chunk([{ text: "Hi" }]), `data: ${JSON.stringify({ error: { code: 503, message: "The model is overloaded.", status: "UNAVAILABLE" } })}\n\n`]);
    const server = await startServer([json(400, badKey), streamed]);
    try {
      const model = google("gemini-2.5-flash", { baseURL: server.url, apiKey: "k", retry: noRetry });
      const auth = last(await collect(model));
      assert.equal(auth.type === "error" && auth.error.kind, "authentication");
      assert.match(auth.type === "error" ? auth.error.message : "", /set GEMINI_API_KEY to a valid key/);
      const events = await collect(model);
      assert.equal(joined(events), "Hi");
      const overloaded = last(events);
      assert.equal(overloaded.type === "error" && overloaded.error.kind, "server");
      assert.equal(overloaded.type === "error" && overloaded.error.status, 503);
    } finally {
      await server.close();
    }
  });

  test("a stream that ends without a finish reason is a network error", async () => {
    const server = await startServer(sse([chunk([{ text: "Half" }])]));
    try {
      const failed = last(await collect(google("gemini-2.5-flash", { baseURL: server.url, apiKey: "k", retry: noRetry })));
      assert.equal(failed.type === "error" && failed.error.kind, "network");
    } finally {
      await server.close();
    }
  });
});

describe("google:<model> by name", () => {
  test("resolveModel reads GOOGLE_GEMINI_BASE_URL and GEMINI_API_KEY (GOOGLE_API_KEY too); a missing key names GEMINI_API_KEY", async () => {
    const server = await startServer([sse(geminiFrames({ text: "Hi" })), sse(geminiFrames({ text: "Hi" }))]);
    try {
      const model = await resolveModel("google:gemini-2.5-flash", { GOOGLE_GEMINI_BASE_URL: server.url, GEMINI_API_KEY: "gem-key" });
      assert.equal(model.provider, "google");
      assert.equal((await generate(model, { messages: [{ role: "user", content: "hi" }] })).finishReason.unified, "stop");
      assert.equal(server.requests[0].headers["x-goog-api-key"], "gem-key");
      const other = await resolveModel("google:gemini-2.5-flash", { GOOGLE_GEMINI_BASE_URL: server.url, GOOGLE_API_KEY: "google-key" });
      await generate(other, { messages: [{ role: "user", content: "hi" }] });
      assert.equal(server.requests[1].headers["x-goog-api-key"], "google-key");
    } finally {
      await server.close();
    }
    await assert.rejects(resolveModel("google:gemini-2.5-flash", {}), /google: no API key: set GEMINI_API_KEY/);
  });

  test("agentloop run --model google:<model> against the server GOOGLE_GEMINI_BASE_URL names", async () => {
    const server = await startServer(sse(geminiFrames({ text: "Hello from Gemini", usage: { input: 5, output: 3 } })));
    try {
      const cli = spawnCli(["run", "hi", "--model", "google:gemini-2.5-flash"], cleanEnv({ GOOGLE_GEMINI_BASE_URL: server.url, GEMINI_API_KEY: "k", NO_COLOR: "1" }));
      const { code } = await cli.exited;
      assert.equal(code, 0, cli.stderr());
      assert.equal(cli.stdout(), "Hello from Gemini\n");
      assert.match(cli.stderr(), /COMPLETED · 1 model call/);
      assert.equal(server.requests[0].path, "/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    } finally {
      await server.close();
    }
  });
});

describe("Gemini malformed streams", () => {
  test("a chunk that is not JSON or not an object ends the call with a server error for malformed data (not retried)", async () => {
    for (const bad of ["data: null\n\n", "data: {broken\n\n"]) {
      const server = await startServer(sse([`data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text: "Hi" }] }, index: 0 }] })}\n\n`, bad]));
      try {
        const events = await collect(google("gemini-2.5-flash", { baseURL: server.url, apiKey: "k", retry: { maxRetries: 2, initialDelayMs: 1 } }));
        assert.equal(joined(events), "Hi");
        const failed = last(events);
        assert.equal(failed.type === "error" && failed.error.kind, "server", bad);
        assert.match(failed.type === "error" ? failed.error.message : "", /malformed data/);
        assert.equal(server.requests.length, 1);
      } finally {
        await server.close();
      }
    }
  });
});
