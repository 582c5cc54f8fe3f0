// A long run must not pile abort listeners onto the caller's signal: the official SDK never
// removes the listener it adds to the signal it is given, so the adapters give it a per-call one.
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { after, before, describe, test } from "node:test";
import { DEFAULT_FINAL_TEXT, type MockProvider, startMockProvider } from "../../bench/mock-provider.js";
import { Agent, defineTool } from "../../src/index.js";
import type { Model } from "../../src/model/model.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import { sse, startServer } from "./fixture-server.js";
import { anthropicFrames, responsesFrames } from "./wire-scripts.js";

describe("openai-chat adapter and the run's abort signal", () => {
  let provider: MockProvider;
  before(async () => {
    provider = await startMockProvider({ scripts: { "fifteen-turns": { toolTurns: 15 }, "answer-only": { toolTurns: 0 } } });
  });
  after(() => provider.close());

  for (const [stream, transport] of [
    [true, "node:http"],
    [false, "node:http"],
    [true, "fetch"],
    [false, "fetch"],
  ] as const) {
    test(`15 tool turns pile no abort listeners onto the run's signal (${stream ? "streaming" : "JSON"}, ${transport})`, async () => {
      // Node warns once a signal holds more than 10 abort listeners; before the fix every model
      // call of a run left one on the run's signal, so the 11th call printed this warning.
      const warnings: string[] = [];
      const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
      process.on("warning", onWarning);
      try {
        let calls = 0;
        const agent = new Agent({
          model: openaiChat("fifteen-turns", { baseURL: provider.baseURL, apiKey: "test", stream, fetch: transport === "fetch" ? globalThis.fetch : undefined }),
          tools: [defineTool({ name: "lookup", description: "Looks up.", parameters: { type: "object" }, execute: () => `value ${++calls}` })],
          maxTurns: 20,
        });
        const controller = new AbortController();
        const result = await agent.run("go", { signal: controller.signal });
        assert.equal(result.state, "COMPLETED", result.reason);
        assert.equal(result.text, DEFAULT_FINAL_TEXT);
        assert.equal(calls, 15);
        await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
        assert.deepEqual(
          warnings.filter((warning) => warning.includes("MaxListenersExceeded")),
          [],
        );
        assert.ok(getEventListeners(controller.signal, "abort").length <= 1);
      } finally {
        process.off("warning", onWarning);
      }
    });
  }

  test("aborting the run's signal still aborts the call in flight", async () => {
    const slow = await startMockProvider({ scripts: { slow: { toolTurns: 0, latencyMs: 20_000 } } });
    try {
      const controller = new AbortController();
      const agent = new Agent({ model: openaiChat("slow", { baseURL: slow.baseURL, apiKey: "test" }) });
      const started = performance.now();
      const run = agent.run("go", { signal: controller.signal });
      setTimeout(() => controller.abort(new Error("user pressed stop")), 50);
      const result = await run;
      assert.equal(result.state, "ABORTED");
      assert.match(result.reason, /user pressed stop/);
      assert.ok(performance.now() - started < 10_000, "the call did not wait for the slow response (20 s)");
    } finally {
      await slow.close();
    }
  });
});

describe("every adapter gives the SDK a per-call signal", () => {
  const adapters: Array<[string, (turn: { text: string }) => string[], (url: string) => Model]> = [
    ["openai-responses", responsesFrames, (url) => openaiResponses("m", { baseURL: `${url}/v1`, apiKey: "k" })],
    ["anthropic", anthropicFrames, (url) => anthropic("m", { baseURL: url, apiKey: "k" })],
  ];
  for (const [name, frames, makeModel] of adapters) {
    test(`${name}: 12 calls on one signal leave no abort listener on it`, async () => {
      const server = await startServer(sse(frames({ text: "ok" })));
      try {
        const model = makeModel(server.url);
        const controller = new AbortController();
        for (let call = 0; call < 12; call++) {
          const events = [];
          for await (const event of model.stream({ messages: [{ role: "user", content: "hi" }], signal: controller.signal })) events.push(event);
          assert.equal(events.at(-1)?.type, "finish");
        }
        assert.equal(getEventListeners(controller.signal, "abort").length, 0);
      } finally {
        await server.close();
      }
    });
  }
});
