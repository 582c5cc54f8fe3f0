// A library durable run with a session's memory, executed again (`resume` after a cancel, as DBOS's
// recovery runs it: the loop from its start, the recorded steps replayed): each event is stored once
// in the session's log (src/durable/memory.ts, the skip serve's durable mode uses too). Before, the
// replayed first leg was stored a second time (the user message twice in the session's history).
// Real PostgreSQL for the store whose jsonb gives objects back with their keys reordered.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, test } from "node:test";
import { type DurableAgent, durableAgent, type JournalEncoder } from "../../../src/durable/index.js";
import { Agent, defineTool, ScriptedModel } from "../../../src/index.js";
import { InMemoryStore, type MemoryStore, sessionMemory } from "../../../src/memory/index.js";
import { openPostgresStore } from "../../../src/memory/postgres.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../../memory/postgres-server.js";
import { shared } from "./shared.js";

const calls = (...list: Array<[string, string, Record<string, unknown>]>) => JSON.stringify({ tool_calls: list.map(([id, name, args]) => ({ id, name, arguments: args })) });

/** What the tools did, and a way to know one is in flight. */
const done: string[] = [];
let inFlight: (() => void) | undefined;
/** A tool whose first execution waits until its run is aborted (the test cancels the run there); later ones answer. */
const hangsOnce = (name: string, needsApproval: boolean) =>
  defineTool<Record<string, unknown>>({
    name,
    description: name,
    parameters: { type: "object" },
    needsApproval,
    execute: async (args, context) => {
      done.push(`${name} ${JSON.stringify(args)}`);
      if (done.filter((line) => line.startsWith(`${name} `)).length === 1) {
        inFlight?.();
        await new Promise<void>((_resolve, reject) => context.signal.addEventListener("abort", () => reject(new Error("stopped")), { once: true }));
      }
      return `${name} ok`;
    },
  });

// An approval, then the approved call in flight when the run is cancelled: the in-process store.
const memoryStore = new InMemoryStore();
const approved = durableAgent(
  new Agent({ name: "replay-approved", model: new ScriptedModel([calls(["s1", "send", { n: 1 }]), "Sent."]), tools: [hangsOnce("send", true)], memory: sessionMemory(memoryStore) }),
  shared,
);
// Another agent writing to the same store and session meanwhile (a library run has no queue): its
// events are not the run's, though its answer and ending read the same.
const neighbour = new Agent({ name: "replay-neighbour", model: new ScriptedModel(["Sent."]), memory: sessionMemory(memoryStore) });

// A call in flight when the run is cancelled, on PostgreSQL; the call's arguments are an object whose
// keys jsonb gives back in another order (shorter keys first).
// (Opened while the file's agents are made, not awaited: every durable agent must be made before the
// launch, which the test runner's hooks start while a module still awaits.)
const opening = openPostgresStore({ url: postgresUrl(), schema: uniqueSchema("durable_replay") });
opening.catch(() => undefined);
const pgStore = openedLater(opening);
after(async () => {
  await (await opening).close();
  await dropSchemas();
});
const onPostgres = durableAgent(
  new Agent({ name: "replay-postgres", model: new ScriptedModel([calls(["p1", "fetch", { zz: 1, a: { yy: 2, b: 3 } }]), "Fetched."]), tools: [hangsOnce("fetch", false)], memory: sessionMemory(pgStore) }),
  shared,
);

// A store that keeps 4 events per session: the run's first events are trimmed away before its
// replay, which counts them as its own (skipped unread), not the session's earlier runs' trimmed ones.
const smallStore = new InMemoryStore({ maxEventsPerSession: 4 });
const trimmed = durableAgent(
  new Agent({ name: "replay-trimmed", model: new ScriptedModel([calls(["t1", "note", {}]), "Noted."]), tools: [hangsOnce("note", false)], memory: sessionMemory(smallStore, { startWriteDelayMs: 0 }) }),
  shared,
);
// A run without a session on an agent with a session memory: nothing to skip, nothing looked up.
const plain = durableAgent(new Agent({ name: "replay-plain", model: new ScriptedModel(["Plain."]), memory: sessionMemory(new InMemoryStore()) }), shared);
const earlierRuns = new Agent({ name: "replay-earlier", model: new ScriptedModel(["Hi."]), memory: sessionMemory(smallStore, { startWriteDelayMs: 0 }) });

// An idempotent call in flight when the run is cancelled runs again in the resumed execution, which
// the test holds there while another run writes to the session.
const busyStore = new InMemoryStore();
let working: (() => void) | undefined;
let release: Promise<void> = Promise.resolve();
const work = defineTool({
  name: "work",
  description: "works",
  parameters: { type: "object" },
  idempotent: true,
  execute: async (_args, context) => {
    done.push("work");
    if (done.length === 1) {
      inFlight?.();
      await new Promise<void>((_resolve, reject) => context.signal.addEventListener("abort", () => reject(new Error("stopped")), { once: true }));
    }
    working?.();
    await release;
    return "worked";
  },
});
/** What each execution's journal encoder was told at its `begin`: how many stored events its replay skips. */
const begins: number[] = [];
const journal = (): JournalEncoder => ({
  begin: async ({ replayedEvents }) => {
    begins.push(replayedEvents);
  },
  start: () => [],
  event: () => undefined,
  end: async () => [],
});
const busy = durableAgent(new Agent({ name: "replay-busy", model: new ScriptedModel([calls(["w1", "work", {}]), "Worked."]), tools: [work], memory: sessionMemory(busyStore) }), { ...shared, journal });
const busyNeighbour = new Agent({ name: "replay-busy-neighbour", model: new ScriptedModel(["Hello."]), memory: sessionMemory(busyStore) });

/** A store whose every method waits for `opening` (a property set on it stays its own). */
function openedLater(opening: Promise<MemoryStore>): MemoryStore {
  return new Proxy({} as MemoryStore, {
    get(own, key) {
      if (key in own) return own[key as keyof MemoryStore];
      return (...args: unknown[]) => opening.then((store) => (store[key as keyof MemoryStore] as (...args: unknown[]) => unknown).apply(store, args));
    },
  });
}

/** Polls what a run waits at until it waits on `callId`. */
async function waitingOn(durable: DurableAgent, runId: string, callId: string): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt++) {
    const wait = await durable.approvalWait(runId);
    if (wait?.result.checkpoint?.pending.some((call) => call.toolCallId === callId)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`run ${runId} never waited on ${callId}`);
}

/** Starts a run, waits until its tool is in flight (`beforeTool` first: e.g. an approval), cancels it and resumes it; its result. */
async function cancelledInToolAndResumed(durable: DurableAgent, input: string, runId: string, sessionId: string, beforeTool?: () => Promise<void>, whileCancelled?: () => Promise<void>, journaled = false) {
  const running = new Promise<void>((resolve) => {
    inFlight = resolve;
  });
  const run = await durable.run(input, { runId, sessionId, ...(journaled ? { journal: "j" } : {}) });
  run.result().catch(() => undefined);
  await beforeTool?.();
  await running;
  await durable.cancel(runId);
  await assert.rejects(run.result(), /has been cancelled/);
  await whileCancelled?.();
  await durable.resume(runId);
  return durable.retrieve(runId).result();
}

/** A session's log as `type[:detail]` of each event of run `runId` (the others as `other:<type>`). */
async function logOf(store: MemoryStore, sessionId: string, runId: string): Promise<string[]> {
  const events = await store.events(sessionId, { limit: 1000 });
  return events.map((event) => {
    if (event.metadata?.run_id !== runId) return `other:${event.event_type}`;
    const content = event.content as { state?: string } | string | null;
    if (event.event_type === "run_ended") return `run_ended:${(content as { state: string }).state}`;
    if (event.event_type === "tool_result") return `tool_result:${(event.metadata as { is_error?: boolean }).is_error ? "error" : "ok"}`;
    return event.event_type;
  });
}

test("a library durable run with memory, cancelled in its approved call and resumed: each event is stored once, the user's message once in the history", { timeout: 60_000 }, async () => {
  done.length = 0;
  const runId = `run_replay_approved_${randomUUID().slice(0, 8)}`;
  const sessionId = `sess_${randomUUID().slice(0, 8)}`;
  const result = await cancelledInToolAndResumed(
    approved,
    "send it",
    runId,
    sessionId,
    async () => {
      await waitingOn(approved, runId, "s1");
      await approved.decide(runId, { s1: { approve: true } });
    },
    async () => {
      assert.equal((await neighbour.run("hello", { sessionId })).text, "Sent.");
    },
  );
  assert.deepEqual([result.state, result.text], ["COMPLETED", "Sent."]);
  assert.deepEqual(done, ["send {\"n\":1}"], "the approved call in flight is not run again");
  assert.deepEqual(await logOf(memoryStore, sessionId, runId), [
    // The first leg, stopped for the approval (the call's request, then the checkpoint's).
    "run_started",
    "user_message",
    "approval_requested",
    "approval_requested",
    "run_ended:INTERRUPTED",
    // The approved leg, cancelled in its call.
    "run_started",
    "approval_decided",
    "tool_call",
    "tool_result:error",
    "run_ended:ABORTED",
    // The neighbour's run.
    "other:run_started",
    "other:user_message",
    "other:agent_response",
    "other:run_ended",
    // The resumed execution: only what the cancelled one did not do.
    "tool_result:error",
    "agent_response",
    "run_ended:COMPLETED",
  ]);
  const history = await approved.agent.config.memory!.loadHistory(sessionId);
  assert.deepEqual(
    history.filter((message) => message.role === "user").map((message) => message.content),
    ["send it", "hello"],
  );
});

test("a run in flight on PostgreSQL, cancelled and resumed: its replayed call matches the stored one though jsonb reordered its arguments' keys", { timeout: 60_000 }, async () => {
  done.length = 0;
  const runId = `run_replay_pg_${randomUUID().slice(0, 8)}`;
  const sessionId = `sess_${randomUUID().slice(0, 8)}`;
  const result = await cancelledInToolAndResumed(onPostgres, "fetch it", runId, sessionId);
  assert.deepEqual([result.state, result.text], ["COMPLETED", "Fetched."]);
  assert.deepEqual(await logOf(pgStore, sessionId, runId), ["run_started", "user_message", "tool_call", "tool_result:error", "run_ended:ABORTED", "tool_result:error", "agent_response", "run_ended:COMPLETED"]);
  // The store's own answer: a writer that reads nothing back gets nothing (the append's options go through).
  assert.deepEqual(await pgStore.append(sessionId, [{ event_type: "user_message", content: "later" }], { returnEvents: false }), []);
  const [stored] = await pgStore.append(sessionId, [{ event_type: "user_message", content: "later again" }]);
  assert.equal(stored?.content, "later again");
});

test("a run whose first events the store trimmed, resumed: the trimmed ones count as the run's, the session's earlier ones do not", { timeout: 60_000 }, async () => {
  done.length = 0;
  const sessionId = `sess_${randomUUID().slice(0, 8)}`;
  // An earlier run of the session: its events are trimmed away during the next run.
  assert.equal((await earlierRuns.run("first", { sessionId })).text, "Hi.");
  const before = (await smallStore.getSession(sessionId))!.last_seq;
  const runId = `run_replay_trimmed_${randomUUID().slice(0, 8)}`;
  const result = await cancelledInToolAndResumed(trimmed, "note it", runId, sessionId);
  assert.deepEqual([result.state, result.text], ["COMPLETED", "Noted."]);
  // Stored once: run_started, user_message, tool_call, tool_result, run_ended ABORTED by the cancelled
  // execution; the resumed one's tool result, answer and end. The store keeps the last 4.
  assert.equal((await smallStore.getSession(sessionId))!.last_seq, before + 8);
  assert.deepEqual(await logOf(smallStore, sessionId, runId), ["run_ended:ABORTED", "tool_result:error", "agent_response", "run_ended:COMPLETED"]);
});

test("while a resumed run replays, another run of its session stores its events whole; the replayed run's once", { timeout: 60_000 }, async () => {
  done.length = 0;
  const runId = `run_replay_busy_${randomUUID().slice(0, 8)}`;
  const sessionId = `sess_${randomUUID().slice(0, 8)}`;
  let releaseWork!: () => void;
  release = new Promise<void>((resolve) => {
    releaseWork = resolve;
  });
  const again = new Promise<void>((resolve) => {
    working = resolve;
  });
  begins.length = 0;
  const resumed = cancelledInToolAndResumed(busy, "work", runId, sessionId, undefined, undefined, true);
  await again;
  // The resumed execution has replayed the run's first steps and runs the call again: its skip holds
  // what the cancelled execution stored and it will not (the call's aborted result, the ABORTED end).
  const other = await busyNeighbour.run("hello", { sessionId });
  assert.deepEqual([other.state, other.text], ["COMPLETED", "Hello."]);
  releaseWork();
  const result = await resumed;
  assert.deepEqual([result.state, result.text], ["COMPLETED", "Worked."]);
  assert.deepEqual(done, ["work", "work"]);
  // The journal's encoder (serve's logs it) is told of the 5 stored events in the resumed execution only.
  assert.deepEqual(begins, [0, 5]);
  assert.deepEqual(await logOf(busyStore, sessionId, runId), [
    "run_started",
    "user_message",
    "tool_call",
    "tool_result:error",
    "run_ended:ABORTED",
    "other:run_started",
    "other:user_message",
    "other:agent_response",
    "other:run_ended",
    "tool_result:ok",
    "agent_response",
    "run_ended:COMPLETED",
  ]);
});

test("a durable run without a session on an agent with a session memory runs as any", { timeout: 60_000 }, async () => {
  const run = await plain.run("hi");
  assert.deepEqual([(await run.result()).state, (await run.result()).text], ["COMPLETED", "Plain."]);
});

test("a durable agent's memory keeps the session memory's own ordering of its writes", () => {
  assert.equal(approved.agent.config.memory?.ordersItself, true);
});
