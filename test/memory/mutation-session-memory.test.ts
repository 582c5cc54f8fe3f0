// sessionMemory's options and its reads (contextLimit, recordNestedRuns, checkpointResumed) and its
// writes to a store that keeps appends in call order: what the mutation run of
// src/memory/session-memory.ts found no test for.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Agent, defineTool, type LoopEvent, ScriptedModel } from "../../src/index.js";
import type { RunInfo } from "../../src/loop/types.js";
import { InMemoryStore, type MemoryEvent, type MemoryStore, type NewMemoryEvent, sessionMemory } from "../../src/memory/index.js";

const model = new ScriptedModel([]);
const info = (runId: string, sessionId: string | undefined, depth = 0, parentRunId?: string): RunInfo => ({ runId, agentName: "a", model, sessionId, depth, parentRunId });
const userMessage = (runId: string, content: string): LoopEvent => ({ type: "user-message", runId, content, followUp: false });
const types = async (store: MemoryStore, sessionId: string) => (await store.events(sessionId)).map((event) => event.event_type);

describe("sessionMemory options", () => {
  it("gives 6 exchanges of history by default, the contextLimit given, none with 0, and refuses a negative or NaN limit naming it", async () => {
    const store = new InMemoryStore();
    await store.append(
      "s",
      Array.from({ length: 8 }, (_, index) => ({ event_type: "user_message", content: `q${index + 1}` })),
    );
    const texts = async (memory: ReturnType<typeof sessionMemory>) => (await memory.loadHistory("s")).map((message) => message.content);
    assert.equal(sessionMemory(store).contextLimit, 6);
    assert.deepEqual(await texts(sessionMemory(store)), ["q3", "q4", "q5", "q6", "q7", "q8"]);
    assert.deepEqual(await texts(sessionMemory(store, { contextLimit: 2 })), ["q7", "q8"]);
    assert.deepEqual(await texts(sessionMemory(store, { contextLimit: 0 })), []);
    assert.throws(() => sessionMemory(store, { contextLimit: -1 }), (error: unknown) => error instanceof TypeError && /contextLimit must be a non-negative number, got -1/.test(error.message));
    assert.throws(() => sessionMemory(store, { contextLimit: Number.NaN }), /contextLimit must be a non-negative number, got NaN/);
  });

  it("records a sub-agent's run only with recordNestedRuns, with its parent run's id; a run without a session records nothing", async () => {
    const store = new InMemoryStore();
    const start = (runId: string, sessionId: string | undefined): LoopEvent => ({ type: "run-start", runId, agent: "a", model: "scripted:x", input: "task", sessionId, timestamp: Date.now() }) as LoopEvent;
    const plain = sessionMemory(store, { startWriteDelayMs: 0 });
    await plain.onEvent(start("child", "nested"), info("child", "nested", 1, "parent"));
    await plain.onEvent(userMessage("child", "task"), info("child", "nested", 1, "parent"));
    await plain.onEvent(userMessage("none", "no session"), info("none", undefined));
    assert.deepEqual(await types(store, "nested"), []);
    assert.deepEqual(await store.listSessions(), []);

    const nested = sessionMemory(store, { startWriteDelayMs: 0, recordNestedRuns: true });
    await nested.onEvent(start("child", "nested"), info("child", "nested", 1, "parent"));
    await nested.onEvent(userMessage("child", "task"), info("child", "nested", 1, "parent"));
    // A run whose RunInfo has no session id yet: the run-start's own sessionId counts.
    await nested.onEvent(start("top", "from-event"), info("top", undefined));
    const [started, message] = await store.events("nested");
    assert.deepEqual([started.event_type, started.metadata.depth, started.metadata.parent_run_id], ["run_started", 1, "parent"]);
    assert.deepEqual([message.event_type, message.content, message.metadata.run_id], ["user_message", "task", "child"]);
    assert.deepEqual(await types(store, "from-event"), ["run_started"]);
    assert.equal((await store.events("from-event"))[0].metadata.parent_run_id, undefined, "a top-level run has no parent_run_id");
  });
});

describe("sessionMemory.checkpointResumed", () => {
  it("is false for a checkpoint until its resume is recorded in the session's log, then true for it only", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store, { startWriteDelayMs: 0 });
    const pay = defineTool({ name: "pay", description: "pays", parameters: { type: "object" }, needsApproval: true, execute: () => "paid" });
    const agent = new Agent({ model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "c1", name: "pay", arguments: {} }] }), "Done."]), tools: [pay], memory });
    const first = await agent.run("go", { sessionId: "s", onApproval: "interrupt" });
    const checkpoint = first.checkpoint ?? assert.fail("the run stopped for an approval");
    assert.equal(await memory.checkpointResumed?.("s", checkpoint.id), false, "the checkpoint is in the log, its resume is not");
    await agent.resume(checkpoint, { decisions: { c1: { approve: true } }, sessionId: "s" });
    assert.equal(await memory.checkpointResumed?.("s", checkpoint.id), true);
    assert.equal(await memory.checkpointResumed?.("s", "ckpt_other"), false);
    assert.equal(await memory.checkpointResumed?.("other", checkpoint.id), false);
    // Another writer's approval_decided without a checkpoint id, or with content that is no object, is no resume.
    await store.append("odd", [
      { event_type: "approval_decided", content: null },
      { event_type: "approval_decided", content: { tool_call_id: "c1", approve: true } },
      { event_type: "approval_requested", content: { checkpoint_id: "ckpt_x" } },
    ]);
    assert.equal(await memory.checkpointResumed?.("odd", "ckpt_x"), false);
  });
});

describe("sessionMemory with a store that keeps appends in call order (appendsInOrder)", () => {
  /** An in-process store whose appends wait for `open()`, and that says it keeps them in call order. */
  function gatedStore(inOrder: boolean) {
    const inner = new InMemoryStore();
    const started: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let queue = Promise.resolve();
    const store: MemoryStore = Object.assign(Object.create(inner) as MemoryStore, {
      appendsInOrder: inOrder,
      append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
        started.push(...events.map((event) => String(event.content)));
        const written = queue.then(() => gate).then(() => inner.append(sessionId, events));
        queue = written.then(() => undefined);
        return written;
      },
    });
    return { store, inner, started, open };
  }

  it("hands each write to the store at once, without waiting for the earlier ones; flush and settled wait for all of them", async () => {
    const { store, inner, started, open } = gatedStore(true);
    const memory = sessionMemory(store, { startWriteDelayMs: 0 });
    const writes = ["one", "two", "three"].map((text) => memory.onEvent(userMessage("r1", text), info("r1", "s")));
    assert.deepEqual(started, ["one", "two", "three"], "every append was called while the first still waits");
    const flushed = memory.flush();
    const settled = memory.settled("s");
    assert.ok(settled, "writes are pending");
    let done = false;
    void flushed.then(() => {
      done = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(done, false, "flush waits for the appends");
    open();
    await Promise.all([...writes, flushed, settled]);
    assert.deepEqual(
      (await inner.events("s")).map((event) => event.content),
      ["one", "two", "three"],
    );
    assert.equal(memory.settled("s"), undefined, "nothing pending, nothing failed");
  });

  it("flush and settled wait for an earlier append whose promise settles after a later one's", async () => {
    const inner = new InMemoryStore();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    // Written at once, in call order; the first append's promise settles only once the gate opens.
    const store: MemoryStore = Object.assign(Object.create(inner) as MemoryStore, {
      appendsInOrder: true,
      async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
        const stored = await inner.append(sessionId, events);
        if (events[0].content === "slow") await gate;
        return stored;
      },
    });
    const memory = sessionMemory(store, { startWriteDelayMs: 0 });
    const slow = memory.onEvent(userMessage("r1", "slow"), info("r1", "s"));
    const quick = memory.onEvent(userMessage("r1", "quick"), info("r1", "s"));
    await quick;
    let flushed = false;
    let settled = false;
    void memory.flush().then(() => {
      flushed = true;
    });
    void memory.settled("s")?.then(() => {
      settled = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual([flushed, settled], [false, false], "the first append has not settled yet");
    open();
    await slow;
    await memory.flush();
    assert.deepEqual([flushed, settled], [true, true]);
  });

  it("a store without it gets the next write only once the previous one is written", async () => {
    const { store, inner, started, open } = gatedStore(false);
    const memory = sessionMemory(store, { startWriteDelayMs: 0 });
    const writes = ["one", "two"].map((text) => memory.onEvent(userMessage("r1", text), info("r1", "s")));
    assert.deepEqual(started, ["one"]);
    open();
    await Promise.all(writes);
    assert.deepEqual(started, ["one", "two"]);
    assert.deepEqual(
      (await inner.events("s")).map((event) => event.content),
      ["one", "two"],
    );
  });
});
