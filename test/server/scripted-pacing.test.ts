// The scripted model behind `agentloop serve` with DEBUG_MOCK_RESPONSES (and scenario 5 of the
// benchmarks) paces its chunks against deadlines from the stream's start, like a real model's
// token stream: a reader that falls behind does not push the later chunks back.
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "node:test";
import { ScriptedModel } from "../../src/index.js";

test("a reader that falls behind gets the chunks already due without a fresh delay each", async () => {
  const model = new ScriptedModel(["a b c d e f"], { chunkDelayMs: 20 });
  const arrivals: number[] = [];
  const started = performance.now();
  for await (const event of model.stream({ messages: [] })) {
    if (event.type !== "text-delta") continue;
    arrivals.push(performance.now() - started);
    // After the first chunk the reader is busy for 120 ms: chunks 2-6 (due at 40-120 ms) are all due by then.
    if (arrivals.length === 1) await sleep(120);
  }
  assert.equal(arrivals.length, 6);
  assert.ok(arrivals[0] >= 15, `the first chunk waits for its deadline (${arrivals[0].toFixed(1)} ms)`);
  // Re-delaying every chunk would put ≥ 4 × 20 ms between the second and the last chunk.
  const catchUp = arrivals[5] - arrivals[1];
  assert.ok(catchUp < 60, `chunks 2-6 arrive together once due, not 20 ms apart each (${catchUp.toFixed(1)} ms)`);
});

test("a reader that keeps up sees the chunks paced chunkDelayMs apart", async () => {
  const model = new ScriptedModel(["a b c d"], { chunkDelayMs: 25 });
  const started = performance.now();
  let last = 0;
  let count = 0;
  for await (const event of model.stream({ messages: [] })) {
    if (event.type !== "text-delta") continue;
    count++;
    last = performance.now() - started;
  }
  assert.equal(count, 4);
  assert.ok(last >= 95, `the fourth chunk is due 100 ms after the start (${last.toFixed(1)} ms)`);
});

test("an abort while the reader is behind still stops the stream before the next chunk", async () => {
  const controller = new AbortController();
  const deltas: string[] = [];
  let lastType = "";
  for await (const event of new ScriptedModel(["a b c d e f"], { chunkDelayMs: 10 }).stream({ messages: [], signal: controller.signal })) {
    lastType = event.type === "error" ? `error:${event.error.kind}` : event.type;
    if (event.type !== "text-delta") continue;
    deltas.push(event.delta);
    if (deltas.length === 1) await sleep(80); // every later chunk is due now
    if (deltas.length === 2) controller.abort();
  }
  assert.equal(deltas.length, 2);
  assert.equal(lastType, "error:aborted");
});
