/**
 * `agentloop/memory/embedded`: the durable default store. One SQLite file (through `libsql`, a
 * maintained driver with prebuilt binaries) in WAL mode: no server to run, opens in milliseconds,
 * many processes read it while one at a time writes (a server, `agentloop run --session` and
 * `agentloop events` on the same file at once).
 *
 * Appends are grouped: every append made in one turn of the event loop is written in the next, in
 * one transaction, on a second connection (`libsql/promise`) whose statements run on the driver's
 * threads, so SQLite's work on a commit never holds the event loop (see `writesOffThread`). Reads
 * run synchronously on the calling thread (tens of microseconds; WAL readers never wait).
 */
import { existsSync, mkdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { hostname } from "node:os";
import { dirname, join, resolve } from "node:path";
import { AgentLoopError } from "../errors.js";
import {
  abortedWaiting,
  checkAfterSeq,
  checkLimit,
  checkSessionId,
  checkTypes,
  closedError,
  defaultEmbeddedPath,
  type EventQuery,
  isoOf,
  prepareSessionMetadata,
  type LatestEventsQuery,
  type MemoryEvent,
  type MemoryLimits,
  type MemoryStore,
  type NewMemoryEvent,
  newSessionId,
  pauseForLock,
  prepareAppend,
  type ResolvedLimits,
  resolveLimits,
  type SessionInfo,
  sessionsOfGroup,
  withSeq,
} from "./store.js";
import { WalCheckpointer } from "./wal-checkpointer.js";

export { defaultEmbeddedPath };

export const DEFAULT_EMBEDDED_PATH = defaultEmbeddedPath();

/** The file name used when `path` names a directory. */
const FILE_IN_DIRECTORY = "memory.db";

export interface EmbeddedStoreOptions extends MemoryLimits {
  /**
   * The database file (created with its folders if missing), or a directory to hold `memory.db`
   * (an existing directory, or a path ending with a separator). Default `.agentloop/agent/memory.db`.
   */
  path?: string;
  /**
   * How long a write waits for another process's write to finish before failing (SQLite's busy
   * timeout). Default 5000 ms.
   */
  busyTimeoutMs?: number;
  /**
   * `"normal"` (default): a commit survives the process being killed at any point; after a power
   * loss or OS crash the last commits may be lost, never the file's consistency (SQLite WAL with
   * `synchronous=NORMAL`). `"full"`: every commit also waits for the disk (fsync, ~1-2 ms here).
   */
  synchronous?: "normal" | "full";
  /**
   * Group commit: appends made in one turn of the event loop are written together in the next
   * (one transaction). `false`: each append is written at once, in a transaction of its own.
   */
  groupCommit?: boolean;
  /**
   * With group commit, where the groups are written. `true` (default): on a second connection
   * through `libsql/promise`, whose statements run on the driver's threads, so a commit never
   * holds the event loop (every stream a server holds) while SQLite writes; the JavaScript thread
   * only builds each group's few statements. `false`: on the JavaScript thread, synchronously.
   * Reads stay on the JavaScript thread either way (WAL: they never wait for the writer).
   */
  writesOffThread?: boolean;
  /**
   * WAL checkpoints (copying the log into the database file, with an fsync of each). `true`
   * (default): on a second connection whose statements run off the JavaScript thread, a little
   * after commits; when the log reaches `truncatePages` pages (default 4096, 16 MB) this process's
   * writes wait while it is emptied (see docs/memory.md). `false`: SQLite's own, inside the
   * `COMMIT` that crosses 1,000 pages, on the thread that commits.
   */
  backgroundCheckpoints?: boolean | { delayMs?: number; truncatePages?: number };
}

/** The part of a SQLite driver the store uses (libsql's better-sqlite3-style API). */
interface Statement {
  run(params: unknown[]): unknown;
  all(params: unknown[]): unknown[];
  raw(toggle?: boolean): Statement;
}
interface Database {
  prepare(sql: string): Statement;
  exec(sql: string): unknown;
  close(): void;
}
type DatabaseConstructor = new (path: string, options?: { timeout?: number }) => Database;
/** The part of `libsql/promise` the writer connection uses: statements run on the driver's threads. */
interface AsyncStatement {
  iterate(params: unknown[]): Promise<Iterable<unknown>>;
  raw(toggle?: boolean): AsyncStatement;
}
interface AsyncDatabase {
  exec(sql: string): Promise<unknown>;
  prepare(sql: string): Promise<AsyncStatement>;
  close(): void;
}
type AsyncDatabaseConstructor = new (path: string, options?: { timeout?: number }) => AsyncDatabase;

/**
 * One step of a write transaction, run on either connection: a read (a statement with `params`,
 * returning rows as arrays), or statements that return nothing, with their values written in as
 * literals (`sqlText`), so consecutive ones go to the driver in one `exec`.
 */
interface SqlStep {
  sql: string;
  params?: unknown[];
}

/** Walks SQL steps: each write (no params) goes to `write`, each read to `read`, whose rows go back to the steps. */
function walkSteps<T>(steps: Generator<SqlStep, T, unknown[][]>, read: (sql: string, params: unknown[]) => unknown[][], write: (sql: string) => void): T {
  let step = steps.next();
  while (!step.done) {
    const { sql, params } = step.value;
    if (params) step = steps.next(read(sql, params));
    else {
      write(sql);
      step = steps.next([]);
    }
  }
  return step.value;
}

/** `walkSteps` with a read that goes to another thread. */
async function walkStepsAsync<T>(steps: Generator<SqlStep, T, unknown[][]>, read: (sql: string, params: unknown[]) => Promise<unknown[][]>, write: (sql: string) => void): Promise<T> {
  let step = steps.next();
  while (!step.done) {
    const { sql, params } = step.value;
    if (params) step = steps.next(await read(sql, params));
    else {
      write(sql);
      step = steps.next([]);
    }
  }
  return step.value;
}

/** A SQL string literal. */
function sqlText(text: string): string {
  return text.includes("'") ? `'${text.replaceAll("'", "''")}'` : `'${text}'`;
}

let driver: DatabaseConstructor | undefined;
function loadDriver(): DatabaseConstructor {
  if (!driver) {
    try {
      driver = createRequire(import.meta.url)("libsql") as DatabaseConstructor;
    } catch (error) {
      throw new AgentLoopError("configuration", `memory: the embedded store needs the "libsql" package and its binary for ${process.platform}-${process.arch}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  return driver;
}

/** Where the database file of `path` is (see `EmbeddedStoreOptions.path`). */
export function embeddedFileOf(path: string): string {
  const absolute = resolve(path);
  const isDirectory = /[\\/]$/.test(path) || (existsSync(absolute) && statSync(absolute).isDirectory());
  if (!isDirectory) return absolute;
  if (existsSync(join(absolute, "PG_VERSION"))) {
    throw new AgentLoopError(
      "configuration",
      `memory: ${absolute} is a PGlite store of an earlier agentloop version, which the embedded store (now a SQLite file) cannot read. ` +
        "Point MEMORY_PATH at a new file, or remove that directory.",
    );
  }
  return join(absolute, FILE_IN_DIRECTORY);
}

/**
 * The tables. Every event insert writes two b-trees (the table, keyed by its rowid, which follows
 * arrival order for `latestEvents`, and the (session, seq) index): no AUTOINCREMENT (its counter
 * row is one more write per insert) and no timestamp index (retention reads go through the
 * session index; the once-a-minute prune scans the table instead).
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS agentloop_sessions (
  session_id TEXT PRIMARY KEY,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  updated_ms INTEGER NOT NULL,
  activity INTEGER NOT NULL,
  last_seq INTEGER NOT NULL DEFAULT 0,
  metadata TEXT NOT NULL DEFAULT '{}'
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS agentloop_sessions_activity ON agentloop_sessions (activity);
CREATE INDEX IF NOT EXISTS agentloop_sessions_updated ON agentloop_sessions (updated_ms);
CREATE TABLE IF NOT EXISTS agentloop_events (
  id INTEGER PRIMARY KEY,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  timestamp TEXT NOT NULL,
  timestamp_ms INTEGER NOT NULL,
  event_type TEXT NOT NULL,
  content TEXT NOT NULL,
  metadata TEXT NOT NULL,
  UNIQUE (session_id, seq)
);
CREATE TABLE IF NOT EXISTS agentloop_session_locks (
  session_id TEXT PRIMARY KEY,
  owner_pid INTEGER NOT NULL,
  owner_host TEXT NOT NULL,
  token TEXT NOT NULL
) WITHOUT ROWID;
`;

/** A background checkpoint starts this long after a commit. */
const CHECKPOINT_DELAY_MS = 100;
/** The log is emptied (writes held) once it is this many pages long: 16 MB with 4 KB pages. */
const TRUNCATE_PAGES = 4096;
/** How long the emptying waits for other processes' writers and readers before trying again later. */
const TRUNCATE_WAIT_MS = 100;

/**
 * The first statement of a one-call group (see `oneCallGroup`): fails, naming `agentloop_guard`,
 * unless every session of the group has the last seq this process expects (0: none, or a session
 * not in the file) and no one holds the locks the group asks for. Literals only: SQLite parses
 * no JSON for it, and a group with neither appends nor lock attempts (a release) needs none.
 */
function guardStep(expected: ReadonlyArray<readonly [string, number]>, locks: ReadonlyArray<{ sessionId: string }>): string {
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

/** A session's entry in a group's steps: its first seq in the group and its last seq after it (set by the group's read). */
const newStepEntry = () => ({ nextSeq: 0, newLast: 0 });

/** How many sessions' last seqs a store remembers for its one-call groups (~100 bytes each). */
const LAST_SEQ_ENTRIES = 10_000;

/** How often a request waiting for a session another process is running asks again. */
const LOCK_POLL_MS = 25;

const thisHost = hostname();

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}


/** Physical deletion of expired rows runs at most this often (reads filter them out anyway). */
const PRUNE_INTERVAL_MS = 60_000;
/** `timestamp_ms`/`updated_ms` below every real time: no retention cutoff. */
const NO_CUTOFF = -8.64e15;

interface PendingAppend {
  sessionId: string;
  events: Array<Omit<MemoryEvent, "seq">>;
  resolve(stored: MemoryEvent[]): void;
  reject(error: unknown): void;
}

interface PendingLock {
  sessionId: string;
  token: string;
  resolve(taken: boolean): void;
  reject(error: unknown): void;
}

interface PendingRelease {
  sessionId: string;
  token: string;
  resolve(): void;
  reject(error: unknown): void;
}

/** What one group transaction writes. */
interface Group {
  appends: PendingAppend[];
  locks: PendingLock[];
  releases: PendingRelease[];
}

/** Each append's stored events, and whether each lock attempt took its lock. */
type GroupResult = [MemoryEvent[][], boolean[]];

type EventRow = [string, string, number, string, string, string, string, string];
type SessionRow = [string, string, string, number, string, number];

const EVENT_COLUMNS = "e.event_id, e.session_id, e.seq, e.timestamp, e.event_type, e.content, e.metadata, e.id";

function toEvent(row: unknown[]): MemoryEvent {
  const [eventId, sessionId, seq, timestamp, eventType, content, metadata] = row as EventRow;
  return {
    event_id: eventId,
    session_id: sessionId,
    seq: Number(seq),
    timestamp,
    event_type: eventType,
    content: JSON.parse(content),
    metadata: JSON.parse(metadata),
  };
}

function toSession(row: unknown[]): SessionInfo {
  const [sessionId, createdAt, updatedAt, lastSeq, metadata, eventCount] = row as SessionRow;
  return {
    session_id: sessionId,
    created_at: createdAt,
    updated_at: updatedAt,
    event_count: Number(eventCount),
    last_seq: Number(lastSeq),
    metadata: JSON.parse(metadata),
  };
}

function positiveMs(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) throw new AgentLoopError("configuration", `memory: ${name} must be a non-negative integer, got ${String(value)}`);
  return value;
}

/** The SQLite store. Open it with `openEmbeddedStore`. */
export class EmbeddedMemoryStore implements MemoryStore {
  readonly kind = "embedded";
  /** Every append waits in one queue written in call order (one transaction per group): a writer need not wait for one append before the next. */
  readonly appendsInOrder = true;
  /** The database file. */
  readonly path: string;
  private readonly limits: ResolvedLimits;
  private readonly statements = new Map<string, Statement>();
  private readonly groupCommit: boolean;
  private pending: PendingAppend[] = [];
  private pendingLocks: PendingLock[] = [];
  private pendingReleases: PendingRelease[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  /** Set while a group is being written by the writer connection. */
  private writing: Promise<void> | undefined;
  private readonly writerStatements = new Map<string, Promise<AsyncStatement>>();
  private closed = false;
  private closing: Promise<void> | undefined;
  private flushWaitsForHold = false;
  private lastPrune = 0;
  /** Session locks this store holds: token → session. */
  private readonly heldLocks = new Map<string, string>();
  /** Each session's last seq as this process last committed it (the most recent `LAST_SEQ_ENTRIES`): what a one-call group expects. */
  private readonly lastSeqs = new Map<string, number>();

  /** Use `openEmbeddedStore`. */
  constructor(
    private readonly db: Database,
    path: string,
    limits: ResolvedLimits,
    groupCommit: boolean,
    /** Background checkpoints (none: SQLite's own, in `COMMIT`). */
    private readonly checkpointer?: WalCheckpointer,
    /** The connection group commits are written on, off the JavaScript thread (none: on `db`, on this thread). */
    private readonly writer?: AsyncDatabase,
  ) {
    this.path = path;
    this.limits = limits;
    this.groupCommit = groupCommit;
  }

  async createSession(sessionId?: string, metadata: Record<string, unknown> = {}): Promise<SessionInfo> {
    this.check();
    const id = checkSessionId(sessionId ?? newSessionId());
    const metadataJson = JSON.stringify(prepareSessionMetadata(metadata));
    if (this.busy) await this.untilWritable();
    this.flushPending();
    this.guard(() =>
      this.write(() => {
        this.maybePrune();
        const now = Date.now();
        const existing = this.query("SELECT updated_ms FROM agentloop_sessions WHERE session_id = ?", [id]) as Array<[number]>;
        const cutoff = this.cutoffMs();
        if (existing.length === 0) {
          this.statement(
            `INSERT INTO agentloop_sessions (session_id, created_at, updated_at, updated_ms, activity, last_seq, metadata)
             VALUES (?, ?, ?, ?, (SELECT coalesce(max(activity), 0) + 1 FROM agentloop_sessions), 0, ?)`,
          ).run([id, isoOf(now), isoOf(now), now, metadataJson]);
          this.evict(id);
        } else if (existing[0][0] < cutoff) {
          // An expired session that was not pruned yet is revived (its old events stay hidden).
          this.statement(
            "UPDATE agentloop_sessions SET updated_at = ?, updated_ms = ?, activity = (SELECT coalesce(max(activity), 0) + 1 FROM agentloop_sessions) WHERE session_id = ?",
          ).run([isoOf(now), now, id]);
        }
      }),
    );
    return (await this.getSession(id))!;
  }

  async getSession(sessionId: string): Promise<SessionInfo | undefined> {
    this.check();
    checkSessionId(sessionId);
    if (this.busy) await this.untilWritable();
    this.flushPending();
    return this.guard(() => {
      const rows = this.query(
        `SELECT s.session_id, s.created_at, s.updated_at, s.last_seq, s.metadata,
           (SELECT count(*) FROM agentloop_events e WHERE e.session_id = s.session_id AND e.timestamp_ms >= ?2)
         FROM agentloop_sessions s WHERE s.session_id = ?1 AND s.updated_ms >= ?2`,
        [sessionId, this.cutoffMs()],
      );
      return rows.length > 0 ? toSession(rows[0] as unknown[]) : undefined;
    });
  }

  async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
    this.check();
    const prepared = prepareAppend(sessionId, events);
    if (prepared.length === 0) return [];
    return new Promise<MemoryEvent[]>((resolve, reject) => {
      this.pending.push({ sessionId, events: prepared, resolve, reject });
      this.schedule();
    });
  }

  /** Queues work for the next group transaction (after this turn of the event loop, or now without group commit). */
  private schedule(): void {
    if (!this.groupCommit) this.flushPending();
    else this.scheduled ??= setImmediate(() => this.startGroups());
  }

  /** Whether a read or a write on this thread must wait: a group is being written off the thread, or the log is being emptied. */
  private get busy(): boolean {
    return this.writing !== undefined || this.checkpointer?.hold !== undefined;
  }

  /**
   * Group commit off the JavaScript thread: the pending work is written by the writer connection
   * (`libsql/promise`, whose statements run on the driver's threads), one group after the other;
   * what arrives while a group is written forms the next. Without that connection, on this thread.
   */
  private startGroups(): void {
    this.scheduled = undefined;
    if (this.writer) this.writing ??= this.drainGroups();
    else this.flushPending();
  }

  private async drainGroups(): Promise<void> {
    try {
      for (;;) {
        await this.untilCheckpointed();
        if (this.pending.length === 0 && this.pendingLocks.length === 0 && this.pendingReleases.length === 0) return;
        const group = this.takeGroup();
        let result: GroupResult;
        try {
          result = await this.writeGroupOffThread(group);
        } catch (error) {
          this.failGroup(group, error);
          continue;
        }
        this.checkpointer?.noteCommit();
        this.settleGroup(group, result);
      }
    } finally {
      this.writing = undefined;
    }
  }

  /**
   * One group in one transaction on the writer connection, in as few calls as its statements
   * allow (each call is a trip to the driver's thread and back): the writes before the group's
   * read go with `BEGIN` in one `exec`, the read is one statement, the writes after it go with
   * `COMMIT` in another `exec`. Rolled back whole when a statement fails.
   */
  private async writeGroupOffThread(group: Group): Promise<GroupResult> {
    const writer = this.writer!;
    const oneCall = this.oneCallGroup(group);
    if (oneCall) {
      try {
        await writer.exec(oneCall.script);
        return oneCall.result;
      } catch (error) {
        await writer.exec("ROLLBACK").catch(() => {});
        if (!/agentloop_guard/.test(String((error as Error)?.message))) throw error;
        // Another process wrote these sessions or locks since the read: the group goes the longer way.
      }
    }
    let script = "BEGIN IMMEDIATE;";
    let begun = false;
    try {
      // The writes before a read go in one `exec` with it; the rest with COMMIT.
      const result = await walkStepsAsync(
        this.groupSteps(group),
        async (sql, params) => {
          await writer.exec(script);
          begun = true;
          script = "";
          const rows: unknown[][] = [];
          for (const row of await (await this.writerStatement(sql)).iterate(params)) rows.push(row as unknown[]);
          return rows;
        },
        (sql) => {
          script += sql;
        },
      );
      begun = true;
      await writer.exec(`${script}COMMIT;`);
      return result;
    } catch (error) {
      if (begun) await writer.exec("ROLLBACK").catch(() => {});
      throw error;
    }
  }

  /**
   * The whole group in one call to the writer's thread, written on what this process expects of
   * the file: each session's last seq as this process last committed it (`lastSeqs`; a session it
   * never wrote: none, 0) and no lock on the sessions whose locks it asks for. A guard statement
   * inside the transaction checks that expectation and fails (rolling it all back) when it is wrong
   * — another process wrote one of these sessions or holds one of the locks, or the session is
   * older than this process — and the group then goes the three-call way, which reads first. No
   * read on this thread: a session the server just made, or one it wrote last, costs no lookup.
   * Undefined when a lock is asked for a session the same group releases.
   */
  private oneCallGroup(group: Group): { script: string; result: GroupResult } | undefined {
    if (group.locks.length > 0 && group.releases.length > 0) {
      const released = new Set(group.releases.map((release) => release.sessionId));
      if (group.locks.some((attempt) => released.has(attempt.sessionId))) return undefined;
    }
    // Counted once: the group's steps below use the same entries.
    const sessions = sessionsOfGroup(group.appends, newStepEntry);
    const expected = [...sessions.keys()].map((sessionId) => [sessionId, this.lastSeqs.get(sessionId) ?? 0] as const);
    const guard = guardStep(expected, group.locks);
    // What the group's read inside the transaction would answer once the upsert ran.
    const after: unknown[][] = expected.map(([sessionId, last]) => [0, sessionId, last + sessions.get(sessionId)!.count, null]);
    let script = "";
    const result = walkSteps(
      this.groupSteps(group, sessions),
      () => after,
      (sql) => {
        script += sql;
      },
    );
    return { script: `BEGIN IMMEDIATE;${guard}${script}COMMIT;`, result };
  }

  private writerStatement(sql: string): Promise<AsyncStatement> {
    let statement = this.writerStatements.get(sql);
    if (!statement) {
      statement = this.writer!.prepare(sql).then((prepared) => prepared.raw(true));
      statement.catch(() => this.writerStatements.delete(sql));
      this.writerStatements.set(sql, statement);
    }
    return statement;
  }

  private takeGroup(): Group {
    const group: Group = { appends: this.pending, locks: this.pendingLocks, releases: this.pendingReleases };
    this.pending = [];
    this.pendingLocks = [];
    this.pendingReleases = [];
    return group;
  }

  /** Keeps the most recent `LAST_SEQ_ENTRIES` sessions (a Map iterates in insertion order: the first key is the oldest). */
  private rememberLastSeq(sessionId: string, seq: number): void {
    this.lastSeqs.delete(sessionId);
    this.lastSeqs.set(sessionId, seq);
    if (this.lastSeqs.size > LAST_SEQ_ENTRIES) this.lastSeqs.delete(this.lastSeqs.keys().next().value!);
  }

  /** What can fail is the database itself (busy past the timeout, disk full, I/O): every member of the group is told, none of it was written. */
  private failGroup(group: Group, error: unknown): void {
    const failure = this.describe(error);
    for (const member of group.appends) {
      this.lastSeqs.delete(member.sessionId);
      member.reject(failure);
    }
    for (const attempt of group.locks) attempt.reject(failure);
    for (const release of group.releases) release.reject(failure);
  }

  private settleGroup(group: Group, [stored, taken]: GroupResult): void {
    for (const [index, member] of group.appends.entries()) this.rememberLastSeq(member.sessionId, stored[index].at(-1)!.seq);
    for (const release of group.releases) release.resolve();
    for (const [index, member] of group.appends.entries()) member.resolve(stored[index]);
    for (const [index, attempt] of group.locks.entries()) attempt.resolve(taken[index]);
  }

  /**
   * Writes every pending append, lock release and lock attempt in one transaction on this thread,
   * then settles each one's promise (the path without the writer connection, and for reads and
   * `close`, which come here only once no group is being written off the thread).
   */
  private flushPending(): void {
    if (this.scheduled) {
      clearImmediate(this.scheduled);
      this.scheduled = undefined;
    }
    if (this.pending.length === 0 && this.pendingLocks.length === 0 && this.pendingReleases.length === 0) return;
    if (this.busy) {
      // A group is being written, or the log emptied: nothing touches the file on this thread until
      // then (a write would wait for its lock here, blocking the thread that must finish it).
      if (!this.flushWaitsForHold) {
        this.flushWaitsForHold = true;
        void this.untilWritable().then(() => {
          this.flushWaitsForHold = false;
          if (this.writer && !this.closed) this.startGroups();
          else this.flushPending();
        });
      }
      return;
    }
    const group = this.takeGroup();
    let result: GroupResult;
    try {
      result = this.write(() => this.runSync(this.groupSteps(group)));
    } catch (error) {
      this.failGroup(group, error);
      return;
    }
    this.settleGroup(group, result);
  }

  /**
   * The statements of one group transaction, for either connection: releases first (a session
   * released and taken again in one group changes hands), then the appends in arrival order (one
   * upsert of every session, one insert of every event), then the lock attempts. Each statement
   * carries the whole group (a JSON array, or the events' `VALUES` rows): a few statements per
   * group, however large.
   */
  private *groupSteps(group: Group, sessions = sessionsOfGroup(group.appends, newStepEntry)): Generator<SqlStep, GroupResult, unknown[][]> {
    if (this.limits.retentionMs !== undefined && Date.now() - this.lastPrune >= PRUNE_INTERVAL_MS) yield* this.pruneSteps();
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
      const values = ordered.map(([sessionId, entry], rank) => `(${sqlText(sessionId)},${rank + 1},${entry.count})`).join(",");
      yield {
        sql: `WITH base AS MATERIALIZED (SELECT coalesce(max(activity), 0) AS activity FROM agentloop_sessions)
          INSERT INTO agentloop_sessions (session_id, created_at, updated_at, updated_ms, activity, last_seq, metadata)
          SELECT v.column1, ${time}, ${time}, ${now}, base.activity + v.column2, v.column3, '{}'
          FROM (VALUES ${values}) AS v, base WHERE true
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
    let inserted = false;
    for (const [kind, sessionId, value, host] of read as Array<[number, string, number, string | null]>) {
      if (Number(kind) === 1) {
        holders.set(sessionId, [Number(value), String(host)]);
        continue;
      }
      const entry = sessions.get(sessionId)!;
      const newLast = Number(value);
      // The session's first events: it may be new (or made empty by createSession; evicting checks the count anyway).
      if (newLast === entry.count) inserted = true;
      entry.newLast = newLast;
      entry.nextSeq = newLast - entry.count + 1;
    }
    const max = this.limits.maxEventsPerSession;
    /** One `VALUES` row per event, as SQL literals. */
    const rows: string[] = [];
    const stored = appends.map((member) => {
      const entry = sessions.get(member.sessionId)!;
      const sessionLiteral = sqlText(member.sessionId);
      const events: MemoryEvent[] = new Array(member.events.length);
      for (let index = 0; index < member.events.length; index++) {
        const event = member.events[index];
        const seq = entry.nextSeq++;
        events[index] = withSeq(event, seq);
        // Events the session's limit would trim at once are not written.
        if (entry.newLast - seq >= max) continue;
        // Literals, not a JSON array read with `json_each` and `->>`: SQLite then parses no JSON
        // for a row (6 against 9–15 µs per event row, session ids in time order).
        rows.push(
          `(${sessionLiteral},${seq},${sqlText(event.event_id)},${sqlText(event.timestamp)},${Date.parse(event.timestamp)},${sqlText(event.event_type)},${sqlText(JSON.stringify(event.content))},${sqlText(JSON.stringify(event.metadata))})`,
        );
      }
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
    // A new session may push the count over maxSessions; never evict the group's last session.
    if (inserted) yield this.evictStep(appends[appends.length - 1].sessionId);
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
    return [stored, taken];
  }

  async events(sessionId: string, query: EventQuery = {}): Promise<MemoryEvent[]> {
    this.check();
    checkSessionId(sessionId);
    const limit = checkLimit(query.limit);
    const afterSeq = checkAfterSeq(query.afterSeq);
    const filter = checkTypes(query.types);
    const types = filter ? JSON.stringify(filter) : null;
    if (this.busy) await this.untilWritable();
    this.flushPending();
    return this.guard(() => {
      const where = `e.session_id = ?1 AND e.timestamp_ms >= ?2 AND e.seq > ?3
        AND (?4 IS NULL OR e.event_type IN (SELECT value FROM json_each(?4)))
        AND EXISTS (SELECT 1 FROM agentloop_sessions s WHERE s.session_id = ?1 AND s.updated_ms >= ?2)`;
      const sql =
        afterSeq === undefined
          ? `SELECT * FROM (SELECT ${EVENT_COLUMNS} FROM agentloop_events e WHERE ${where} ORDER BY e.seq DESC LIMIT ?5) ORDER BY seq ASC`
          : `SELECT ${EVENT_COLUMNS} FROM agentloop_events e WHERE ${where} ORDER BY e.seq ASC LIMIT ?5`;
      const rows = this.query(sql, [sessionId, this.cutoffMs(), afterSeq ?? 0, types, limit ?? -1]);
      return rows.map((row) => toEvent(row as unknown[]));
    });
  }

  async latestEvents(query: LatestEventsQuery = {}): Promise<MemoryEvent[]> {
    this.check();
    const limit = checkLimit(query.limit) ?? 100;
    const filter = checkTypes(query.types);
    const types = filter ? JSON.stringify(filter) : null;
    if (this.busy) await this.untilWritable();
    this.flushPending();
    return this.guard(() => {
      const rows = this.query(
        `SELECT * FROM (
           SELECT ${EVENT_COLUMNS} FROM agentloop_events e JOIN agentloop_sessions s ON s.session_id = e.session_id
           WHERE e.timestamp_ms >= ?1 AND s.updated_ms >= ?1 AND (?2 IS NULL OR e.event_type IN (SELECT value FROM json_each(?2)))
           ORDER BY e.id DESC LIMIT ?3) ORDER BY id ASC`,
        [this.cutoffMs(), types, limit],
      );
      return rows.map((row) => toEvent(row as unknown[]));
    });
  }

  async listSessions(options: { limit?: number } = {}): Promise<SessionInfo[]> {
    this.check();
    const limit = checkLimit(options.limit);
    if (this.busy) await this.untilWritable();
    this.flushPending();
    return this.guard(() => {
      const rows = this.query(
        `SELECT session_id, created_at, updated_at, last_seq, metadata, event_count FROM (
           SELECT s.*, (SELECT count(*) FROM agentloop_events e WHERE e.session_id = s.session_id AND e.timestamp_ms >= ?1) AS event_count
           FROM agentloop_sessions s WHERE s.updated_ms >= ?1 ORDER BY s.activity DESC LIMIT ?2) ORDER BY activity ASC`,
        [this.cutoffMs(), limit ?? -1],
      );
      return rows.map((row) => toSession(row as unknown[]));
    });
  }

  async deleteSession(sessionId: string): Promise<boolean> {
    this.check();
    checkSessionId(sessionId);
    if (this.busy) await this.untilWritable();
    this.flushPending();
    this.lastSeqs.delete(sessionId);
    return this.guard(() =>
      this.write(() => {
        this.statement("DELETE FROM agentloop_events WHERE session_id = ?").run([sessionId]);
        const deleted = this.query("DELETE FROM agentloop_sessions WHERE session_id = ? RETURNING session_id", [sessionId]);
        return deleted.length > 0;
      }),
    );
  }

  /**
   * Exclusive use of a session across the processes sharing the file (a server and
   * `agentloop run --session` on one session take turns). A row in `agentloop_session_locks`
   * names the holder; a holder whose process is gone (killed) is taken over. Waits while another
   * holder has it, polling; rejects with an `aborted` error when `signal` aborts first.
   */
  async lockSession(sessionId: string, signal?: AbortSignal): Promise<() => Promise<void>> {
    this.check();
    checkSessionId(sessionId);
    const token = newSessionId();
    // Each attempt joins the next group transaction (no commit of its own).
    while (!(await new Promise<boolean>((resolve, reject) => {
      if (signal?.aborted) return reject(abortedWaiting());
      this.pendingLocks.push({ sessionId, token, resolve, reject });
      this.schedule();
    }))) {
      await pauseForLock(LOCK_POLL_MS, signal);
    }
    this.heldLocks.set(token, sessionId);
    let released = false;
    const giveBack = () =>
      new Promise<void>((resolve, reject) => {
        this.pendingReleases.push({ sessionId, token, resolve, reject });
        this.schedule();
      });
    return async () => {
      if (released || this.closed) return;
      released = true;
      try {
        // Joins the group commit with the appends made before it (see MemoryStore.lockSession).
        await giveBack();
      } catch {
        // That group failed (its appends with it): once more on its own, so the session is not left locked.
        if (!this.closed) await giveBack();
      }
      this.heldLocks.delete(token);
    };
  }

  async close(): Promise<void> {
    this.closing ??= this.closeNow();
    return this.closing;
  }

  private async closeNow(): Promise<void> {
    this.closed = true;
    // Appends accepted before close are written at once (a caller may exit without awaiting close),
    // unless a group is being written or a truncating checkpoint holds the file: then once it is done, below.
    this.flushPending();
    await this.untilWritable();
    // A background checkpoint still running ends first (then its connection closes).
    await this.checkpointer?.close();
    this.flushPending();
    // Locks still held are given back (a lock of this live process would never be taken over).
    for (const [token, sessionId] of this.heldLocks) {
      try {
        this.statement("DELETE FROM agentloop_session_locks WHERE session_id = ? AND token = ?").run([sessionId, token]);
      } catch {
        // the file is unusable: its process's locks go stale when it exits
      }
    }
    this.heldLocks.clear();
    this.statements.clear();
    this.writerStatements.clear();
    try {
      this.writer?.close();
    } catch {
      // already unusable
    }
    this.db.close();
  }

  /** Deletes expired events and sessions now (appends also do it, at most once a minute). */
  async prune(): Promise<void> {
    this.check();
    if (this.busy) await this.untilWritable();
    this.flushPending();
    this.guard(() => this.write(() => this.pruneNow()));
  }

  /** Resolves once no truncating checkpoint holds the file. */
  private async untilWritable(): Promise<void> {
    while (this.busy) await (this.writing ?? this.checkpointer?.hold);
  }

  /** Resolves once no truncating checkpoint holds the file (a group waits for it before it starts). */
  private async untilCheckpointed(): Promise<void> {
    let hold: Promise<void> | undefined;
    while ((hold = this.checkpointer?.hold)) await hold;
  }

  private check(): void {
    if (this.closed) throw closedError(this.kind);
  }

  /** A prepared statement, made once per text; `rows`: one that returns rows, as arrays (no object per row). */
  private statement(sql: string, rows = false): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      if (rows) statement.raw(true);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private query(sql: string, params: unknown[]): unknown[][] {
    return this.statement(sql, true).all(params) as unknown[][];
  }

  /**
   * Runs `fn` in a write transaction. `BEGIN IMMEDIATE` takes the file's write lock at once
   * (waiting up to the busy timeout while another process writes), so a transaction never has
   * to upgrade a read lock, which SQLite cannot wait for.
   */
  private write<T>(fn: () => T): T {
    this.db.exec("BEGIN IMMEDIATE");
    let result: T;
    try {
      result = fn();
    } catch (error) {
      this.rollback();
      throw error;
    }
    try {
      this.db.exec("COMMIT");
    } catch (error) {
      this.rollback();
      throw error;
    }
    this.checkpointer?.noteCommit();
    return result;
  }

  /** Rolls back what is left of a transaction (SQLite may already have, after some errors). */
  private rollback(): void {
    try {
      this.db.exec("ROLLBACK");
    } catch {
      // no transaction left
    }
  }

  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      throw this.describe(error);
    }
  }

  private describe(error: unknown): AgentLoopError {
    if (AgentLoopError.isInstance(error)) return error;
    const code = (error as { code?: unknown })?.code;
    const busy = code === "SQLITE_BUSY" || code === "SQLITE_LOCKED";
    const message = (error as Error)?.message ?? String(error);
    return new AgentLoopError(
      busy ? "rate_limit" : "unknown",
      busy ? `memory (embedded): ${this.path} stayed locked by another process's write past the busy timeout (${message})` : `memory (embedded): ${message}`,
      { cause: error, retryable: busy },
    );
  }

  private cutoffMs(): number {
    return this.limits.retentionMs === undefined ? NO_CUTOFF : Date.now() - this.limits.retentionMs;
  }

  private maybePrune(): void {
    if (this.limits.retentionMs === undefined || Date.now() - this.lastPrune < PRUNE_INTERVAL_MS) return;
    this.pruneNow();
  }

  private pruneNow(): void {
    this.runSync(this.pruneSteps());
  }

  private *pruneSteps(): Generator<SqlStep, void, unknown[][]> {
    this.lastPrune = Date.now();
    if (this.limits.retentionMs === undefined) return;
    const cutoff = this.cutoffMs();
    yield {
      sql: `DELETE FROM agentloop_events WHERE session_id IN (SELECT session_id FROM agentloop_sessions WHERE updated_ms < ${cutoff});
        DELETE FROM agentloop_sessions WHERE updated_ms < ${cutoff};
        DELETE FROM agentloop_events WHERE timestamp_ms < ${cutoff};`,
    };
  }

  /** Evicts the least recently updated sessions beyond `maxSessions`, never `keep` (inside a write transaction). */
  private evict(keep: string): void {
    this.db.exec(this.evictStep(keep).sql);
  }

  private evictStep(keep: string): SqlStep {
    const victims = `SELECT session_id FROM agentloop_sessions WHERE session_id <> ${sqlText(keep)} ORDER BY activity ASC
      LIMIT max(0, (SELECT count(*) FROM agentloop_sessions) - ${this.limits.maxSessions})`;
    // The same victims twice: the first statement leaves the sessions table as it was.
    return { sql: `DELETE FROM agentloop_events WHERE session_id IN (${victims}); DELETE FROM agentloop_sessions WHERE session_id IN (${victims});` };
  }

  /** Runs the statements of `steps` on this thread's connection (inside a transaction the caller holds). */
  private runSync<T>(steps: Generator<SqlStep, T, unknown[][]>): T {
    return walkSteps(
      steps,
      (sql, params) => this.query(sql, params),
      (sql) => this.db.exec(sql),
    );
  }
}

/**
 * Opens (creating if needed) the embedded store: its file, WAL mode, the tables. Several processes
 * may open one file at once. Rejects with a `configuration` error naming the file when it cannot.
 */
export async function openEmbeddedStore(options: EmbeddedStoreOptions = {}): Promise<EmbeddedMemoryStore> {
  const limits = resolveLimits(options);
  const busyTimeoutMs = positiveMs("busyTimeoutMs", options.busyTimeoutMs, 5000);
  const synchronous = options.synchronous ?? "normal";
  if (synchronous !== "normal" && synchronous !== "full") {
    throw new AgentLoopError("configuration", `memory: synchronous must be "normal" or "full", got ${JSON.stringify(synchronous)}`);
  }
  const background = options.backgroundCheckpoints ?? true;
  const tuning = typeof background === "object" && background !== null ? background : {};
  const checkpointDelayMs = positiveMs("backgroundCheckpoints.delayMs", tuning.delayMs, CHECKPOINT_DELAY_MS);
  const truncatePages = tuning.truncatePages ?? TRUNCATE_PAGES;
  if (!Number.isInteger(truncatePages) || truncatePages < 1) {
    throw new AgentLoopError("configuration", `memory: backgroundCheckpoints.truncatePages must be a positive integer, got ${String(truncatePages)}`);
  }
  const file = embeddedFileOf(options.path ?? DEFAULT_EMBEDDED_PATH);
  try {
    mkdirSync(dirname(file), { recursive: true });
  } catch (error) {
    throw new AgentLoopError("configuration", `memory: cannot create the folder of the embedded store ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const Driver = loadDriver();
  let db: Database | undefined;
  try {
    db = new Driver(file, { timeout: busyTimeoutMs });
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    // WAL: readers never block the writer nor each other; a commit is one append to the log.
    db.exec("PRAGMA journal_mode = WAL");
    db.exec(`PRAGMA synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}`);
    // With background checkpoints, SQLite's own (in COMMIT, on this thread) is only a backstop:
    // it runs if the log grows to twice the size the background empties it at.
    if (background !== false) db.exec(`PRAGMA wal_autocheckpoint = ${2 * truncatePages}`);
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(SCHEMA);
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
  } catch (error) {
    try {
      db?.close();
    } catch {
      // already failing
    }
    throw new AgentLoopError("configuration", `memory: cannot open the embedded store ${file}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
  }
  const writer = db;
  /** The connection group commits are written on (see `writesOffThread`), opened below. */
  let offThread: AsyncDatabase | undefined;
  const checkpointer =
    background === false
      ? undefined
      : new WalCheckpointer({
          file,
          synchronous: synchronous === "full" ? "FULL" : "NORMAL",
          delayMs: checkpointDelayMs,
          truncateFrames: truncatePages,
          waitMs: Math.min(TRUNCATE_WAIT_MS, busyTimeoutMs),
          onFailure: () => {
            // The second connection failed: SQLite's own checkpoints take over again.
            try {
              writer.exec("PRAGMA wal_autocheckpoint = 1000");
            } catch {
              // the store is closed
            }
            offThread?.exec("PRAGMA wal_autocheckpoint = 1000").catch(() => {});
          },
        });
  const groupCommit = options.groupCommit ?? true;
  if (groupCommit && options.writesOffThread !== false) {
    try {
      const AsyncDriver = createRequire(import.meta.url)("libsql/promise") as AsyncDatabaseConstructor;
      offThread = new AsyncDriver(file, { timeout: busyTimeoutMs });
      await offThread.exec(
        `PRAGMA busy_timeout = ${busyTimeoutMs}; PRAGMA synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}; PRAGMA wal_autocheckpoint = ${background === false ? 1000 : 2 * truncatePages};
         CREATE TEMP TABLE agentloop_guard (id INTEGER PRIMARY KEY, ok INTEGER CONSTRAINT agentloop_guard CHECK (ok))`,
      );
    } catch (error) {
      try {
        offThread?.close();
      } catch {
        // already failing
      }
      await checkpointer?.close();
      writer.close();
      throw new AgentLoopError("configuration", `memory: cannot open the writer connection of the embedded store ${file}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
    }
  }
  return new EmbeddedMemoryStore(db, file, limits, groupCommit, checkpointer, offThread);
}
