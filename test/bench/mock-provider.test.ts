import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import type { ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
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
