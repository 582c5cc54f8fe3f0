// Reading one model call (src/loop/turn.ts) through the public API, with models written here that
// misbehave the ways a real stream can: one that ends without a finish, one whose iterator throws,
// one that ignores the abort signal and keeps yielding, one whose `return` throws; and the reason
// text of an abort by an Error, a string, another value or the caller's signal.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, type LoopEvent, type Model, type ModelEvent, type ModelRequest } from "../../src/index.js";
import { eventsOf, ofType } from "./helpers.js";

const finish: ModelEvent = { type: "finish", reason: { unified: "stop", raw: "stop" }, usage: { inputTokens: 1, outputTokens: 1 } as never };

/** A model whose every call yields `events` (functions are awaited in turn: a pause the test controls). */
class ListModel implements Model {
  readonly provider = "listed";
  readonly modelId = "list-1";
  returned = 0;
  calls = 0;
  constructor(
    private readonly events: Array<ModelEvent | (() => Promise<void>)>,
    private readonly onReturn?: () => unknown,
  ) {}
  stream(_request: ModelRequest): AsyncIterable<ModelEvent> {
    this.calls++;
    const events = this.events;
    let index = 0;
    const iterator: AsyncIterator<ModelEvent> = {
      next: async () => {
        for (;;) {
          const entry = events[index++];
          if (entry === undefined) return { done: true, value: undefined };
          if (typeof entry === "function") await entry();
          else return { done: false, value: entry };
        }
      },
      return: (() => {
        this.returned++;
        return this.onReturn ? this.onReturn() : Promise.resolve({ done: true, value: undefined });
      }) as never,
    };
    return { [Symbol.asyncIterator]: () => iterator };
  }
}

test("a stream that ends without a finish event fails the call as a dropped connection, naming the provider", async () => {
  const model = new ListModel([
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "half" },
  ]);
  const result = await new Agent({ model }).run("go");
  assert.equal(result.state, "FAILED");
  assert.equal(result.error?.kind, "network");
  assert.equal(result.error?.message, "the listed stream ended without a finish event (connection dropped?)");
});

test("a stream whose iterator throws fails the call with that error, not the process", async () => {
  const model: Model = {
    provider: "broken",
    modelId: "b",
    stream: () => ({
      [Symbol.asyncIterator]: () => ({
        next: () => Promise.reject(new Error("socket exploded")),
      }),
    }),
  };
  const result = await new Agent({ model }).run("go");
  assert.equal(result.state, "FAILED");
  assert.match(String(result.error?.message), /socket exploded/);
});

test("text before a tool call is answer text; after it, commentary; reasoning is forwarded as reasoning; the stream is released once read", async () => {
  const model = new ListModel([
    { type: "reasoning-start", id: "r" },
    { type: "reasoning-delta", id: "r", delta: "think" },
    { type: "reasoning-end", id: "r" },
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "before" },
    { type: "text-end", id: "t" },
    { type: "tool-call-start", id: "c", name: "nope" },
    { type: "tool-call-end", id: "c", name: "nope", arguments: "{}" },
    { type: "text-start", id: "u" },
    { type: "text-delta", id: "u", delta: "after" },
    { type: "text-end", id: "u" },
    { type: "finish", reason: { unified: "tool-calls", raw: "tool_use" }, usage: { inputTokens: 1, outputTokens: 1 } as never },
    // Never read: the finish ends the reading.
    { type: "text-delta", id: "u", delta: "past the finish" },
  ]);
  const run = new Agent({ model, maxTurns: 1 }).run("go");
  const events = await eventsOf(run);
  await run;
  const deltas = events.filter((event) => event.type.endsWith("-delta")).map((event) => [event.type, (event as { delta: string }).delta]);
  assert.deepEqual(deltas.slice(0, 3), [
    ["reasoning-delta", "think"],
    ["text-delta", "before"],
    ["commentary-delta", "after"],
  ]);
  assert.ok(!deltas.some(([, delta]) => delta === "past the finish"));
  assert.ok(model.returned >= 1, "the model's stream was released");
});

test("text while a tool call is still being streamed is commentary too", async () => {
  const model = new ListModel([
    { type: "tool-call-start", id: "c", name: "nope" },
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "meanwhile" },
    { type: "text-end", id: "t" },
    { type: "tool-call-end", id: "c", name: "nope", arguments: "{}" },
    { type: "finish", reason: { unified: "tool-calls", raw: "tool_use" }, usage: { inputTokens: 1, outputTokens: 1 } as never },
  ]);
  const events = await eventsOf(new Agent({ model, maxTurns: 1 }).run("go"));
  assert.deepEqual(
    events.filter((event) => event.type === "text-delta" || event.type === "commentary-delta").map((event) => event.type),
    ["commentary-delta"],
  );
});

test("a tool call sent whole (its end without a start): text after it is commentary", async () => {
  const model = new ListModel([
    { type: "tool-call-end", id: "c", name: "nope", arguments: "{}" },
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "after" },
    { type: "text-end", id: "t" },
    { type: "finish", reason: { unified: "tool-calls", raw: "tool_use" }, usage: { inputTokens: 1, outputTokens: 1 } as never },
  ]);
  const events = await eventsOf(new Agent({ model, maxTurns: 1 }).run("go"));
  assert.deepEqual(
    events.filter((event) => event.type === "text-delta" || event.type === "commentary-delta").map((event) => event.type),
    ["commentary-delta"],
  );
});

test("an abort while the model ignores its signal ends the run at once; what it yields afterwards is dropped; its stream is released", async () => {
  let resume!: () => void;
  let paused!: () => void;
  const pausedPromise = new Promise<void>((resolve) => (paused = resolve));
  const model = new ListModel([
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "first" },
    () => {
      paused();
      return new Promise<void>((resolve) => (resume = resolve));
    },
    { type: "text-delta", id: "t", delta: "too late" },
    finish,
  ]);
  const run = new Agent({ model }).run("go");
  const seen: LoopEvent[] = [];
  const reading = (async () => {
    for await (const event of run) seen.push(event);
  })();
  await pausedPromise;
  run.abort(new Error("user pressed stop"));
  const result = await run;
  assert.equal(result.state, "ABORTED");
  assert.equal(result.reason, "aborted: user pressed stop");
  assert.equal(model.returned, 1, "the abandoned stream was released");
  resume();
  await reading;
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(model.returned, 1, "nothing more was read from the abandoned stream (it would be released again at its finish)");
  assert.deepEqual(
    ofType(seen, "text-delta").map((event) => event.delta),
    ["first"],
  );
});

test("an abort's reason text: an Error's message, a string, the fallback for another value, the caller's signal", async () => {
  const hanging = () => new ListModel([() => new Promise<void>(() => {})]);
  const cases: Array<[unknown, string]> = [
    [new Error("from an error"), "aborted: from an error"],
    ["from a string", "aborted: from a string"],
    [42, "aborted: aborted"],
  ];
  for (const [reason, expected] of cases) {
    const run = new Agent({ model: hanging() }).run("go");
    setTimeout(() => run.abort(reason), 1);
    const result = await run;
    assert.equal(result.state, "ABORTED");
    assert.equal(result.reason, expected, String(reason));
  }
  const controller = new AbortController();
  const run = new Agent({ model: hanging() }).run("go", { signal: controller.signal });
  setTimeout(() => controller.abort(), 1);
  const result = await run;
  assert.equal(result.reason, "aborted: This operation was aborted");
});

test("a model whose stream's return throws or rejects when released: the run still ends as it would", async () => {
  const failing: Array<() => unknown> = [
    () => {
      throw new Error("return threw");
    },
    () => Promise.reject(new Error("return rejected")),
  ];
  for (const onReturn of failing) {
    const model: ListModel = new ListModel([{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "hello" }, { type: "text-end", id: "t" }, finish], onReturn);
    const result = await new Agent({ model }).run("go");
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "hello");
    assert.equal(model.returned, 1);
  }
});
