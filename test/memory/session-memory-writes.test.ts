// Edges of the per-event writer behind the server and the CLI (`sessionMemory`): the write path
// skips the queue when nothing is queued, a store that throws synchronously is still reported,
// and the history leaves out exactly the runs still in progress in that session.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Agent, type LoopEvent, ScriptedModel } from "../../src/index.js";
import type { RunInfo } from "../../src/loop/types.js";
import { InMemoryStore, type MemoryEvent, type MemoryStore, type NewMemoryEvent, sessionMemory } from "../../src/memory/index.js";

const info = (runId: string, sessionId: string): RunInfo => ({ runId, agentName: "a", model: new ScriptedModel([]), sessionId, depth: 0 });

/** The events one completed run leaves: run-start, the user message, the answer turn, run-end. */
async function recordRun(memory: ReturnType<typeof sessionMemory>, runId: string, sessionId: string, input: string, answer: string, end = true) {
  const run = info(runId, sessionId);
  await memory.onEvent({ type: "run-start", runId, agent: "a", model: "scripted:x", input, sessionId, timestamp: Date.now() } as LoopEvent, run);
  await memory.onEvent({ type: "user-message", runId, content: input, followUp: false }, run);
  await memory.onEvent({ type: "turn-start", runId, turn: 1 }, run);
  await memory.onEvent({ type: "text-delta", runId, turn: 1, delta: answer }, run);
  await memory.onEvent(
    {
      type: "turn-end",
      runId,
      turn: 1,
      message: { role: "assistant", content: [{ type: "text", text: answer }] },
      finishReason: { unified: "stop", raw: "stop" },
      usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
      toolCalls: 0,
    },
    run,
  );
  if (!end) return;
  const result = { runId, state: "COMPLETED", reason: "done", text: answer, messages: [], newMessages: [], usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, turns: 1, toolRounds: 0, toolCalls: 0 };
  await memory.onEvent({ type: "run-end", runId, state: "COMPLETED", reason: "done", result } as LoopEvent, run);
}

describe("sessionMemory writes", () => {
  it("the history leaves out the runs in progress in that session only, and includes them once they end", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store, { startWriteDelayMs: 0 });
    await recordRun(memory, "r0", "s", "first question", "first answer");
    // r1 in session s and r2 in session t are still going.
    await recordRun(memory, "r1", "s", "second question", "second answer", false);
    await recordRun(memory, "r2", "t", "other question", "other answer", false);
    assert.deepEqual(await memory.loadHistory("s"), [
      { role: "user", content: "first question" },
      { role: "assistant", content: [{ type: "text", text: "first answer" }] },
    ]);
    assert.deepEqual(await memory.loadHistory("t"), []);
    const result = { runId: "r1", state: "COMPLETED", reason: "done", text: "second answer", messages: [], newMessages: [], usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, turns: 1, toolRounds: 0, toolCalls: 0 };
    await memory.onEvent({ type: "run-end", runId: "r1", state: "COMPLETED", reason: "done", result } as LoopEvent, info("r1", "s"));
    assert.equal((await memory.loadHistory("s")).length, 4);
    assert.deepEqual(await memory.loadHistory("t"), [], "r2 is still in progress");
  });

  it("stores nothing for deltas and turn starts; recorded events carry ISO 8601 timestamps of when they happened", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store, { startWriteDelayMs: 0 });
    const before = Date.now();
    await recordRun(memory, "r0", "s", "question", "answer");
    const events = await store.events("s");
    assert.deepEqual(
      events.map((event) => event.event_type),
      ["run_started", "user_message", "agent_response", "run_ended"],
    );
    for (const event of events) {
      assert.match(event.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      const time = Date.parse(event.timestamp);
      assert.ok(time >= before - 1 && time <= Date.now() + 1, `timestamp ${event.timestamp} is the time of the event`);
    }
    assert.equal(events[2].metadata.turn, 1);
  });

  it("a store whose append throws synchronously: the write is reported, the run completes, later writes go through", async () => {
    const inner = new InMemoryStore();
    let thrown = 0;
    const brittle: MemoryStore = Object.assign(Object.create(inner) as MemoryStore, {
      append(id: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
        if (events.some((event) => event.event_type === "user_message")) {
          thrown++;
          throw new Error("synchronous failure");
        }
        return inner.append(id, events);
      },
    });
    const run = new Agent({ model: new ScriptedModel(["fine"]), memory: sessionMemory(brittle, { startWriteDelayMs: 0 }) }).run("hello", { sessionId: "s" });
    const errors: string[] = [];
    for await (const event of run) if (event.type === "error") errors.push(event.error.message);
    assert.equal((await run).state, "COMPLETED");
    assert.equal(thrown, 1);
    assert.equal(errors.length, 1);
    assert.match(errors[0], /synchronous failure/);
    assert.deepEqual(
      (await inner.events("s")).map((event) => event.event_type),
      ["run_started", "agent_response", "run_ended"],
    );
  });

  it("the in-process store is written at once: each event is in the log when onEvent returns, without a promise", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store);
    const run = info("r0", "s");
    const returned = memory.onEvent({ type: "user-message", runId: "r0", content: "hello", followUp: false }, run);
    assert.equal(returned, undefined);
    assert.deepEqual(
      (await store.events("s")).map((event) => event.content),
      ["hello"],
    );
  });

  it("the in-process store failing at once (closed mid-run): each failed write is reported on the run, which still completes", async () => {
    const store = new InMemoryStore();
    const shut = {
      name: "shut", description: "closes the store", parameters: { type: "object" }, execute: async () => {
        await store.close();
        return "closed";
      },
    };
    const model = new ScriptedModel(['{"tool_calls":[{"name":"shut","arguments":{}}]}', "fine"]);
    const errors: string[] = [];
    const result = await new Agent({ model, tools: [shut], memory: sessionMemory(store) }).run("hello", {
      sessionId: "s",
      onEvent: (event) => {
        if (event.type === "error") errors.push(event.error.message);
      },
    });
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "fine");
    // tool_result and agent_response could not be written, and say so (run_ended fails after
    // run-end closed the event stream, so only the log misses it).
    assert.equal(errors.length, 2);
    for (const message of errors) assert.match(message, /closed/);
  });

  it("a subclass that overrides append is called for every write (no synchronous shortcut around it)", async () => {
    const seen: string[] = [];
    class CountingStore extends InMemoryStore {
      override async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
        for (const event of events) seen.push(event.event_type);
        return super.append(sessionId, events);
      }
    }
    const store = new CountingStore();
    const result = await new Agent({ model: new ScriptedModel(["fine"]), memory: sessionMemory(store, { startWriteDelayMs: 0 }) }).run("hello", { sessionId: "s" });
    assert.equal(result.state, "COMPLETED");
    assert.deepEqual(seen, ["run_started", "user_message", "agent_response", "run_ended"]);
    assert.deepEqual(
      (await store.events("s")).map((event) => event.event_type),
      seen,
    );
  });

  it("a write queued behind a slow one for the same session waits for it; another session does not", async () => {
    const inner = new InMemoryStore();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const gated: MemoryStore = Object.assign(Object.create(inner) as MemoryStore, {
      async append(id: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
        if (events[0]?.content === "slow") await gate;
        return inner.append(id, events);
      },
    });
    const memory = sessionMemory(gated, { startWriteDelayMs: 0 });
    const slow = memory.onEvent({ type: "user-message", runId: "r1", content: "slow", followUp: false }, info("r1", "s"));
    const queued = memory.onEvent({ type: "user-message", runId: "r1", content: "after", followUp: true }, info("r1", "s"));
    await memory.onEvent({ type: "user-message", runId: "r2", content: "other", followUp: false }, info("r2", "t"));
    assert.deepEqual((await inner.events("t")).map((event) => event.content), ["other"]);
    assert.deepEqual(await inner.events("s"), [], "both writes of session s wait for the slow one");
    release();
    await Promise.all([slow, queued]);
    assert.deepEqual((await inner.events("s")).map((event) => event.content), ["slow", "after"]);
  });
});

describe("sessionMemory: a run's start waits for its next events (startWriteDelayMs)", () => {
  /** A store that records each append call's event types. */
  function countingStore() {
    const calls: string[][] = [];
    class Counting extends InMemoryStore {
      override async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
        calls.push(events.map((event) => event.event_type));
        return super.append(sessionId, events);
      }
    }
    return { store: new Counting(), calls };
  }

  /** Hands memory a run's start: run-start, then its user message (neither awaited: they may be held). */
  function startRun(memory: ReturnType<typeof sessionMemory>, runId: string, sessionId: string, input = "hi"): RunInfo {
    const run = info(runId, sessionId);
    void memory.onEvent({ type: "run-start", runId, agent: "a", model: "scripted:x", input, sessionId, timestamp: Date.now() } as LoopEvent, run);
    void memory.onEvent({ type: "user-message", runId, content: input, followUp: false }, run);
    return run;
  }

  it("a one-turn run within the delay is one append, from its start to run_ended", async () => {
    const { store, calls } = countingStore();
    const result = await new Agent({ model: new ScriptedModel(["fine"]), memory: sessionMemory(store) }).run("hello", { sessionId: "s" });
    assert.equal(result.state, "COMPLETED");
    assert.deepEqual(calls, [["run_started", "user_message", "agent_response", "run_ended"]]);
    assert.deepEqual(
      (await store.events("s")).map((event) => event.event_type),
      ["run_started", "user_message", "agent_response", "run_ended"],
    );
  });

  it("a run still going has its start in the log once the delay is over; a tool call writes it at once", async () => {
    const { store, calls } = countingStore();
    const memory = sessionMemory(store, { startWriteDelayMs: 30 });
    const run = info("r0", "s");
    const started = memory.onEvent({ type: "run-start", runId: "r0", agent: "a", model: "scripted:x", input: "hi", sessionId: "s", timestamp: Date.now() } as LoopEvent, run);
    const asked = memory.onEvent({ type: "user-message", runId: "r0", content: "hi", followUp: false }, run);
    assert.deepEqual(await store.events("s"), [], "held");
    const before = performance.now();
    await Promise.all([started, asked]);
    assert.ok(performance.now() - before >= 20, "written after the delay");
    assert.deepEqual(calls, [["run_started", "user_message"]]);

    // A second run: its tool call releases the held start with it, before the tool runs.
    const second = startRun(memory, "r1", "t", "go");
    await memory.onEvent({ type: "tool-start", runId: "r1", toolCallId: "c1", name: "look", arguments: {}, step: 1 } as LoopEvent, second);
    assert.deepEqual(
      (await store.events("t")).map((event) => event.event_type),
      ["run_started", "user_message", "tool_call"],
    );
    assert.deepEqual(calls[1], ["run_started", "user_message", "tool_call"]);
  });

  it("settled and flush write what is held at once; a history load leaves it held (runs in progress are not history)", async () => {
    const { store } = countingStore();
    const memory = sessionMemory(store, { startWriteDelayMs: 60_000 });
    startRun(memory, "r1", "a");
    assert.deepEqual(await memory.loadHistory("a"), []);
    assert.equal((await store.events("a")).length, 0);
    await memory.settled("a");
    assert.equal((await store.events("a")).length, 2);
    startRun(memory, "r2", "b");
    await memory.settled("b");
    assert.equal((await store.events("b")).length, 2);
    startRun(memory, "r3", "c");
    startRun(memory, "r4", "d");
    await memory.flush();
    assert.equal((await store.events("c")).length, 2);
    assert.equal((await store.events("d")).length, 2);
  });

  /** A run on a store that fails every append carrying run_started: its error events, what `settled` says, and what the log kept. */
  async function runFailingStart(model: ScriptedModel, options: { startWriteDelayMs?: number }) {
    const inner = new InMemoryStore();
    const failing: MemoryStore = Object.assign(Object.create(inner) as MemoryStore, {
      async append(id: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
        if (events.some((event) => event.event_type === "run_started")) throw new Error("disk full");
        return inner.append(id, events);
      },
    });
    const errors: string[] = [];
    const memory = sessionMemory(failing, options);
    const result = await new Agent({ model, memory }).run("hello", {
      sessionId: "s",
      onEvent: (event) => {
        if (event.type === "error") errors.push(event.error.message);
      },
    });
    assert.equal(result.state, "COMPLETED");
    // What a server awaits before it acknowledges the answer (a 503 / an error chunk): the failure, once.
    const settled = await Promise.resolve(memory.settled("s")).then(
      () => "written",
      (error: Error) => error.message,
    );
    const again = memory.settled("s");
    assert.equal(again, undefined, "a failure is reported by settled once");
    return { errors, settled, log: (await inner.events("s")).map((event) => event.event_type) };
  }

  it("a one-turn run whose one append fails: settled reports it (what a server's client is told), nothing of it is stored", async () => {
    // The held start went with the answer and run_ended, in one append that failed whole. The loop
    // takes no report from memory after the run's end, so none shows on the run's events.
    const { errors, settled, log } = await runFailingStart(new ScriptedModel(["fine"]), {});
    assert.deepEqual(errors, []);
    assert.match(settled, /disk full/);
    assert.deepEqual(log, []);
  });

  it("a held start written after the delay and failing is reported once, on the run and by settled; the run completes", async () => {
    // The answer streams for ~90 ms: the 10 ms delay ends first, and the start is written alone.
    const model = new ScriptedModel(["one two three"], { chunkDelayMs: 30 });
    const { errors, settled, log } = await runFailingStart(model, { startWriteDelayMs: 10 });
    assert.equal(errors.length, 1, `one failed append, reported once on the run: ${JSON.stringify(errors)}`);
    assert.match(errors[0], /disk full/);
    assert.match(settled, /disk full/);
    assert.deepEqual(log, ["agent_response", "run_ended"]);
  });

  it("beforeNextWrite calls back once, just before the session's next append (a held start goes then); cancelled, never", async () => {
    // The hooks note themselves in the store's record of appends, so the order shows.
    const { store, calls } = countingStore();
    const memory = sessionMemory(store, { startWriteDelayMs: 60_000 });
    memory.beforeNextWrite("s", (wholeRuns) => calls.push(["hook s", String(wholeRuns)]));
    const cancel = memory.beforeNextWrite("t", () => calls.push(["hook t"]));
    cancel();
    const run = startRun(memory, "r0", "s");
    assert.deepEqual(calls, [], "nothing is written while the start is held");
    await memory.onEvent({ type: "tool-start", runId: "r0", toolCallId: "c1", name: "look", arguments: {}, step: 1 } as LoopEvent, run);
    await memory.onEvent({ type: "steering", runId: "r0", content: "faster" } as LoopEvent, run);
    await memory.onEvent({ type: "user-message", runId: "r1", content: "other", followUp: false }, info("r1", "t"));
    assert.deepEqual(calls, [["hook s", "false"], ["run_started", "user_message", "tool_call"], ["steering"], ["user_message"]]);
  });

  it("beforeNextWrite says when that write holds a whole run (a short run held to its end): then nothing of it was stored before", async () => {
    const { store, calls } = countingStore();
    const memory = sessionMemory(store);
    const seen: boolean[] = [];
    memory.beforeNextWrite("s", (wholeRuns) => seen.push(wholeRuns));
    await new Agent({ model: new ScriptedModel(["fine"]), memory }).run("hello", { sessionId: "s" });
    assert.deepEqual(seen, [true]);
    assert.deepEqual(calls, [["run_started", "user_message", "agent_response", "run_ended"]]);
    // A run whose start is written before its end (the delay ran out): not whole.
    const slow = sessionMemory(store, { startWriteDelayMs: 10 });
    slow.beforeNextWrite("t", (wholeRuns) => seen.push(wholeRuns));
    await new Agent({ model: new ScriptedModel(["one two three"], { chunkDelayMs: 30 }), memory: slow }).run("hello", { sessionId: "t" });
    assert.deepEqual(seen, [true, false]);
  });

  it("a negative or NaN delay is refused, naming the option", () => {
    assert.throws(() => sessionMemory(new InMemoryStore(), { startWriteDelayMs: -1 }), /startWriteDelayMs must be a non-negative number, got -1/);
    assert.throws(() => sessionMemory(new InMemoryStore(), { startWriteDelayMs: Number.NaN }), /startWriteDelayMs/);
  });
});

describe("InMemoryStore events", () => {
  it("are deeply frozen, with the MemoryEvent fields in order and seq last", async () => {
    const store = new InMemoryStore();
    const content = { nested: { list: [1, { deep: true }] } };
    const [event] = await store.append("s", [{ event_type: "tool_result", content, metadata: { usage: { total: 2 } } }]);
    assert.deepEqual(Object.keys(event), ["event_id", "session_id", "timestamp", "event_type", "content", "metadata", "seq"]);
    assert.equal(event.seq, 1);
    const stored = event.content as typeof content;
    assert.ok(Object.isFrozen(event) && Object.isFrozen(stored.nested.list[1]) && Object.isFrozen(event.metadata.usage));
    assert.throws(() => {
      (stored.nested.list[1] as { deep: boolean }).deep = false;
    }, TypeError);
    content.nested.list.push(3);
    assert.equal(((await store.events("s"))[0].content as typeof content).nested.list.length, 2, "the caller's object is not the stored one");
  });
});
