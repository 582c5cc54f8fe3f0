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

  for (const order of [["slow", "quick"], ["quick", "slow"]]) {
    it(`flush and settled wait for every append, whichever settles last (${order.join(" then ")})`, async () => {
      const inner = new InMemoryStore();
      let open!: () => void;
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      // Written at once, in call order; the "slow" append's promise settles only once the gate opens.
      const store: MemoryStore = Object.assign(Object.create(inner) as MemoryStore, {
        appendsInOrder: true,
        async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
          const stored = await inner.append(sessionId, events);
          if (events[0].content === "slow") await gate;
          return stored;
        },
      });
      const memory = sessionMemory(store, { startWriteDelayMs: 0 });
      const writes = order.map((text) => memory.onEvent(userMessage("r1", text), info("r1", "s")));
      let flushed = false;
      let settled = false;
      void memory.flush().then(() => {
        flushed = true;
      });
      void memory.settled("s")?.then(() => {
        settled = true;
      });
      await writes[order.indexOf("quick")];
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual([flushed, settled], [false, false], "the slow append has not settled yet");
      open();
      await Promise.all(writes);
      await memory.flush();
      assert.deepEqual([flushed, settled], [true, true]);
    });
  }

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

// ---------- what onEvent writes, driven event by event (as the loop hands them over) ----------

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const turnEnd = (runId: string, turn: number, content: Array<Record<string, unknown>>, toolCalls: number, finish = "stop"): LoopEvent =>
  ({ type: "turn-end", runId, turn, message: { role: "assistant", content }, finishReason: { unified: finish, raw: finish }, usage, toolCalls }) as unknown as LoopEvent;
const toolStart = (runId: string, toolCallId: string, name: string, args: unknown, action: "tool_call" | "delegate" = "tool_call"): LoopEvent =>
  ({ type: "tool-start", runId, step: 1, toolCallId, name, arguments: args, action }) as LoopEvent;
const runEnd = (runId: string, text: string, state = "COMPLETED"): LoopEvent =>
  ({ type: "run-end", runId, state, reason: "done", result: { runId, state, reason: "done", text, messages: [], newMessages: [], usage, turns: 1, toolRounds: 0, toolCalls: 0 } }) as LoopEvent;
const runStart = (runId: string, sessionId: string): LoopEvent => ({ type: "run-start", runId, agent: "a", model: "scripted:x", input: "hi", sessionId, timestamp: Date.now() }) as LoopEvent;

/** A store that records each append's event types and options. */
function recordingStore() {
  const appends: Array<{ types: string[]; options: unknown }> = [];
  class Recording extends InMemoryStore {
    override async append(sessionId: string, events: readonly NewMemoryEvent[], options?: { returnEvents?: boolean }): Promise<MemoryEvent[]> {
      appends.push({ types: events.map((event) => event.event_type), options });
      return super.append(sessionId, events);
    }
  }
  return { store: new Recording(), appends };
}

/** Hands each event to memory in order, awaiting what it returns; the session's log after. */
async function drive(events: LoopEvent[], options: Parameters<typeof sessionMemory>[1] = {}, sessionId = "s") {
  const store = new InMemoryStore();
  const memory = sessionMemory(store, { startWriteDelayMs: 0, ...options });
  for (const event of events) await memory.onEvent(event, info(event.runId, sessionId));
  return store.events(sessionId);
}

describe("sessionMemory: what each loop event becomes", () => {
  it("a tool call keeps the model's raw arguments as written; without them, the arguments as JSON, or {} for none", async () => {
    const log = await drive([
      turnEnd("r", 1, [{ type: "text", text: "Let me look." }, { type: "tool-call", id: "c1", name: "look", arguments: '{ "q" : "x" }' }, { type: "tool-call", id: "c2", name: "look", arguments: "not json" }], 2, "tool-calls"),
      toolStart("r", "c1", "look", { q: "x" }),
      toolStart("r", "c2", "look", undefined),
      toolStart("r", "c3", "look", { n: 1 }),
      toolStart("r", "c4", "look", undefined),
      toolStart("r", "c5", "look", "as text"),
    ]);
    assert.deepEqual(
      log.map((event) => [event.metadata.tool_call_id, event.metadata.raw_arguments, (event.content as { arguments: unknown }).arguments, event.metadata.assistant_text]),
      [
        ["c1", '{ "q" : "x" }', { q: "x" }, "Let me look."],
        ["c2", "not json", "not json", undefined],
        ["c3", '{"n":1}', { n: 1 }, undefined],
        ["c4", "{}", {}, undefined],
        ["c5", "as text", "as text", undefined],
      ],
    );
  });

  it("a delegation's task: the task of its arguments, or the arguments themselves; the agent is the name after a leading delegate_to_ only", async () => {
    const log = await drive([
      turnEnd("r", 1, [{ type: "tool-call", id: "d3", name: "delegate_to_writer", arguments: "null" }], 1, "tool-calls"),
      toolStart("r", "d1", "delegate_to_writer", { task: "draft it" }, "delegate"),
      toolStart("r", "d2", "delegate_to_writer", "just this text", "delegate"),
      toolStart("r", "d3", "delegate_to_writer", undefined, "delegate"),
      toolStart("r", "d4", "ask_delegate_to_writer", { task: "t" }, "delegate"),
      {
        type: "tool-end", runId: "r", step: 1, toolCallId: "d4", name: "ask_delegate_to_writer", action: "delegate", output: "ok",
        result: { role: "tool", toolCallId: "d4", toolName: "ask_delegate_to_writer", content: "ok" }, isError: false, truncated: false, durationMs: 1,
      } as LoopEvent,
    ]);
    assert.deepEqual(
      log.map((event) => [event.event_type, event.content]),
      [
        ["delegation_request", { agent: "writer", task: "draft it" }],
        ["delegation_request", { agent: "writer", task: "just this text" }],
        ["delegation_request", { agent: "writer", task: null }],
        ["delegation_request", { agent: "ask_delegate_to_writer", task: "t" }],
        ["delegation_response", { agent: "ask_delegate_to_writer", response: "ok" }],
      ],
    );
  });

  it("a tool result given as parts whose text is the output has no model_result; one whose text differs has it", async () => {
    const end = (toolCallId: string, output: string, text: string): LoopEvent =>
      ({
        type: "tool-end", runId: "r", step: 1, toolCallId, name: "look", action: "tool_call", output, isError: false, truncated: output !== text, durationMs: 2.4,
        result: { role: "tool", toolCallId, toolName: "look", content: [{ type: "text", text }] },
      }) as LoopEvent;
    const log = await drive([end("c1", "same", "same"), end("c2", "the whole output", "the whole…")]);
    assert.deepEqual(
      log.map((event) => [event.metadata.model_result, event.metadata.truncated, event.metadata.duration_ms]),
      [
        [undefined, undefined, 2],
        ["the whole…", true, 2],
      ],
    );
  });

  it("an answer turn's model call: when it started and how long it took", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store, { startWriteDelayMs: 0 });
    const before = Date.now();
    await memory.onEvent({ type: "turn-start", runId: "r", turn: 1 } as LoopEvent, info("r", "s"));
    // The call's duration is what is measured here: a real wait, not an event to await.
    await new Promise((resolve) => setTimeout(resolve, 30));
    await memory.onEvent(turnEnd("r", 1, [{ type: "text", text: "answer" }], 0), info("r", "s"));
    const [answer] = await store.events("s");
    const call = answer.metadata.model_call as { started_at: string; duration_ms: number };
    assert.ok(Date.parse(call.started_at) >= before - 1 && Date.parse(call.started_at) <= before + 25, `started ${call.started_at}, at the turn's start`);
    assert.ok(call.duration_ms >= 25 && call.duration_ms < 10_000, `took ${call.duration_ms} ms`);
  });

  it("a tool call carries the model call of its own turn only", async () => {
    const log = await drive([
      { type: "turn-start", runId: "r", turn: 1 } as LoopEvent,
      turnEnd("r", 1, [{ type: "tool-call", id: "c1", name: "look", arguments: "{}" }], 1, "tool-calls"),
      toolStart("r", "c1", "look", {}),
      { type: "turn-start", runId: "r", turn: 2 } as LoopEvent,
      toolStart("r", "c2", "look", {}),
    ]);
    assert.deepEqual(
      log.map((event) => [event.metadata.turn, (event.metadata.model_call as { turn?: number } | undefined)?.turn]),
      [
        [1, 1],
        [2, undefined],
      ],
    );
  });

  it("a turn that fails or is aborted records no answer of its own; the run's end records the text it ended with, once", async () => {
    for (const finish of ["error", "aborted"]) {
      const log = await drive([turnEnd("r", 1, [{ type: "text", text: "partial" }], 0, finish), runEnd("r", "", "FAILED")]);
      assert.deepEqual(
        log.map((event) => event.event_type),
        ["run_ended"],
        finish,
      );
    }
    // A run whose text was not an answer turn's (a model error after text, an output step): written before run_ended.
    const ended = await drive([turnEnd("r", 1, [{ type: "text", text: "partial" }], 0, "error"), runEnd("r", "the final text")]);
    assert.deepEqual(
      ended.map((event) => [event.event_type, event.content, event.metadata.turn]),
      [
        ["agent_response", "the final text", undefined],
        ["run_ended", { state: "COMPLETED", reason: "done" }, undefined],
      ],
    );
    const once = await drive([turnEnd("r", 1, [{ type: "text", text: "answer" }], 0), runEnd("r", "answer")]);
    assert.deepEqual(
      once.map((event) => event.event_type),
      ["agent_response", "run_ended"],
    );
  });

  it("an in-process approval decision: the call, the decision and its reason when given", async () => {
    const log = await drive([
      { type: "approval-decision", runId: "r", toolCallId: "c1", name: "pay", approve: false, reason: "too much" },
      { type: "approval-decision", runId: "r", toolCallId: "c2", name: "pay", approve: true },
      // A resume's decisions are recorded with its run_started, not one by one.
      { type: "approval-decision", runId: "r", toolCallId: "c3", name: "pay", approve: true, checkpointId: "ckpt_1" },
    ]);
    assert.deepEqual(
      log.map((event) => [event.event_type, event.content, event.metadata.tool_call_id, event.metadata.tool_name]),
      [
        ["approval_decided", { tool_call_id: "c1", approve: false, reason: "too much" }, "c1", "pay"],
        ["approval_decided", { tool_call_id: "c2", approve: true }, "c2", "pay"],
      ],
    );
  });

  it("an event type it does not know (a newer loop) records nothing and does not throw", async () => {
    const log = await drive([{ type: "some-future-event", runId: "r" } as unknown as LoopEvent, toolStart("r", "c1", "look", {})]);
    assert.deepEqual(
      log.map((event) => event.event_type),
      ["tool_call"],
    );
  });
});

describe("sessionMemory: appends, failures and hooks", () => {
  it("asks the store not to build the events it returns, and never appends nothing (a turn that only calls tools)", async () => {
    const { store, appends } = recordingStore();
    const model = new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "c1", name: "echo", arguments: { text: "x" } }] }), "done"]);
    const echo = defineTool({ name: "echo", description: "echoes", parameters: { type: "object" }, execute: () => "x" });
    await new Agent({ model, tools: [echo], memory: sessionMemory(store, { startWriteDelayMs: 0 }) }).run("go", { sessionId: "s" });
    assert.ok(appends.length > 0);
    for (const append of appends) {
      assert.deepEqual(append.options, { returnEvents: false });
      assert.ok(append.types.length > 0, "no empty append");
    }
  });

  it("settled reports the first of several failed writes, once, even while they are still pending", async () => {
    const inner = new InMemoryStore();
    let count = 0;
    const failing: MemoryStore = Object.assign(Object.create(inner) as MemoryStore, {
      async append(): Promise<MemoryEvent[]> {
        count++;
        throw new Error(`write ${count} failed`);
      },
    });
    const memory = sessionMemory(failing, { startWriteDelayMs: 0 });
    const first = memory.onEvent(userMessage("r", "one"), info("r", "s"));
    const second = memory.onEvent(userMessage("r", "two"), info("r", "s"));
    const settled = memory.settled("s") ?? assert.fail("writes are pending");
    await assert.rejects(settled, /write 1 failed/);
    await assert.rejects(Promise.resolve(first), /write 1 failed/);
    await assert.rejects(Promise.resolve(second), /write 2 failed/);
    assert.equal(memory.settled("s"), undefined, "reported once");
  });

  it("beforeNextWrite: two hooks of one session are both called; one cancelled leaves the other; a cancel after the write does nothing", async () => {
    const { store } = recordingStore();
    const memory = sessionMemory(store, { startWriteDelayMs: 0 });
    const called: string[] = [];
    memory.beforeNextWrite("s", () => called.push("a"));
    const cancelB = memory.beforeNextWrite("s", () => called.push("b"));
    const cancelC = memory.beforeNextWrite("s", () => called.push("c"));
    cancelB();
    await memory.onEvent(userMessage("r", "one"), info("r", "s"));
    assert.deepEqual(called, ["a", "c"]);
    cancelC();
    await memory.onEvent(userMessage("r", "two"), info("r", "s"));
    assert.deepEqual(called, ["a", "c"], "called once only");
  });

  it("beforeNextWrite's wholeRuns: false for a write that starts a run without ending it, ends one it did not start, or while another run of the session goes on", async () => {
    const memory = sessionMemory(new InMemoryStore(), { startWriteDelayMs: 60_000 });
    const seen: Array<[string, boolean]> = [];
    const next = (label: string, sessionId: string) => memory.beforeNextWrite(sessionId, (wholeRuns) => seen.push([label, wholeRuns]));
    // A start then a tool call: written together, the run not ended.
    next("start only", "a");
    void memory.onEvent(runStart("r1", "a"), info("r1", "a"));
    await memory.onEvent(toolStart("r1", "c1", "look", {}), info("r1", "a"));
    // That run's end alone.
    next("end only", "a");
    await memory.onEvent(runEnd("r1", ""), info("r1", "a"));
    // A whole short run while another run of the session is still going.
    void memory.onEvent(runStart("r2", "b"), info("r2", "b"));
    await memory.onEvent(toolStart("r2", "c2", "look", {}), info("r2", "b"));
    next("beside another", "b");
    void memory.onEvent(runStart("r3", "b"), info("r3", "b"));
    await memory.onEvent(runEnd("r3", ""), info("r3", "b"));
    // A whole short run alone: true.
    next("whole", "c");
    void memory.onEvent(runStart("r4", "c"), info("r4", "c"));
    await memory.onEvent(runEnd("r4", ""), info("r4", "c"));
    assert.deepEqual(seen, [
      ["start only", false],
      ["end only", false],
      ["beside another", false],
      ["whole", true],
    ]);
  });

  it("the history leaves out every run of the session still in progress, and each once it has ended", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store, { startWriteDelayMs: 0 });
    await store.append("s", [{ event_type: "user_message", content: "old", metadata: { run_id: "r0" } }]);
    for (const runId of ["r1", "r2"]) {
      await memory.onEvent(runStart(runId, "s"), info(runId, "s"));
      await memory.onEvent(userMessage(runId, `from ${runId}`), info(runId, "s"));
    }
    const texts = async () => (await memory.loadHistory("s")).map((message) => message.content);
    assert.deepEqual(await texts(), ["old"]);
    await memory.onEvent(runEnd("r1", ""), info("r1", "s"));
    assert.deepEqual(await texts(), ["old", "from r1"], "r2 still goes on");
    await memory.onEvent(runEnd("r2", ""), info("r2", "s"));
    assert.deepEqual(await texts(), ["old", "from r1", "from r2"]);
  });
});
