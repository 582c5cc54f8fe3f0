// The replay skip of a durable agent's session memory (src/durable/memory.ts), as a run's workflow
// drives it: `memoryStartOf` as the run is queued, `beginExecution` as an execution starts (a
// recovery, a `resume`), the loop's events appended through the store, `endExecution` as it ends.
// What is observed is the session's log in the store (what a user reads back) and what the durable
// memory hands the loop. No DBOS launch: fast, each test its own run and session ids; the in-process
// runs (test/durable/in-process/replay.ts) cover the same through real durable runs.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { beginExecution, durableMemory, endExecution, memoryStartOf, storedCount } from "../../src/durable/memory.js";
import type { SessionMemory } from "../../src/loop/types.js";
import { InMemoryStore, type MemoryStore, type NewMemoryEvent, sessionMemory } from "../../src/memory/index.js";

const ids = () => ({ runId: `run_${randomUUID().slice(0, 8)}`, sessionId: `sess_${randomUUID().slice(0, 8)}` });
/** An event of run `runId` (what the session memory writes for the loop). */
const ev = (runId: string, event_type: string, content: unknown = null, extra: Record<string, unknown> = {}): NewMemoryEvent => ({ event_type, content, metadata: { run_id: runId, ...extra } });
/** The session's log as `type content` lines. */
const logOf = async (store: MemoryStore, sessionId: string) => (await store.events(sessionId, { limit: 5000 })).map((event) => `${event.event_type} ${JSON.stringify(event.content)}`);

/** A store with the durable memory's skip on it, as a durable agent with `sessionMemory(store)` has. */
function skippingStore(store = new InMemoryStore({ maxEventsPerSession: 5000 })): InMemoryStore {
  durableMemory(sessionMemory(store));
  return store;
}

/** An earlier execution of run `runId` stored `events`; a new execution begins: its skip. */
async function replaying(store: MemoryStore, sessionId: string, runId: string, events: NewMemoryEvent[]) {
  const start = await memoryStartOf(sessionMemory(store), sessionId);
  await store.append(sessionId, events);
  return beginExecution(sessionMemory(store), runId, sessionId, start);
}

test("a replayed execution stores only what the earlier one did not: each stored event matched once, in any order", async () => {
  const store = skippingStore();
  const { runId, sessionId } = ids();
  const first = [ev(runId, "run_started"), ev(runId, "user_message", "hi"), ev(runId, "tool_call", { name: "a", arguments: {} }, { tool_call_id: "c1" }), ev(runId, "tool_call", { name: "a", arguments: {} }, { tool_call_id: "c2" }), ev(runId, "tool_result", "ok", { tool_call_id: "c2" }), ev(runId, "tool_result", "ok", { tool_call_id: "c1" })];
  const skip = await replaying(store, sessionId, runId, first);
  assert.equal(skip && storedCount(skip), 6);
  // The replay: the same events (the wave's results in the other order), then what is new.
  await store.append(sessionId, [ev(runId, "run_started"), ev(runId, "user_message", "hi")]);
  await store.append(sessionId, [ev(runId, "tool_call", { name: "a", arguments: {} }, { tool_call_id: "c1" }), ev(runId, "tool_call", { name: "a", arguments: {} }, { tool_call_id: "c2" })]);
  await store.append(sessionId, [ev(runId, "tool_result", "ok", { tool_call_id: "c1" }), ev(runId, "tool_result", "ok", { tool_call_id: "c2" })]);
  // Everything matched: a second user message and the answer are new.
  await store.append(sessionId, [ev(runId, "user_message", "hi"), ev(runId, "agent_response", "done")]);
  endExecution(runId, skip);
  assert.deepEqual((await logOf(store, sessionId)).slice(6), ['user_message "hi"', 'agent_response "done"']);
});

test("two stored events alike are both skipped on replay, a third alike is stored", async () => {
  const store = skippingStore();
  const { runId, sessionId } = ids();
  const skip = await replaying(store, sessionId, runId, [ev(runId, "user_message", "again"), ev(runId, "user_message", "again"), ev(runId, "agent_response", "x")]);
  assert.equal(skip && storedCount(skip), 3);
  await store.append(sessionId, [ev(runId, "user_message", "again")]);
  await store.append(sessionId, [ev(runId, "user_message", "again")]);
  await store.append(sessionId, [ev(runId, "user_message", "again")]);
  endExecution(runId, skip);
  assert.deepEqual((await logOf(store, sessionId)).slice(3), ['user_message "again"']);
});

test("a replay's event with other content, another call id or another run is stored; content is compared with its keys in any order", async () => {
  const store = skippingStore();
  const { runId, sessionId } = ids();
  const other = `run_${randomUUID().slice(0, 8)}`;
  const skip = await replaying(store, sessionId, runId, [ev(runId, "tool_call", { b: 1, a: [1, { d: 2, c: new Date(0) }] }, { tool_call_id: "c1" }), ev(runId, "tool_result", "r", { tool_call_id: "c1" }), ev(runId, "agent_response", "a")]);
  await store.append(sessionId, [
    ev(runId, "tool_result", "r", { tool_call_id: "c9" }), // another call: stored
    ev(other, "agent_response", "a"), // another run: stored
    { event_type: "agent_response", content: "a" }, // no run: stored
    ev(runId, "tool_call", { a: [1, { c: new Date(0), d: 2 }], b: 1 }, { tool_call_id: "c1" }), // the same call, keys reordered: skipped
    ev(runId, "tool_call", { a: [{ c: new Date(0), d: 2 }, 1], b: 1 }, { tool_call_id: "c1" }), // its array in another order: stored
  ]);
  endExecution(runId, skip);
  assert.deepEqual((await logOf(store, sessionId)).slice(3), ['tool_result "r"', 'agent_response "a"', 'agent_response "a"', 'tool_call {"a":[{"c":"1970-01-01T00:00:00.000Z","d":2},1],"b":1}']);
});

test("each event type a replay gives with the same content is matched on it; the others on their type and call only", async () => {
  const sameContent = ["run_started", "user_message", "tool_call", "tool_result", "delegation_request", "delegation_response", "agent_response", "run_ended", "steering", "error", "loop_warning"];
  for (const type of sameContent) {
    const store = skippingStore();
    const { runId, sessionId } = ids();
    const skip = await replaying(store, sessionId, runId, [ev(runId, type, { v: 1 })]);
    await store.append(sessionId, [ev(runId, type, { v: 2 })]);
    endExecution(runId, skip);
    assert.deepEqual(await logOf(store, sessionId), [`${type} {"v":1}`, `${type} {"v":2}`], `${type}: other content is another event`);
  }
  // A checkpoint's or an approval request's content carries ids new in each execution: matched on its type.
  const store = skippingStore();
  const { runId, sessionId } = ids();
  const skip = await replaying(store, sessionId, runId, [ev(runId, "checkpoint", { id: "ck1" }), ev(runId, "approval_requested", { id: "a1" }, { tool_call_id: "c1" })]);
  await store.append(sessionId, [ev(runId, "approval_requested", { id: "a2" }, { tool_call_id: "c1" }), ev(runId, "checkpoint", { id: "ck2" })]);
  endExecution(runId, skip);
  assert.deepEqual(await logOf(store, sessionId), ['checkpoint {"id":"ck1"}', 'approval_requested {"id":"a1"}']);
});

test("a call id that is not a string is no call id: the events match on their type and content", async () => {
  const store = skippingStore();
  const { runId, sessionId } = ids();
  const skip = await replaying(store, sessionId, runId, [ev(runId, "tool_result", "r", { tool_call_id: 1 })]);
  await store.append(sessionId, [ev(runId, "tool_result", "r", { tool_call_id: 2 }), ev(runId, "tool_result", "r", { tool_call_id: 3 })]);
  endExecution(runId, skip);
  assert.deepEqual(await logOf(store, sessionId), ['tool_result "r"', 'tool_result "r"']);
});

test("events the store trimmed since the run was queued count as the run's: that many are skipped unread, then the stored ones by key", async () => {
  const store = skippingStore(new InMemoryStore({ maxEventsPerSession: 2 }));
  const { runId, sessionId } = ids();
  await store.append(sessionId, [{ event_type: "user_message", content: "earlier" }]);
  const skip = await replaying(store, sessionId, runId, [ev(runId, "run_started"), ev(runId, "user_message", "q"), ev(runId, "tool_call", { n: 1 }, { tool_call_id: "c1" }), ev(runId, "run_ended", "ABORTED")]);
  // The store kept the last two: two of the run's trimmed away, counted (not the earlier run's one).
  assert.equal(skip && storedCount(skip), 4);
  await store.append(sessionId, [ev(runId, "run_started"), ev(runId, "user_message", "q")]);
  await store.append(sessionId, [ev(runId, "tool_call", { n: 1 }, { tool_call_id: "c1" })]);
  await store.append(sessionId, [ev(runId, "tool_result", "ok", { tool_call_id: "c1" })]);
  endExecution(runId, skip);
  assert.equal((await store.getSession(sessionId))?.last_seq, 6);
  assert.deepEqual(await logOf(store, sessionId), ['run_ended "ABORTED"', 'tool_result "ok"']);
});

test("a run whose stored events were all trimmed away (another run's kept): each is skipped unread until they are used up", async () => {
  const store = skippingStore(new InMemoryStore({ maxEventsPerSession: 2 }));
  const { runId, sessionId } = ids();
  const start = await memoryStartOf(sessionMemory(store), sessionId);
  await store.append(sessionId, [ev(runId, "run_started"), ev(runId, "user_message", "q"), ev(runId, "run_ended", "ABORTED")]);
  await store.append(sessionId, [ev("run_neighbour", "user_message", "n1"), ev("run_neighbour", "agent_response", "n2")]);
  const skip = await beginExecution(sessionMemory(store), runId, sessionId, start);
  assert.equal(skip && storedCount(skip), 3);
  await store.append(sessionId, [ev(runId, "run_started")]);
  await store.append(sessionId, [ev(runId, "user_message", "q"), ev(runId, "tool_call", { n: 1 }, { tool_call_id: "c1" })]);
  await store.append(sessionId, [ev(runId, "agent_response", "a")]);
  endExecution(runId, skip);
  assert.equal((await store.getSession(sessionId))?.last_seq, 6);
});

test("content is told apart as JSON: an array from an object, its items' bounds, a missing content as null", async () => {
  const store = skippingStore();
  const { runId, sessionId } = ids();
  const skip = await replaying(store, sessionId, runId, [ev(runId, "tool_result", ["a", "b"]), ev(runId, "tool_result", [1, 23]), { event_type: "run_started", metadata: { run_id: runId } }]);
  await store.append(sessionId, [ev(runId, "tool_result", { 0: "a", 1: "b" }), ev(runId, "tool_result", [12, 3]), { event_type: "run_started", metadata: { run_id: runId } }]);
  await store.append(sessionId, [ev(runId, "tool_result", ["a", "b"]), ev(runId, "tool_result", [1, 23])]);
  endExecution(runId, skip);
  assert.deepEqual((await logOf(store, sessionId)).slice(3), ['tool_result {"0":"a","1":"b"}', "tool_result [12,3]"]);
});

test("a run that stored more than a page of events is matched whole on replay", async () => {
  const store = skippingStore();
  const { runId, sessionId } = ids();
  await store.append(sessionId, [{ event_type: "user_message", content: "earlier" }]);
  const many = Array.from({ length: 1500 }, (_, index) => ev(runId, "tool_result", index, { tool_call_id: `c${index}` }));
  const skip = await replaying(store, sessionId, runId, many);
  assert.equal(skip && storedCount(skip), 1500);
  await store.append(sessionId, many);
  await store.append(sessionId, [ev(runId, "agent_response", "end")]);
  endExecution(runId, skip);
  const log = await logOf(store, sessionId);
  assert.equal(log.length, 1502);
  assert.equal(log.at(-1), 'agent_response "end"');
});

test("an execution's end drops its own skip only: a newer execution of the run keeps skipping", async () => {
  const store = skippingStore();
  const { runId, sessionId } = ids();
  const older = await replaying(store, sessionId, runId, [ev(runId, "user_message", "one")]);
  const newer = await beginExecution(sessionMemory(store), runId, sessionId, 0);
  endExecution(runId, older);
  await store.append(sessionId, [ev(runId, "user_message", "one")]);
  assert.deepEqual(await logOf(store, sessionId), ['user_message "one"']);
  // The newer one ended with events left unmatched: they are not skipped for a later writer.
  await store.append(sessionId, [ev(runId, "agent_response", "two")]);
  const third = await beginExecution(sessionMemory(store), runId, sessionId, 0);
  endExecution(runId, newer);
  endExecution(runId, third);
  await store.append(sessionId, [ev(runId, "user_message", "one"), ev(runId, "agent_response", "two")]);
  assert.deepEqual(await logOf(store, sessionId), ['user_message "one"', 'agent_response "two"', 'user_message "one"', 'agent_response "two"']);
});

test("an execution that stored nothing, or without a session or its start, skips nothing", async () => {
  const store = skippingStore();
  const { runId, sessionId } = ids();
  await store.append(sessionId, [ev("run_other", "user_message", "x")]);
  const memory = sessionMemory(store);
  assert.equal(await beginExecution(memory, runId, sessionId, 0), undefined, "nothing of this run stored");
  assert.equal(await beginExecution(memory, runId, sessionId, 1), undefined, "nothing stored since the run started");
  assert.equal(await beginExecution(memory, runId, undefined, 0), undefined);
  assert.equal(await beginExecution(memory, runId, sessionId, undefined), undefined);
  assert.equal(await beginExecution(undefined, runId, sessionId, 0), undefined);
  await store.append(sessionId, [ev(runId, "user_message", "x")]);
  assert.equal(await beginExecution(memory, runId, undefined, 0), undefined, "no session");
  assert.equal(await beginExecution(memory, runId, sessionId, undefined), undefined, "no start");
  await store.append(sessionId, [ev(runId, "user_message", "x")]);
  assert.deepEqual(await logOf(store, sessionId), ['user_message "x"', 'user_message "x"', 'user_message "x"']);
});

test("where a session's log stands as a run starts: its last seq, 0 for a new session, nothing without a session or store", async () => {
  const store = skippingStore();
  const { sessionId } = ids();
  assert.equal(await memoryStartOf(sessionMemory(store), sessionId), 0);
  await store.append(sessionId, [{ event_type: "user_message", content: "a" }, { event_type: "user_message", content: "b" }]);
  assert.equal(await memoryStartOf(sessionMemory(store), sessionId), 2);
  assert.equal(await memoryStartOf(sessionMemory(store), undefined), undefined);
  assert.equal(await memoryStartOf(undefined, sessionId), undefined);
  const memory: SessionMemory = { loadHistory: async () => [], onEvent: () => undefined };
  assert.equal(await memoryStartOf(memory, sessionId), undefined);
});

test("a store that is not a whole MemoryStore is no store: not wrapped, no start, no skip", async () => {
  for (const store of [{ append: async () => [] }, { events: async () => [] }, { append: "no", events: async () => [] }, { append: async () => [], events: "no" }]) {
    const memory = { loadHistory: async () => [], onEvent: () => undefined, store } as unknown as SessionMemory;
    const durable = durableMemory(memory);
    assert.equal("store" in durable, false);
    assert.equal(await memoryStartOf(memory, "s"), undefined);
    assert.equal(await beginExecution(memory, "r", "s", 0), undefined);
  }
  const store = new InMemoryStore();
  const { append } = store;
  durableMemory({ loadHistory: async () => [], onEvent: () => undefined, store } as unknown as SessionMemory);
  assert.notEqual(store.append, append, "a whole store is wrapped");
});

test("a store written by several durable agents skips a replayed event once, and its append's answers and errors go through", async () => {
  const store = new InMemoryStore();
  const memory = sessionMemory(store);
  durableMemory(memory);
  durableMemory(memory);
  const { runId, sessionId } = ids();
  const skip = await replaying(store, sessionId, runId, [ev(runId, "user_message", "m"), ev(runId, "user_message", "m")]);
  // One replayed event appended: one stored one matched.
  assert.deepEqual(await store.append(sessionId, [ev(runId, "user_message", "m")]), []);
  const [again] = await store.append(sessionId, [ev(runId, "user_message", "m"), ev(runId, "agent_response", "new")]);
  endExecution(runId, skip);
  assert.equal(again?.content, "new");
  assert.deepEqual(await logOf(store, sessionId), ['user_message "m"', 'user_message "m"', 'agent_response "new"']);
  // An empty append reaches the store: its checks apply.
  await assert.rejects(store.append("", []), /session/i);
  assert.deepEqual(await store.append(sessionId, []), []);
});

test("a durable memory outside a workflow reads and writes as its session memory does", async () => {
  const store = new InMemoryStore();
  const memory = sessionMemory(store, { startWriteDelayMs: 0 });
  const durable = durableMemory(memory);
  assert.equal(durable.ordersItself, memory.ordersItself);
  assert.equal((durable as { store?: MemoryStore }).store, store);
  const { sessionId } = ids();
  await store.append(sessionId, [{ event_type: "user_message", content: "hello" }]);
  assert.deepEqual(
    (await durable.loadHistory(sessionId)).map((message) => [message.role, message.content]),
    [["user", "hello"]],
  );
  const plain: SessionMemory = { loadHistory: async () => [{ role: "user", content: "x" }], onEvent: () => undefined };
  const wrapped = durableMemory(plain);
  assert.equal("ordersItself" in wrapped, false);
  assert.equal("store" in wrapped, false);
  assert.deepEqual(await wrapped.loadHistory("s"), [{ role: "user", content: "x" }]);
  const seen: string[] = [];
  durableMemory({ ...plain, onEvent: (event) => {
      seen.push(event.type);
    },
  }).onEvent({ type: "text_delta", delta: "d" } as never, {} as never);
  assert.deepEqual(seen, ["text_delta"]);
});
