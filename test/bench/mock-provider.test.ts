import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { Agent, defineTool } from "../../src/index.js";
import { google } from "../../src/providers/google/index.js";
import { DEFAULT_FINAL_TEXT, type MockProvider, scriptedArguments, scriptedCallId, startMockProvider, spawnMockProvider } from "../../bench/mock-provider.js";

const tools: ChatCompletionTool[] = [
  { type: "function", function: { name: "lookup", description: "Looks a value up.", parameters: { type: "object", properties: { n: { type: "integer" } } } } },
];

describe("bench mock provider", () => {
  let provider: MockProvider;
  let client: OpenAI;

  before(async () => {
    provider = await startMockProvider({
      scripts: {
        "three-turns": { toolTurns: 3 },
        "wave-of-four": { toolTurns: 1, toolsPerTurn: 4, finalText: "Four values." },
        "slow-chunks": { toolTurns: 0, finalText: "one two three", chunkDelayMs: 300 },
      },
    });
    client = new OpenAI({ baseURL: provider.baseURL, apiKey: "test", maxRetries: 0 });
  });
  after(() => provider.close());

  /** Plays the whole scripted conversation with the official SDK; returns the tool calls seen and the answer. */
  async function converse(model: string, stream: boolean) {
    const messages: ChatCompletionMessageParam[] = [{ role: "user", content: "go" }];
    const seen: Array<{ id: string; name: string; arguments: string }> = [];
    for (let turn = 0; turn < 10; turn++) {
      let content = "";
      const calls: Array<{ id: string; name: string; arguments: string }> = [];
      let finishReason: string | null = null;
      if (stream) {
        for await (const chunk of await client.chat.completions.create({ model, messages, tools, stream: true })) {
          const choice = chunk.choices[0];
          if (!choice) continue;
          content += choice.delta.content ?? "";
          for (const call of choice.delta.tool_calls ?? []) {
            calls[call.index] ??= { id: "", name: "", arguments: "" };
            if (call.id) calls[call.index].id = call.id;
            if (call.function?.name) calls[call.index].name = call.function.name;
            calls[call.index].arguments += call.function?.arguments ?? "";
          }
          finishReason = choice.finish_reason ?? finishReason;
        }
      } else {
        const completion = await client.chat.completions.create({ model, messages, tools });
        const message = completion.choices[0].message;
        content = message.content ?? "";
        for (const call of message.tool_calls ?? []) if (call.type === "function") calls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments });
        finishReason = completion.choices[0].finish_reason;
      }
      if (calls.length === 0) {
        assert.equal(finishReason, "stop");
        return { seen, content, turns: turn + 1 };
      }
      assert.equal(finishReason, "tool_calls");
      seen.push(...calls);
      messages.push({ role: "assistant", content: null, tool_calls: calls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } })) });
      for (const call of calls) messages.push({ role: "tool", tool_call_id: call.id, content: `value of ${call.arguments}` });
    }
    throw new Error("the script never gave a final answer");
  }

  for (const stream of [false, true]) {
    test(`serves N tool-calling turns then the final answer (${stream ? "streaming" : "JSON"})`, async () => {
      const { seen, content, turns } = await converse("three-turns", stream);
      assert.equal(turns, 4);
      assert.equal(content, DEFAULT_FINAL_TEXT);
      assert.deepEqual(
        seen,
        [0, 1, 2].map((turn) => ({ id: scriptedCallId(turn, 0), name: "lookup", arguments: JSON.stringify(scriptedArguments(turn, 0)) })),
      );
    });
  }

  test("a wave turn carries all its tool calls, and the answer needs all their results", async () => {
    const { seen, content } = await converse("wave-of-four", true);
    assert.deepEqual(
      seen.map((call) => call.id),
      [0, 1, 2, 3].map((index) => scriptedCallId(0, index)),
    );
    assert.equal(content, "Four values.");
    // Three results for a four-call wave is a broken client: the server says so.
    await assert.rejects(
      client.chat.completions.create({
        model: "wave-of-four",
        messages: [
          { role: "user", content: "go" },
          { role: "tool", tool_call_id: "a", content: "1" },
          { role: "tool", tool_call_id: "b", content: "2" },
          { role: "tool", tool_call_id: "c", content: "3" },
        ],
      }),
      (error: unknown) => error instanceof OpenAI.BadRequestError && /multiple of 4 tool results/.test(error.message),
    );
  });

  test("streams with a delay between writes, the first answer token in the first write", async () => {
    const response = await fetch(`${provider.baseURL}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "slow-chunks", stream: true, messages: [{ role: "user", content: "go" }] }),
    });
    const headersAt = performance.now();
    const arrivals: number[] = [];
    let text = "";
    let buffer = "";
    for await (const bytes of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += Buffer.from(bytes).toString("utf8");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const data = buffer.slice(6, end);
        buffer = buffer.slice(end + 2);
        if (data === "[DONE]") continue;
        const delta = (JSON.parse(data) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content;
        if (delta) {
          arrivals.push(performance.now() - headersAt);
          text += delta;
        }
      }
    }
    assert.equal(text, "one two three");
    // 300 ms pauses separate the words; the first word came with the headers, not after a pause
    // (200 ms leaves a loaded machine room while still telling the two apart).
    assert.ok(arrivals[0] < 200, `first token ${arrivals[0]} ms after the headers`);
    // Two 300 ms pauses before the last word; a client slowed by a busy machine may read the first
    // word late (the pause already running), so only one whole pause is certain.
    assert.ok(arrivals[2] - arrivals[0] >= 300, `first token at ${arrivals[0]} ms, last at ${arrivals[2]} ms`);
  });

  test("unknown models, bad bodies and unknown routes get OpenAI-style errors and are counted", async () => {
    const before = await provider.stats();
    await assert.rejects(
      client.chat.completions.create({ model: "nope", messages: [{ role: "user", content: "go" }] }),
      (error: unknown) => error instanceof OpenAI.NotFoundError && /The model 'nope' does not exist/.test(error.message),
    );
    const notJson = await fetch(`${provider.baseURL}/chat/completions`, { method: "POST", body: "hello" });
    assert.equal(notJson.status, 400);
    assert.match(((await notJson.json()) as { error: { message: string } }).error.message, /JSON object/);
    const noMessages = await fetch(`${provider.baseURL}/chat/completions`, { method: "POST", body: '{"model":"three-turns"}' });
    assert.equal(noMessages.status, 400);
    await noMessages.body?.cancel();
    const noRoute = await fetch(`${provider.baseURL}/embeddings`, { method: "POST", body: "{}" });
    assert.equal(noRoute.status, 404);
    await noRoute.body?.cancel();
    const after = await provider.stats();
    assert.equal(after.errors - before.errors, 4);
  });

  /** Plays the script with agentloop's native Gemini adapter; returns the tool calls' arguments and the answer. */
  async function converseGemini(model: string, stream: boolean) {
    const seen: unknown[] = [];
    const lookup = defineTool({
      name: "lookup",
      description: "Looks a value up.",
      parameters: { type: "object", properties: { n: { type: "integer" }, i: { type: "integer" } }, required: ["n", "i"] },
      execute: (args) => {
        seen.push(args);
        return `value of ${JSON.stringify(args)}`;
      },
    });
    const agent = new Agent({
      name: "gemini-mock",
      model: google(model, { baseURL: provider.geminiBaseURL, apiKey: "test", stream }),
      tools: [lookup],
      maxTurns: 10,
    });
    const result = await agent.run("go");
    assert.equal(result.state, "COMPLETED", `${result.reason} ${result.error?.message ?? ""}`);
    return { seen, text: result.text };
  }

  for (const stream of [false, true]) {
    test(`speaks Gemini's native API to agentloop's google adapter: waves of functionCall parts, then text (${stream ? "streamGenerateContent?alt=sse" : "generateContent"})`, async () => {
      const before = await provider.stats();
      const three = await converseGemini("three-turns", stream);
      assert.equal(three.text, DEFAULT_FINAL_TEXT);
      assert.deepEqual(three.seen, [0, 1, 2].map((turn) => scriptedArguments(turn, 0)));
      const wave = await converseGemini("wave-of-four", stream);
      assert.equal(wave.text, "Four values.");
      assert.deepEqual(wave.seen, [0, 1, 2, 3].map((index) => scriptedArguments(0, index)));
      const after = await provider.stats();
      assert.deepEqual({ requests: after.requests - before.requests, errors: after.errors - before.errors }, { requests: 6, errors: 0 });
    });
  }

  test("streamed Gemini chunks are whole responses: the calls of a wave in one candidate, the answer word by word, STOP on the last", async () => {
    const url = `${provider.geminiBaseURL}/models/wave-of-four:streamGenerateContent?alt=sse`;
    const events = async (body: unknown) => {
      const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      assert.equal(response.status, 200);
      assert.match(response.headers.get("content-type") ?? "", /text\/event-stream/);
      return (await response.text())
        .split("\r\n\r\n")
        .filter(Boolean)
        .map((event) => JSON.parse(event.replace(/^data: /, "")) as { candidates: Array<{ content: { parts: any[]; role: string }; finishReason?: string }> });
    };
    const wave = await events({ contents: [{ role: "user", parts: [{ text: "go" }] }] });
    assert.equal(wave.length, 1);
    assert.deepEqual(wave[0].candidates[0].content, {
      role: "model",
      parts: [0, 1, 2, 3].map((index) => ({ functionCall: { name: "lookup", args: scriptedArguments(0, index) } })),
    });
    assert.equal(wave[0].candidates[0].finishReason, "STOP");
    const results = [0, 1, 2, 3].map(() => ({ functionResponse: { name: "lookup", response: { result: "v" } } }));
    const answer = await events({ contents: [{ role: "user", parts: [{ text: "go" }] }, { role: "user", parts: results }] });
    assert.deepEqual(answer.map((chunk) => chunk.candidates[0].content.parts[0].text), ["Four ", "values."]);
    assert.deepEqual(answer.map((chunk) => chunk.candidates[0].finishReason), [undefined, "STOP"]);
  });

  test("Gemini requests that do not add up get Gemini-style errors, which the adapter reports", async () => {
    const before = await provider.stats();
    const post = (path: string, body: string) => fetch(`${provider.geminiBaseURL}/models/${path}`, { method: "POST", body });
    const threeOfFour = await post(
      "wave-of-four:generateContent",
      JSON.stringify({ contents: [{ role: "user", parts: [1, 2, 3].map(() => ({ functionResponse: { name: "lookup", response: {} } })) }] }),
    );
    assert.equal(threeOfFour.status, 400);
    assert.deepEqual(((await threeOfFour.json()) as { error: unknown }).error, {
      code: 400,
      status: "INVALID_ARGUMENT",
      message: "expected a multiple of 4 functionResponse parts (at most 4), got 3",
    });
    const noSse = await post("three-turns:streamGenerateContent", '{"contents":[]}');
    assert.equal(noSse.status, 400);
    assert.match(((await noSse.json()) as { error: { message: string } }).error.message, /alt=sse/);
    const noContents = await post("three-turns:generateContent", "{}");
    assert.equal(noContents.status, 400);
    await noContents.body?.cancel();
    const result = await new Agent({ name: "x", model: google("nope", { baseURL: provider.geminiBaseURL, apiKey: "test" }) }).run("go");
    assert.equal(result.state, "FAILED");
    assert.match(result.error?.message ?? "", /models\/nope is not found/);
    const after = await provider.stats();
    assert.equal(after.errors - before.errors, 4);
  });

  test("rejects invalid scripts with a clear error", async () => {
    await assert.rejects(startMockProvider({ scripts: { bad: { toolTurns: -1 } } }), /toolTurns must be an integer >= 0/);
    await assert.rejects(startMockProvider({ scripts: { bad: { toolsPerTurn: 0 } } }), /toolsPerTurn must be an integer >= 1/);
  });

  test("runs as a child process and stops when closed", async () => {
    const child = await spawnMockProvider({ scripts: { one: { toolTurns: 1 } } });
    try {
      const childClient = new OpenAI({ baseURL: child.baseURL, apiKey: "test", maxRetries: 0 });
      const completion = await childClient.chat.completions.create({ model: "one", messages: [{ role: "user", content: "go" }] });
      assert.equal(completion.choices[0].message.tool_calls?.[0]?.id, scriptedCallId(0, 0));
      assert.deepEqual(await child.stats(), { requests: 1, errors: 0 });
    } finally {
      await child.close();
    }
    await assert.rejects(fetch(`${child.baseURL}/chat/completions`, { method: "POST", body: "{}" }));
  });
});
