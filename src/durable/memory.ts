// The session memory of a durable run: the history it starts from is a step, and each of its events
// is stored once across the executions of the run (a recovery, a `resume`, an approval's next leg).
import { DBOS } from "@dbos-inc/dbos-sdk";
import type { SessionMemory } from "../loop/types.js";
import type { MemoryStore, NewMemoryEvent } from "../memory/store.js";
import { watched } from "./cancellation.js";
import { flushJournal } from "./journal.js";

/**
 * A durable agent's memory. `loadHistory` is a step (a recovered run continues the same conversation).
 * When the memory writes to a `MemoryStore` (a `sessionMemory(store)`), that store skips the events a
 * run's replay regenerates (see `beginExecution`), for every writer of the store.
 * `checkpointResumed` is left out: a run's checkpoints are resumed once by DBOS (a recorded decision
 * is replayed, not asked again), and a replay resumes the same checkpoint again, which the log records.
 */
export function durableMemory(memory: SessionMemory): SessionMemory {
  const store = storeOf(memory);
  if (store) skipReplayed(store);
  return {
    loadHistory: (sessionId) => {
      if (!DBOS.isWithinWorkflow()) return memory.loadHistory(sessionId);
      flushJournal();
      return watched(DBOS.workflowID, "the session's history load", DBOS.runStep(() => memory.loadHistory(sessionId), { name: "history" }));
    },
    onEvent: (event, run) => memory.onEvent(event, run),
    ...(memory.ordersItself ? { ordersItself: true } : {}),
    // The store it writes to, read by `beginExecution` of the run's workflow.
    ...(store ? { store } : {}),
  };
}

/** The store a session memory writes to (a `sessionMemory` handle's `store`), if it tells. */
export function storeOf(memory: SessionMemory | undefined): MemoryStore | undefined {
  const store = (memory as { store?: MemoryStore } | undefined)?.store;
  return store && typeof store.append === "function" && typeof store.events === "function" ? store : undefined;
}

/** The events an earlier execution of a run stored, which its replay regenerates: how many of each key, after `unknown` trimmed ones. */
export interface StoredRun {
  /** Events the store trimmed away since the run was queued (counted as the run's: skipped unread). */
  unknown: number;
  /** The stored events not matched yet, by key (`replayKey`). */
  keys: Map<string, number>;
}

/** The replayed events not to store again, by run id: one entry per execution (an execution ending never drops another's). */
const replayed = new Map<string, StoredRun>();
/** The stores whose `append` skips replayed events (each wrapped once, whatever number of agents write to it). */
const skipping = new WeakSet<MemoryStore>();

/**
 * Wraps `store.append`: an event of a run whose execution replays (`replayed`) is skipped when an
 * event stored earlier matches it (its type, its tool call, its content where a replay gives the
 * same; each stored event matches once, in any order: a wave's calls may end in another order on
 * replay). What the earlier execution did not get to do, or did otherwise (a cancelled execution's
 * aborted tool result and end), is stored. The append's options go through unchanged.
 */
function skipReplayed(store: MemoryStore): void {
  if (skipping.has(store)) return;
  skipping.add(store);
  const append = store.append.bind(store);
  store.append = (sessionId, events, options) => {
    const kept = replayed.size === 0 ? events : events.filter((event) => !isReplayed(event));
    return kept.length > 0 || events.length === 0 ? append(sessionId, kept, options) : Promise.resolve([]);
  };
}

/** Whether `event` is one its run's earlier execution stored (it is then counted as matched). */
function isReplayed(event: NewMemoryEvent): boolean {
  const runId = event.metadata?.run_id;
  const skip = typeof runId === "string" ? replayed.get(runId) : undefined;
  if (!skip) return false;
  if (skip.unknown > 0) skip.unknown--;
  else {
    const key = replayKey(event);
    const left = skip.keys.get(key);
    if (!left) return false;
    if (left === 1) skip.keys.delete(key);
    else skip.keys.set(key, left - 1);
  }
  if (skip.unknown === 0 && skip.keys.size === 0) replayed.delete(runId as string);
  return true;
}

/**
 * Called as an execution of run `runId` begins, before its loop: what an earlier execution of the
 * run stored in the session (every event of the run after seq `memoryStart`, the session's last when
 * the run was started) is not stored again. Returns this execution's skip (undefined when nothing was
 * stored: a run's first execution), for `endExecution`.
 */
export async function beginExecution(memory: SessionMemory | undefined, runId: string, sessionId: string | undefined, memoryStart: number | undefined): Promise<StoredRun | undefined> {
  const store = storeOf(memory);
  if (!store || sessionId === undefined || memoryStart === undefined) return undefined;
  const stored = await storedSince(store, sessionId, runId, memoryStart);
  if (storedCount(stored) === 0) return undefined;
  replayed.set(runId, stored);
  return stored;
}

/** As the execution that began with `skip` ends: what it did not replay is not skipped for another. */
export function endExecution(runId: string, skip: StoredRun | undefined): void {
  if (skip && replayed.get(runId) === skip) replayed.delete(runId);
}

/** How many stored events a skip holds. */
export function storedCount(stored: StoredRun): number {
  let count = stored.unknown;
  for (const times of stored.keys.values()) count += times;
  return count;
}

/** Where session `sessionId`'s log stands (its last seq) as a run of it starts: its events come after. */
export async function memoryStartOf(memory: SessionMemory | undefined, sessionId: string | undefined): Promise<number | undefined> {
  const store = storeOf(memory);
  if (!store || sessionId === undefined) return undefined;
  return (await store.getSession(sessionId))?.last_seq ?? 0;
}

/** The event types whose content a replay regenerates as it was (the others carry ids new in each execution, such as a checkpoint's). */
const SAME_CONTENT = new Set(["run_started", "user_message", "tool_call", "tool_result", "delegation_request", "delegation_response", "agent_response", "run_ended", "steering", "error", "loop_warning"]);

/** What tells a replayed event from another: its type, its tool call, and its content when a replay gives the same. */
function replayKey(event: { event_type: string; content?: unknown; metadata?: Record<string, unknown> | null }): string {
  const callId = event.metadata?.tool_call_id;
  return JSON.stringify([event.event_type, typeof callId === "string" ? callId : null, SAME_CONTENT.has(event.event_type) ? canonical(event.content) : null]);
}

/** JSON with object keys sorted (PostgreSQL's jsonb gives them back in its own order). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object" && !(value instanceof Date)) {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * What run `runId` stored in the session after seq `base`, however much (the store's `events`
 * without `afterSeq` gives only the most recent). Events the store trimmed away (its per-session
 * limit) since `base` are counted as the run's (when the run alone outgrew the limit, they may
 * include those of runs queued before it on the session: an overcount, rare).
 */
async function storedSince(store: MemoryStore, sessionId: string, runId: string, base: number): Promise<StoredRun> {
  const page = 1000;
  const stored: StoredRun = { unknown: 0, keys: new Map() };
  let after = base;
  for (;;) {
    const events = await store.events(sessionId, { afterSeq: after, limit: page });
    if (after === base && events.length > 0) stored.unknown += events[0]!.seq - base - 1;
    for (const event of events) {
      if (event.metadata?.run_id !== runId) continue;
      const key = replayKey(event);
      stored.keys.set(key, (stored.keys.get(key) ?? 0) + 1);
    }
    if (events.length < page) return stored;
    after = events.at(-1)!.seq;
  }
}
