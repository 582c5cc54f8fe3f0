// Review of the run's lifecycle: run-end is the last event exactly once whatever tools, observers
// and instrumentation do; nothing leaks across many runs or turns; concurrent runs stay apart.
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { test } from "node:test";
import { runInNewContext } from "node:vm";
import { setFlagsFromString } from "node:v8";
import { sleep } from "../../src/abort.js";
import { Agent, defineTool, type LoopEvent, type Model, type ModelRequest, ScriptedModel } from "../../src/index.js";
import type { Instrumentation } from "../../src/loop/types.js";
import { calls, eventsOf, ofType, waitingTool } from "./helpers.js";
import { assertEventOrder, assertRunInvariants, within } from "./review-helpers.js";

test("a tool that outlives its timeout and keeps reporting progress adds no event after its tool-end or the run-end", async () => {
  let stop = false;
  const chatty = defineTool({
    name: "chatty",
    description: "ignores its signal and keeps reporting",
    parameters: { type: "object" },
    timeoutMs: 10,
    async execute(_args, context) {
      while (!stop) {
        context.progress("still working");
        await sleep(5);
      }
      return "done";
    },
  });
  const run = new Agent({ model: new ScriptedModel([calls(["chatty", {}, "c"]), "answer"]), tools: [chatty] }).run("go");
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  await sleep(30); // the abandoned tool is still running and calling progress()
  stop = true;
  await sleep(10);
  assertEventOrder(run.events);
});

test("an observer that throws on run-end does not put an error event after run-end", async () => {
  const observer = {
    onEvent(event: LoopEvent) {
      if (event.type === "run-end") throw new Error("flush failed");
    },
  };
  const run = new Agent({ model: new ScriptedModel(["hi"]), observers: [observer] }).run("go");
  const events = await eventsOf(run);
  await run;
  assertEventOrder(events);
  assertEventOrder(run.events);
});

test("abort() ends a run whose observer never settles", async () => {
  const observer = { onEvent: (event: LoopEvent) => (event.type === "turn-start" ? new Promise<void>(() => undefined) : undefined) };
  const run = new Agent({ model: new ScriptedModel(["hi"]), observers: [observer] }).run("go");
  // The loop itself finishes; only the observer is stuck. The caller gives up and aborts.
  await sleep(20);
  run.abort("observer stuck");
  const result = await within(run, 500);
  assert.notEqual(result, "timeout", "await run still pending 500 ms after abort(): a stuck observer holds the run forever");
});

test("one AbortSignal shared by many runs keeps no listener (and no run) once they have ended", async () => {
  const shutdown = new AbortController();
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.name);
  process.on("warning", onWarning);
  try {
    const agent = new Agent({ model: new ScriptedModel(["hi"]) });
    for (let index = 0; index < 20; index++) assert.equal((await agent.run("go", { signal: shutdown.signal })).state, "COMPLETED");
    await sleep(1); // warnings are emitted on the next tick
    assert.equal(getEventListeners(shutdown.signal, "abort").length, 0, "each ended run left its abort listener on the caller's signal");
    assert.deepEqual(warnings, []);
  } finally {
    process.off("warning", onWarning);
  }
});

test("an instrumentation whose run wrapper throws after the run still yields exactly one run-end, and await run resolves", async () => {
  const failing: Instrumentation = {
    run: async (_info, fn) => {
      await fn();
      throw new Error("exporter crashed");
    },
    modelCall: (_info, fn) => fn(),
    toolCall: (_info, fn) => fn(),
  };
  const run = new Agent({ model: new ScriptedModel(["hi"]), instrumentation: failing }).run("go");
  const result = await run;
  assert.ok(result.state);
  assertEventOrder(run.events);
});

test("an unexpected failure mid-run (a throwing instrumentation wrapper) keeps the transcript so far", async () => {
  const failing: Instrumentation = {
    run: (_info, fn) => fn(),
    modelCall: (info, fn) => (info.turn === 2 ? Promise.reject(new Error("tracer broke")) : fn()),
    toolCall: (_info, fn) => fn(),
  };
  const { tool } = waitingTool("wait", 0);
  const run = new Agent({ model: new ScriptedModel([calls(["wait", {}, "w"]), "answer"]), tools: [tool], instrumentation: failing }).run("go");
  const result = await run;
  assert.equal(result.state, "FAILED");
  assert.match(result.reason, /tracer broke/);
  assert.deepEqual(
    result.messages.map((message) => message.role),
    ["user", "assistant", "tool"],
    "the FAILED result keeps the transcript the run built",
  );
  assertRunInvariants(result, run.events);
});

test("two runs of one Agent at once do not interfere: own scripts, own events, own steering", async () => {
  const { tool } = waitingTool("wait", 20);
  const model = new ScriptedModel([calls(["wait", { value: 1 }]), "answer"], { chunkDelayMs: 2 });
  const agent = new Agent({ model, tools: [tool] });
  const first = agent.run("first");
  const second = agent.run("second");
  second.steer("only for the second");
  const [a, b] = await Promise.all([first, second]);
  assert.equal(a.state, "COMPLETED");
  assert.equal(b.state, "COMPLETED");
  assert.notEqual(first.id, second.id);
  assert.ok(first.events.every((event) => event.runId === first.id));
  assert.ok(second.events.every((event) => event.runId === second.id));
  assert.equal(ofType(first.events, "steering").length, 0);
  assert.equal(ofType(second.events, "steering").length, 1);
  assert.equal(a.text, "answer");
  assertRunInvariants(a, first.events);
  assertRunInvariants(b, second.events);
});

test("500 turns in one run: no listener piles up on the run's signal, no MaxListenersExceededWarning", async () => {
  const turns = 500;
  const script = [...Array.from({ length: turns - 1 }, (_, index) => calls(["wait", { value: index }], ["wait", { value: -index }])), "done"];
  const scripted = new ScriptedModel(script);
  const listenerCounts: number[] = [];
  // A model that records how many abort listeners the run's signal carries at each call.
  const counting: Model = {
    provider: "counting",
    modelId: "scripted",
    stream(request: ModelRequest) {
      listenerCounts.push(request.signal ? getEventListeners(request.signal, "abort").length : -1);
      return scripted.stream(request);
    },
  };
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
  process.on("warning", onWarning);
  try {
    const { tool } = waitingTool("wait", 0);
    const run = new Agent({ model: counting, tools: [tool], maxTurns: turns, loopDetection: false }).run("go");
    const result = await run;
    await sleep(1);
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.turns, turns);
    assert.equal(listenerCounts.length, turns);
    assert.equal(listenerCounts.at(-1), listenerCounts[1], `listeners at call 2: ${listenerCounts[1]}, at call ${turns}: ${listenerCounts.at(-1)}`);
    assert.deepEqual(warnings, []);
  } finally {
    process.off("warning", onWarning);
  }
});

test("300 finished runs are garbage: the heap does not grow with the number of runs", async () => {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  const { tool } = waitingTool("wait", 0);
  const agent = new Agent({ model: new ScriptedModel([calls(["wait", { value: "x".repeat(10_000) }]), "answer ".repeat(200)]), tools: [tool] });
  const batch = async () => {
    for (let index = 0; index < 100; index++) await agent.run("go");
  };
  await batch();
  gc();
  const before = process.memoryUsage().heapUsed;
  await batch();
  await batch();
  gc();
  const grown = process.memoryUsage().heapUsed - before;
  // ScriptedModel keeps every request (a few KB each); 200 runs may add a few MB at most, a leak of whole runs far more.
  assert.ok(grown < 8 * 1024 * 1024, `heap grew ${(grown / 1024 / 1024).toFixed(1)} MB over 200 runs`);
});

test("for await never hangs: an iterator started after the run, or abandoned mid-way, ends", async () => {
  const run = new Agent({ model: new ScriptedModel(["one two three"]) }).run("go");
  for await (const event of run) if (event.type === "turn-start") break;
  await run;
  const late = await within(eventsOf(run), 200);
  assert.notEqual(late, "timeout");
  const iterator = run[Symbol.asyncIterator]();
  const texts: string[] = [];
  for await (const chunk of run.textStream()) texts.push(chunk);
  assert.equal(texts.join(""), "one two three");
  await iterator.return?.();
});

test("tools with a timeout unlink from the run's signal once they settle", async () => {
  const { tool: timed } = waitingTool("timed", 5, { timeoutMs: 1_000 });
  const counts: number[] = [];
  // A tool without a timeout gets the run's own signal: it counts the listeners on it.
  const probe = defineTool({
    name: "probe",
    description: "counts listeners on the run signal",
    parameters: { type: "object" },
    execute: (_args, context) => {
      counts.push(getEventListeners(context.signal, "abort").length);
      return "ok";
    },
  });
  const model = new ScriptedModel([calls(["timed", {}], ["timed", {}], ["timed", {}]), calls(["probe", {}]), "done"]);
  const result = await new Agent({ model, tools: [timed, probe] }).run("go");
  assert.equal(result.state, "COMPLETED");
  // Nothing is left on the run's signal: the three timed calls of wave 1 unlinked themselves (the
  // loop's own abort listeners are kept by the run, not on the signal).
  assert.deepEqual(counts, [0]);
});

test("an observer that keeps its own order gets each event at once; the run resolves only once all its promises settled", async () => {
  const pending: Array<() => void> = [];
  const seen: string[] = [];
  const ordered = {
    ordersItself: true,
    onEvent: (event: LoopEvent) => {
      seen.push(event.type);
      // Every event answered with a promise that settles only when the test says so.
      return new Promise<void>((resolve) => pending.push(resolve));
    },
  };
  const waiting: string[] = [];
  const serial = {
    onEvent: (event: LoopEvent) => {
      waiting.push(event.type);
      return new Promise<void>((resolve) => pending.push(resolve));
    },
  };
  const run = new Agent({ model: new ScriptedModel(["hi"]), observers: [ordered, serial] }).run("go");
  let ended = false;
  void run.then(() => {
    ended = true;
  });
  for (let waited = 0; waited < 2000 && !seen.includes("run-end"); waited++) await sleep(1);
  assert.ok(seen.indexOf("user-message") > 0 && seen.includes("turn-end"), `every event reached the ordered observer with none settled: ${seen.join(", ")}`);
  assert.deepEqual(waiting, ["run-start"], "an ordinary observer still gets the next event only once its promise settled");
  // Settle everything (the ordinary observer's events arrive one by one as they do).
  while (!ended) {
    for (const resolve of pending.splice(0)) resolve();
    await sleep(1);
  }
  assert.equal(waiting.at(-1), "run-end");
});
