// The scripted model behind `agentloop serve` with DEBUG_MOCK_RESPONSES (and scenario 5 of the
// benchmarks) paces its chunks against deadlines from the stream's start, like a real model's
// token stream: a reader that falls behind does not push the later chunks back. (agentloop-test: own process: timing)
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "node:test";
import { ScriptedModel } from "../../src/index.js";

test("a reader that falls behind gets the chunks already due without a fresh delay each", async () => {
  const model = new ScriptedModel(["a b c d e f"], { chunkDelayMs: 40 });
  const arrivals: number[] = [];
  const started = performance.now();
  for await (const event of model.stream({ messages: [] })) {
    if (event.type !== "text-delta") continue;
    arrivals.push(performance.now() - started);
    // After the first chunk the reader is busy for 260 ms: chunks 2-6 (due at 80-240 ms) are all due by then.
    if (arrivals.length === 1) await sleep(260);
  }
  assert.equal(arrivals.length, 6);
  assert.ok(arrivals[0] >= 35, `the first chunk waits for its deadline (${arrivals[0].toFixed(1)} ms)`);
  // Re-delaying every chunk would put ≥ 4 × 40 ms between the second and the last chunk.
  const catchUp = arrivals[5] - arrivals[1];
  assert.ok(catchUp < 120, `chunks 2-6 arrive together once due, not 40 ms apart each (${catchUp.toFixed(1)} ms)`);
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

test("return() while a chunk is pending ends the stream: the pending next() resolves done, later ones too", async () => {
  const iterator = new ScriptedModel(["a b c"], { chunkDelayMs: 10_000 }).stream({ messages: [] })[Symbol.asyncIterator]();
  assert.equal((await iterator.next()).value?.type, "response-start");
  assert.equal((await iterator.next()).value?.type, "text-start");
  const pending = iterator.next(); // waits 10 s for "a "
  const started = performance.now();
  assert.deepEqual(await iterator.return?.(), { done: true, value: undefined });
  assert.deepEqual(await pending, { done: true, value: undefined });
  assert.ok(performance.now() - started < 5_000, "return() does not wait for the chunk");
  assert.deepEqual(await iterator.next(), { done: true, value: undefined });
});

test("next() called again before the pending one settles gets the following event, in order", async () => {
  const iterator = new ScriptedModel(["a b"], { chunkDelayMs: 5 }).stream({ messages: [] })[Symbol.asyncIterator]();
  const results = await Promise.all(Array.from({ length: 8 }, () => iterator.next()));
  assert.deepEqual(
    results.map((result) => (result.done ? "done" : result.value.type === "text-delta" ? `delta:${result.value.delta}` : result.value.type)),
    ["response-start", "text-start", "delta:a ", "delta:b", "text-end", "usage", "finish", "done"],
  );
});

test("a signal aborted before a paced chunk ends the stream without waiting for its deadline", async () => {
  const controller = new AbortController();
  const iterator = new ScriptedModel(["a b c"], { chunkDelayMs: 10_000 }).stream({ messages: [], signal: controller.signal })[Symbol.asyncIterator]();
  assert.equal((await iterator.next()).value?.type, "response-start");
  assert.equal((await iterator.next()).value?.type, "text-start");
  controller.abort();
  const started = performance.now();
  const next = await iterator.next();
  assert.ok(!next.done && next.value.type === "error" && next.value.error.kind === "aborted");
  assert.ok(performance.now() - started < 5_000, "the abort does not wait for the chunk's deadline (10 s)");
  assert.deepEqual(await iterator.next(), { done: true, value: undefined });
});
