/**
 * One group transaction of the embedded store as SQL: what a group holds (appends, lock attempts,
 * lock releases), the statements that write it (`groupSteps`), and the guard that lets a group
 * go in one call when the file is as this process expects (`guardStep`).
 */
import { hostname } from "node:os";
import { isoOf, type MemoryEvent, sessionsOfGroup } from "../store.js";
import { type SqlStep, sqlText } from "./driver.js";
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
  /** The deletion of expired rows, when one is due (see `pruneStep`). */
  prune?: SqlStep;
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
 * not in the file) and no one holds the locks the group asks for. Literals only: SQLite parses
 * no JSON for it, and a group with neither appends nor lock attempts (a release) needs none.
 */
export function guardStep(expected: ReadonlyArray<readonly [string, number]>, locks: ReadonlyArray<{ sessionId: string }>): string {
  const checks: string[] = [];
  const fresh = expected.filter(([, last]) => last === 0).map(([sessionId]) => sqlText(sessionId));
  const known = expected.filter(([, last]) => last !== 0);
  if (fresh.length > 0) checks.push(`NOT EXISTS (SELECT 1 FROM agentloop_sessions WHERE session_id IN (${fresh.join(",")}) AND last_seq <> 0)`);
  if (known.length > 0) {
    const pairs = known.map(([sessionId, last]) => `(${sqlText(sessionId)},${last})`).join(",");
    checks.push(`(SELECT count(*) FROM agentloop_sessions WHERE (session_id, last_seq) IN (VALUES ${pairs})) = ${known.length}`);
  }
  if (locks.length > 0) checks.push(`NOT EXISTS (SELECT 1 FROM agentloop_session_locks WHERE session_id IN (${locks.map((attempt) => sqlText(attempt.sessionId)).join(",")}))`);
  return checks.length === 0 ? "" : `INSERT OR REPLACE INTO temp.agentloop_guard (id, ok) VALUES (1, ${checks.join(" AND ")});`;
}

/** Deletes the expired rows (`cutoff`: ms since the epoch). */
export function pruneStep(cutoff: number): SqlStep {
  return {
    sql: `DELETE FROM agentloop_events WHERE session_id IN (SELECT session_id FROM agentloop_sessions WHERE updated_ms < ${cutoff});
      DELETE FROM agentloop_sessions WHERE updated_ms < ${cutoff};
      DELETE FROM agentloop_events WHERE timestamp_ms < ${cutoff};`,
  };
}

/** Evicts the least recently updated sessions beyond `maxSessions`, never `keep` (inside a write transaction). */
export function evictStep(keep: string, maxSessions: number): SqlStep {
  const victims = `SELECT session_id FROM agentloop_sessions WHERE session_id <> ${sqlText(keep)} ORDER BY activity ASC
    LIMIT max(0, (SELECT count(*) FROM agentloop_sessions) - ${maxSessions})`;
  // The same victims twice: the first statement leaves the sessions table as it was.
  return { sql: `DELETE FROM agentloop_events WHERE session_id IN (${victims}); DELETE FROM agentloop_sessions WHERE session_id IN (${victims});` };
}

/**
 * The statements of one group transaction, for either connection: releases first (a session
 * released and taken again in one group changes hands), then the appends in arrival order (one
 * upsert of every session, one insert of every event), then the lock attempts. Each statement
 * carries the whole group (a JSON array, or the events' `VALUES` rows): a few statements per
 * group, however large.
 */
export function* groupSteps(
group: Group,
context: GroupContext,
sessions = sessionsOfGroup(group.appends, newStepEntry),
/** Every session of the group is new to the file as far as this process knows: a plain insert of their rows, which fails (`UNIQUE`) when one is not (see `oneCallGroup`). */
newSessions = false,
): Generator<SqlStep, GroupResult, unknown[][]> {
if (context.prune) yield context.prune;
  const { appends, locks, releases } = group;
  if (releases.length > 0) {
    const pairs = releases.map((release) => `(${sqlText(release.sessionId)},${sqlText(release.token)})`).join(",");
    yield { sql: `DELETE FROM agentloop_session_locks WHERE (session_id, token) IN (VALUES ${pairs});` };
  }
  // `sessions`: per session, its events in the group and the index of its last append (sessions
  // are updated in that order, so "least recently updated" follows the appends).
  if (sessions.size > 0) {
    const now = Date.now();
    const ordered = sessions.size === 1 ? [...sessions] : [...sessions].sort((a, b) => a[1].last - b[1].last);
    // One upsert of every session; each one's activity is the next value in that order. Values
    // as literals (no JSON for SQLite to parse).
    const time = sqlText(isoOf(now));
    const values = () => ordered.map(([sessionId, entry], rank) => `(${sqlText(sessionId)},${rank + 1},${entry.count})`).join(",");
    if (newSessions && ordered.length === 1) {
      // One new session (a server's new chat): a plain row, which SQLite compiles in ~2/3 of the time of the select below.
      const [[sessionId, entry]] = ordered;
      yield {
        sql: `INSERT INTO agentloop_sessions (session_id, created_at, updated_at, updated_ms, activity, last_seq, metadata)
          VALUES (${sqlText(sessionId)}, ${time}, ${time}, ${now}, (SELECT coalesce(max(activity), 0) + 1 FROM agentloop_sessions), ${entry.count}, '{}');`,
      };
    } else if (newSessions)
      yield {
        sql: `INSERT INTO agentloop_sessions (session_id, created_at, updated_at, updated_ms, activity, last_seq, metadata)
          SELECT v.column1, ${time}, ${time}, ${now}, (SELECT coalesce(max(activity), 0) FROM agentloop_sessions) + v.column2, v.column3, '{}' FROM (VALUES ${values()}) AS v;`,
      };
    else
      yield {
      sql: `WITH base AS MATERIALIZED (SELECT coalesce(max(activity), 0) AS activity FROM agentloop_sessions)
        INSERT INTO agentloop_sessions (session_id, created_at, updated_at, updated_ms, activity, last_seq, metadata)
        SELECT v.column1, ${time}, ${time}, ${now}, base.activity + v.column2, v.column3, '{}'
        FROM (VALUES ${values()}) AS v, base WHERE true
        ON CONFLICT (session_id) DO UPDATE SET last_seq = last_seq + excluded.last_seq, updated_at = excluded.updated_at,
          updated_ms = excluded.updated_ms, activity = excluded.activity;`,
    };
  }
  // One read: the sessions' new last seqs and the holders of the locks asked for.
  const read = yield {
    sql: `SELECT 0, session_id, last_seq, NULL FROM agentloop_sessions WHERE session_id IN (SELECT value FROM json_each(?1))
      UNION ALL SELECT 1, session_id, owner_pid, owner_host FROM agentloop_session_locks WHERE session_id IN (SELECT value FROM json_each(?2))`,
    params: [JSON.stringify([...sessions.keys()]), JSON.stringify(locks.map((attempt) => attempt.sessionId))],
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
  /** One `VALUES` row per event, as SQL literals. */
  const rows: string[] = [];
  const lastSeqs: number[] = new Array(appends.length);
  const stored = appends.map((member, appendIndex) => {
    const entry = sessions.get(member.sessionId)!;
    const sessionLiteral = sqlText(member.sessionId);
    const events: MemoryEvent[] = [];
    for (let index = 0; index < member.events.length; index++) {
      const event = member.events[index];
      const seq = entry.nextSeq++;
      if (member.returnEvents) events.push(storedEvent(member.sessionId, seq, event));
      // Events the session's limit would trim at once are not written.
      if (entry.newLast - seq >= max) continue;
      // Literals, not a JSON array read with `json_each` and `->>`: SQLite then parses no JSON
      // for a row (6 against 9–15 µs per event row, session ids in time order).
      rows.push(`(${sessionLiteral},${seq}${event.values}`);
    }
    lastSeqs[appendIndex] = entry.nextSeq - 1;
    return events;
  });
  if (rows.length > 0) {
    // Every event in arrival order (their rowids follow it).
    yield {
      sql: `INSERT INTO agentloop_events (session_id, seq, event_id, timestamp, timestamp_ms, event_type, content, metadata) VALUES ${rows.join(",")};`,
    };
  }
  for (const [sessionId, { newLast }] of sessions) {
    if (newLast > max) yield { sql: `DELETE FROM agentloop_events WHERE session_id = ${sqlText(sessionId)} AND seq <= ${newLast - max};` };
  }
  // New sessions may push the count over maxSessions; never evict the group's last session.
  if (made > 0) {
    const counter = context.sessionCount;
    const keep = appends[appends.length - 1].sessionId;
    if (!counter || (counter.due(made) && counter.mustRead(made))) {
      const [[count]] = (yield { sql: COUNT_SESSIONS, params: [] }) as Array<[number]>;
      if (Number(count) > context.maxSessions) yield evictStep(keep, context.maxSessions);
      counter?.count(Number(count));
    } else if (counter.due(made)) {
      // At the limit: the eviction counts in SQL, deleting only what passes it (no read, no round trip).
      yield evictStep(keep, context.maxSessions);
      counter.bounded(made);
    } else counter.made(made);
  }
  const taken: boolean[] = [];
  const lockRows: Array<[string, number, string, string]> = [];
  for (const attempt of locks) {
    const holder = holders.get(attempt.sessionId);
    // Free, or held by a process of this host that is gone (killed): taken.
    const free = !holder || (holder[1] === thisHost && holder[0] !== process.pid && !processIsAlive(holder[0]));
    taken.push(free);
    if (!free) continue;
    holders.set(attempt.sessionId, [process.pid, thisHost]);
    lockRows.push([attempt.sessionId, process.pid, thisHost, attempt.token]);
  }
  if (lockRows.length > 0) {
    const values = lockRows.map(([sessionId, pid, host, token]) => `(${sqlText(sessionId)},${pid},${sqlText(host)},${sqlText(token)})`).join(",");
    yield { sql: `INSERT OR REPLACE INTO agentloop_session_locks (session_id, owner_pid, owner_host, token) VALUES ${values};` };
  }
  return [stored, taken, lastSeqs];
}
