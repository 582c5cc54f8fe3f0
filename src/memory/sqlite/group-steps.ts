/**
 * One group transaction of the embedded store as SQL: what a group holds (appends, lock attempts,
 * lock releases), the statements that write it (`groupSteps`), and the guard that lets a group
 * go in one call when the file is as this process expects (`guardStep`).
 */
import { hostname } from "node:os";
import { isoOf, type MemoryEvent, sessionsOfGroup } from "../store.js";
import type { SqlStep } from "./driver.js";
import { type EventRow, storedEvent } from "./event-rows.js";

export interface PendingAppend {
  sessionId: string;
  events: EventRow[];
  /** Whether the caller reads the stored events (`AppendOptions.returnEvents`): else it gets none. */
  returnEvents: boolean;
  resolve(stored: MemoryEvent[]): void;
  reject(error: unknown): void;
}

export interface PendingLock {
  sessionId: string;
  token: string;
  resolve(taken: boolean): void;
  reject(error: unknown): void;
}

export interface PendingRelease {
  sessionId: string;
  token: string;
  resolve(): void;
  reject(error: unknown): void;
}

/** What one group transaction writes. */
export interface Group {
  appends: PendingAppend[];
  locks: PendingLock[];
  releases: PendingRelease[];
}

/** Each append's stored events (none when the caller does not read them), whether each lock attempt took its lock, and each append's last seq. */
export type GroupResult = [MemoryEvent[][], boolean[], number[]];

/** What a group's statements depend on besides the group. */
export interface GroupContext {
  maxEventsPerSession: number;
  maxSessions: number;
  /** The deletion of expired rows, when one is due (see `pruneSteps`). */
  prune?: SqlStep[];
  /** What this process knows of the count of sessions (none: every new session counts them). */
  sessionCount?: SessionCount;
}

/** The count of the sessions table's statement: a group that makes new sessions reads it when an eviction may be due. */
export const COUNT_SESSIONS = "SELECT count(*) FROM agentloop_sessions";

/**
 * Sessions this store made since it last counted them (`COUNT_SESSIONS`, then evicting down to
 * `maxSessions`): a group that makes new sessions evicts only when the last count plus those
 * made since could pass `maxSessions`, or after every `RECOUNT_EVERY` made here (other processes
 * on the file make sessions too: they show in the next count). Below the limit a new session
 * costs no count and no eviction statement (before: two `DELETE`s, each counting every session).
 * At the limit (every new session evicts the oldest) a group does not read the count: its
 * eviction statement counts inside the transaction and deletes exactly what passes the limit,
 * so the group stays one call to the writer (`bounded`); the count is read again after every
 * `RECOUNT_EVERY` sessions made that way, to see sessions deleted meanwhile.
 */
export class SessionCount {
  /** The count as last read, or `maxSessions` after an eviction that did not read it (at most that many). */
  private counted: number | undefined;
  private madeSince = 0;
  /** Sessions made here since the count was last read. */
  private madeSinceRead = 0;
  private readonly recountEvery: number;

  constructor(private readonly maxSessions: number) {
    this.recountEvery = Math.min(RECOUNT_EVERY, Math.max(1, Math.ceil(maxSessions / 10)));
  }

  /** Whether a group making `made` new sessions may pass the limit (and carries the eviction). */
  due(made: number): boolean {
    return this.counted === undefined || this.counted + this.madeSince + made > this.maxSessions || this.madeSince + made >= this.recountEvery;
  }

  /** Whether that group must read the count (else its eviction counts in SQL: `bounded`). */
  mustRead(made: number): boolean {
    return this.counted === undefined || this.madeSinceRead + made >= this.recountEvery;
  }

  /** A group made `made` new sessions without counting. */
  made(made: number): void {
    this.madeSince += made;
    this.madeSinceRead += made;
  }

  /** A group counted `count` sessions (its own new ones included) and evicted down to `maxSessions`. */
  count(count: number): void {
    this.counted = Math.min(count, this.maxSessions);
    this.madeSince = 0;
    this.madeSinceRead = 0;
  }

  /** A group made `made` new sessions and evicted down to `maxSessions` without reading the count: at most that many now. */
  bounded(made: number): void {
    this.counted = this.maxSessions;
    this.madeSince = 0;
    this.madeSinceRead += made;
  }

  /** A group failed: what it made or counted is unknown, so the next new session counts. */
  forget(): void {
    this.counted = undefined;
  }
}

/** Sessions made here between two counts at most (a tenth of maxSessions when that is smaller). */
const RECOUNT_EVERY = 100;

/** A session's entry in a group's steps: its first seq in the group and its last seq after it (set by the group's read). */
export const newStepEntry = () => ({ nextSeq: 0, newLast: 0 });

const thisHost = hostname();

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}


/**
 * The first statement of a one-call group (see `oneCallGroup`): fails, naming `agentloop_guard`,
 * unless every session of the group has the last seq this process expects (0: none, or a session
 * not in the file) and no one holds the locks the group asks for. Its text depends only on which
 * of the three checks it makes (the sessions and locks go as JSON arrays), so it is prepared once
 * per form; a group with neither appends nor lock attempts (a release) needs none.
 */
export function guardStep(expected: ReadonlyArray<readonly [string, number]>, locks: ReadonlyArray<{ sessionId: string }>): SqlStep | undefined {
  const checks: string[] = [];
  const params: unknown[] = [];
  const fresh = expected.filter(([, last]) => last === 0).map(([sessionId]) => sessionId);
  const known = expected.filter(([, last]) => last !== 0);
  if (fresh.length > 0) {
    params.push(JSON.stringify(fresh));
    checks.push(`NOT EXISTS (SELECT 1 FROM agentloop_sessions WHERE session_id IN (SELECT value FROM json_each(?${params.length})) AND last_seq <> 0)`);
  }
  if (known.length > 0) {
    params.push(JSON.stringify(known));
    checks.push(`(SELECT count(*) FROM agentloop_sessions s, json_each(?${params.length}) k WHERE s.session_id = k.value ->> 0 AND s.last_seq = k.value ->> 1) = json_array_length(?${params.length})`);
  }
  if (locks.length > 0) {
    params.push(JSON.stringify(locks.map((attempt) => attempt.sessionId)));
    checks.push(`NOT EXISTS (SELECT 1 FROM agentloop_session_locks WHERE session_id IN (SELECT value FROM json_each(?${params.length})))`);
  }
  return checks.length === 0 ? undefined : { sql: `INSERT OR REPLACE INTO temp.agentloop_guard (id, ok) VALUES (1, ${checks.join(" AND ")})`, params };
}

/** Deletes the expired rows (`cutoff`: ms since the epoch). */
export function pruneSteps(cutoff: number): SqlStep[] {
  return [
    { sql: "DELETE FROM agentloop_events WHERE session_id IN (SELECT session_id FROM agentloop_sessions WHERE updated_ms < ?)", params: [cutoff] },
    { sql: "DELETE FROM agentloop_sessions WHERE updated_ms < ?", params: [cutoff] },
    { sql: "DELETE FROM agentloop_events WHERE timestamp_ms < ?", params: [cutoff] },
  ];
}

const VICTIMS = "SELECT session_id FROM agentloop_sessions WHERE session_id <> ?1 ORDER BY activity ASC LIMIT max(0, (SELECT count(*) FROM agentloop_sessions) - ?2)";

/** Evicts the least recently updated sessions beyond `maxSessions`, never `keep` (inside a write transaction). */
export function evictSteps(keep: string, maxSessions: number): SqlStep[] {
  // The same victims twice: the first statement leaves the sessions table as it was.
  return [
    { sql: `DELETE FROM agentloop_events WHERE session_id IN (${VICTIMS})`, params: [keep, maxSessions] },
    { sql: `DELETE FROM agentloop_sessions WHERE session_id IN (${VICTIMS})`, params: [keep, maxSessions] },
  ];
}

/** A new session's row; its activity the next value. */
const INSERT_SESSION = `INSERT INTO agentloop_sessions (session_id, created_at, updated_at, updated_ms, activity, last_seq, metadata)
  VALUES (?1, ?2, ?2, ?3, (SELECT coalesce(max(activity), 0) + 1 FROM agentloop_sessions), ?4, '{}')`;
/** A session's row, new or updated; its activity the next value. */
const UPSERT_SESSION = `INSERT INTO agentloop_sessions (session_id, created_at, updated_at, updated_ms, activity, last_seq, metadata)
  VALUES (?1, ?2, ?2, ?3, (SELECT coalesce(max(activity), 0) + 1 FROM agentloop_sessions), ?4, '{}')
  ON CONFLICT (session_id) DO UPDATE SET last_seq = last_seq + excluded.last_seq, updated_at = excluded.updated_at,
    updated_ms = excluded.updated_ms, activity = excluded.activity`;
/** The group's one read: the sessions' new last seqs and the holders of the locks asked for. */
const READ_GROUP = `SELECT 0, session_id, last_seq, NULL FROM agentloop_sessions WHERE session_id IN (SELECT value FROM json_each(?1))
  UNION ALL SELECT 1, session_id, owner_pid, owner_host FROM agentloop_session_locks WHERE session_id IN (SELECT value FROM json_each(?2))`;
const RELEASE_LOCK = "DELETE FROM agentloop_session_locks WHERE session_id = ? AND token = ?";
const TAKE_LOCK = "INSERT OR REPLACE INTO agentloop_session_locks (session_id, owner_pid, owner_host, token) VALUES (?, ?, ?, ?)";
const TRIM_EVENTS = "DELETE FROM agentloop_events WHERE session_id = ? AND seq <= ?";
/** Events written by one statement at most: a group's events go in statements of this many rows and one of the rest. */
export const EVENT_ROWS_PER_STATEMENT = 8;
const insertEvents: string[] = [];
/** The insert of `count` events (8 values a row). */
function insertEventsSql(count: number): string {
  let sql = insertEvents[count];
  if (sql === undefined) {
    sql = `INSERT INTO agentloop_events (session_id, seq, event_id, timestamp, timestamp_ms, event_type, content, metadata) VALUES ${Array.from({ length: count }, () => "(?,?,?,?,?,?,?,?)").join(",")}`;
    insertEvents[count] = sql;
  }
  return sql;
}

/**
 * The statements of one group transaction, for either connection: releases first (a session
 * released and taken again in one group changes hands), then the appends in arrival order (each
 * session's row, then the events), then the lock attempts. Every statement's text depends only on
 * the group's shape (its values are parameters), so each is prepared once per connection.
 */
export function* groupSteps(
  group: Group,
  context: GroupContext,
  sessions = sessionsOfGroup(group.appends, newStepEntry),
  /** Every session of the group is new to the file as far as this process knows: a plain insert of their rows, which fails (`UNIQUE`) when one is not (see `oneCallGroup`). */
  newSessions = false,
): Generator<SqlStep, GroupResult, unknown[][]> {
  if (context.prune) yield* context.prune;
  const { appends, locks, releases } = group;
  for (const release of releases) yield { sql: RELEASE_LOCK, params: [release.sessionId, release.token] };
  // `sessions`: per session, its events in the group and the index of its last append (sessions
  // are updated in that order, so "least recently updated" follows the appends: each one's
  // activity is the next value).
  if (sessions.size > 0) {
    const now = Date.now();
    const time = isoOf(now);
    const ordered = sessions.size === 1 ? [...sessions] : [...sessions].sort((a, b) => a[1].last - b[1].last);
    const sql = newSessions ? INSERT_SESSION : UPSERT_SESSION;
    for (const [sessionId, entry] of ordered) yield { sql, params: [sessionId, time, now, entry.count] };
  }
  const read = yield {
    sql: READ_GROUP,
    params: [JSON.stringify([...sessions.keys()]), JSON.stringify(locks.map((attempt) => attempt.sessionId))],
    read: true,
  };
  const holders = new Map<string, [number, string]>();
  /** Sessions the group made (or found made empty by createSession: they count as new). */
  let made = 0;
  for (const [kind, sessionId, value, host] of read as Array<[number, string, number, string | null]>) {
    if (Number(kind) === 1) {
      holders.set(sessionId, [Number(value), String(host)]);
      continue;
    }
    const entry = sessions.get(sessionId)!;
    const newLast = Number(value);
    // The session's first events: it may be new (or made empty by createSession; evicting checks the count anyway).
    if (newLast === entry.count) made++;
    entry.newLast = newLast;
    entry.nextSeq = newLast - entry.count + 1;
  }
  const max = context.maxEventsPerSession;
  /** The events' values, 8 a row, in arrival order (their rowids follow it). */
  const values: unknown[] = [];
  const lastSeqs: number[] = new Array(appends.length);
  const stored = appends.map((member, appendIndex) => {
    const entry = sessions.get(member.sessionId)!;
    const events: MemoryEvent[] = [];
    for (let index = 0; index < member.events.length; index++) {
      const event = member.events[index];
      const seq = entry.nextSeq++;
      if (member.returnEvents) events.push(storedEvent(member.sessionId, seq, event));
      // Events the session's limit would trim at once are not written.
      if (entry.newLast - seq >= max) continue;
      values.push(member.sessionId, seq, event.eventId, event.timestamp, event.ms, event.eventType, event.content, event.metadata);
    }
    lastSeqs[appendIndex] = entry.nextSeq - 1;
    return events;
  });
  const rowValues = 8 * EVENT_ROWS_PER_STATEMENT;
  let at = 0;
  for (; values.length - at >= rowValues; at += rowValues) yield { sql: insertEventsSql(EVENT_ROWS_PER_STATEMENT), params: values.slice(at, at + rowValues) };
  if (at < values.length) yield { sql: insertEventsSql((values.length - at) / 8), params: at === 0 ? values : values.slice(at) };
  for (const [sessionId, { newLast }] of sessions) {
    if (newLast > max) yield { sql: TRIM_EVENTS, params: [sessionId, newLast - max] };
  }
  // New sessions may push the count over maxSessions; never evict the group's last session.
  if (made > 0) {
    const counter = context.sessionCount;
    const keep = appends[appends.length - 1].sessionId;
    if (!counter || (counter.due(made) && counter.mustRead(made))) {
      const [[count]] = (yield { sql: COUNT_SESSIONS, params: [], read: true }) as Array<[number]>;
      if (Number(count) > context.maxSessions) yield* evictSteps(keep, context.maxSessions);
      counter?.count(Number(count));
    } else if (counter.due(made)) {
      // At the limit: the eviction counts in SQL, deleting only what passes it (no read, no round trip).
      yield* evictSteps(keep, context.maxSessions);
      counter.bounded(made);
    } else counter.made(made);
  }
  const taken: boolean[] = [];
  for (const attempt of locks) {
    const holder = holders.get(attempt.sessionId);
    // Free, or held by a process of this host that is gone (killed): taken.
    const free = !holder || (holder[1] === thisHost && holder[0] !== process.pid && !processIsAlive(holder[0]));
    taken.push(free);
    if (!free) continue;
    holders.set(attempt.sessionId, [process.pid, thisHost]);
    yield { sql: TAKE_LOCK, params: [attempt.sessionId, process.pid, thisHost, attempt.token] };
  }
  return [stored, taken, lastSeqs];
}
