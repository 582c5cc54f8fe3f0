// Cost from the price table: per call (usage events), per run (RunResult), in `agentloop run`'s
// summary; cached input priced at its own rates; an unknown model is "unknown", never 0.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { calcPrice } from "@pydantic/genai-prices";
import { Agent } from "../../src/loop/agent.js";
import type { LoopEvent } from "../../src/loop/events.js";
import { generate } from "../../src/model/model.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { priceIdentity } from "../../src/providers/cost.js";
import { google } from "../../src/providers/google/index.js";
import { openaiChat } from "../../src/providers/openai/index.js";
import { addUsage, emptyUsage, formatCost } from "../../src/usage.js";
import { cleanEnv, runCli, spawnCli } from "../cli/helpers.js";
import { sse, startServer } from "./fixture-server.js";
import { anthropicFrames, chatFrames, geminiFrames } from "./wire-scripts.js";

/** The table's own rates for a model (dollars per million tokens; the base tier), to price by hand. */
function rates(providerId: string, model: string): Record<string, number> {
  const found = calcPrice({ input_tokens: 1, output_tokens: 1 }, model, { providerId });
  assert.ok(found, `${providerId}:${model} is in the price table`);
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(found.model_price)) out[key] = typeof value === "object" ? (value as { base: number }).base : (value as number);
  return out;
}

describe("cost per call and per run", () => {
  test("Anthropic behind a gateway: uncached input, cache reads, cache writes and output each at their own rate; the run sums its calls", async () => {
    const usage = { input: 1000, output: 50, cached: 400 };
    const withWrites = (frames: string[]) => frames.map((frame) => frame.replace('"cache_creation_input_tokens":0', '"cache_creation_input_tokens":200'));
    const server = await startServer([
      sse(withWrites(anthropicFrames({ toolCalls: [{ id: "toolu_1", name: "lookup", arguments: {} }], usage }))),
      sse(withWrites(anthropicFrames({ text: "Done.", usage }))),
    ]);
    try {
      // ANTHROPIC_BASE_URL pointing at a gateway: still priced as Anthropic.
      const model = anthropic("claude-sonnet-4-5", { baseURL: server.url, apiKey: "k" });
      const lookup = { name: "lookup", description: "x", parameters: { type: "object", properties: {} }, execute: () => "ok" };
      const agent = new Agent({ name: "c", model, tools: [lookup] });
      const run = agent.run("go");
      const events: LoopEvent[] = [];
      for await (const event of run) events.push(event);
      const result = await run;
      const price = rates("anthropic", "claude-sonnet-4-5");
      // 1,200 input tokens: 600 uncached (input_tokens), 400 read, 200 written; 50 out.
      const perCall = (600 * price.input_mtok + 400 * price.cache_read_mtok + 200 * price.cache_write_mtok + 50 * price.output_mtok) / 1e6;
      const calls = events.filter((event) => event.type === "usage");
      assert.equal(calls.length, 2);
      for (const call of calls) assert.ok(call.type === "usage" && Math.abs((call.usage.cost as number) - perCall) < 1e-12, `per call ${JSON.stringify(call)}`);
      assert.ok(typeof result.usage.cost === "number" && Math.abs(result.usage.cost - 2 * perCall) < 1e-12, `run ${result.usage.cost}`);
      const last = calls.at(-1);
      assert.ok(last?.type === "usage" && Math.abs((last.total.cost as number) - 2 * perCall) < 1e-12, "the usage event's running total has the cost");
    } finally {
      await server.close();
    }
  });

  test("an unknown model, or a compatible server the table cannot name, is \"unknown\" (never 0); priceAs: false prices nothing", async () => {
    const server = await startServer([sse(chatFrames({ text: "hi", usage: { input: 5, output: 2 } })), sse(chatFrames({ text: "hi", usage: { input: 5, output: 2 } })), sse(geminiFrames({ text: "hi", usage: { input: 5, output: 2 } }))]);
    try {
      const local = await generate(openaiChat("llama3.2", { baseURL: `${server.url}/v1` }), { messages: [{ role: "user", content: "hi" }] });
      assert.equal(local.usage.cost, "unknown");
      const none = await generate(openaiChat("gpt-4.1", { baseURL: `${server.url}/v1`, priceAs: false }), { messages: [{ role: "user", content: "hi" }] });
      assert.equal(none.usage.cost, undefined);
      const unknownGemini = await generate(google("gemini-9-ultra-imaginary", { baseURL: server.url, apiKey: "k" }), { messages: [{ role: "user", content: "hi" }] });
      assert.equal(unknownGemini.usage.cost, "unknown");
    } finally {
      await server.close();
    }
  });

  test("sums: an unknown part makes the sum unknown; formatting", () => {
    const priced = { ...emptyUsage(), cost: 0.002 };
    assert.equal(addUsage(priced, { ...emptyUsage(), cost: 0.003 }).cost, 0.005);
    assert.equal(addUsage(priced, { ...emptyUsage(), cost: "unknown" }).cost, "unknown");
    assert.equal(addUsage(emptyUsage(), emptyUsage()).cost, undefined);
    assert.equal(formatCost("unknown"), "cost unknown");
    assert.equal(formatCost(0.0012345), "$0.0012");
    assert.equal(formatCost(1.5), "$1.50");
    // Below a millionth of a dollar (a cheap model's one-token turn) still plain decimals, not exponent notation.
    assert.deepEqual([1.23e-7, 4.5e-9, 0.00999, 0.01].map(formatCost), ["$0.00000012", "$0.0000000045", "$0.01", "$0.01"]);
  });

  test("which provider prices a call: the official API's, a URL naming one, then the adapter's own; a compatible server only by URL", () => {
    assert.deepEqual(priceIdentity("openai-responses", true, undefined), [{ providerId: "openai" }]);
    assert.deepEqual(priceIdentity("google", false, "http://127.0.0.1:1"), [{ providerApiUrl: "http://127.0.0.1:1" }, { providerId: "google" }]);
    assert.deepEqual(priceIdentity("openai-compatible", false, "https://api.deepseek.com/v1"), [{ providerApiUrl: "https://api.deepseek.com/v1" }]);
    assert.deepEqual(priceIdentity("anthropic", false, "http://gateway", "openai"), [{ providerId: "openai" }]);
    assert.equal(calcPrice({ input_tokens: 10, output_tokens: 1 }, "deepseek-chat", { providerApiUrl: "https://api.deepseek.com/v1" })?.provider.id, "deepseek");
  });
});

describe("agentloop run shows the cost", () => {
  test("google:gemini-2.5-flash: the summary ends with the run's cost in dollars", async () => {
    const server = await startServer(sse(geminiFrames({ text: "Hello", usage: { input: 2000, output: 300 } })));
    try {
      const cli = spawnCli(["run", "hi", "--model", "google:gemini-2.5-flash"], cleanEnv({ GOOGLE_GEMINI_BASE_URL: server.url, GEMINI_API_KEY: "k", NO_COLOR: "1" }));
      const { code } = await cli.exited;
      assert.equal(code, 0, cli.stderr());
      const price = rates("google", "gemini-2.5-flash");
      const expected = formatCost((2000 * price.input_mtok + 300 * price.output_mtok) / 1e6);
      assert.match(expected, /^\$0\.\d+$/);
      assert.equal(cli.stderr(), `COMPLETED · 1 model call · 0 waves · 0 tool calls · 2300 tokens · ${expected}\n`);
    } finally {
      await server.close();
    }
  });

  test("agentloop chat: the chat's cost in its closing line", async () => {
    const server = await startServer([sse(geminiFrames({ text: "One", usage: { input: 1000, output: 100 } })), sse(geminiFrames({ text: "Two", usage: { input: 3000, output: 200 } }))]);
    try {
      const env = cleanEnv({ GOOGLE_GEMINI_BASE_URL: server.url, GEMINI_API_KEY: "k", NO_COLOR: "1", MEMORY_TYPE: "memory" });
      const result = await runCli(["chat", "--model", "google:gemini-2.5-flash"], env, "first\nsecond\n/exit\n");
      assert.equal(result.code, 0, result.stderr);
      const price = rates("google", "gemini-2.5-flash");
      const expected = formatCost((4000 * price.input_mtok + 300 * price.output_mtok) / 1e6);
      assert.match(result.stderr, new RegExp(`bye · \\${expected} in this chat · continue later with`));
    } finally {
      await server.close();
    }
  });
});
