/**
 * The embedded store (`EmbeddedMemoryStore`): reads on the store's own connection, synchronously
 * (WAL readers never wait); writes through the group commit (`group-commit.ts`); session locks as
 * rows of the file. Opened by `openEmbeddedStore` (`open.ts`).
 */
import { AgentLoopError } from "../../errors.js";
import {
  type AppendOptions,
  abortedWaiting,
  checkAfterSeq,
  checkLimit,
  checkSessionId,
  checkTypes,
  closedError,
  type EventQuery,
  isoOf,
  type LatestEventsQuery,
  type MemoryEvent,
  type MemoryStore,
  type NewMemoryEvent,
  newSessionId,
  pauseForLock,
  prepareSessionMetadata,
  type ResolvedLimits,
  type SessionInfo,
} from "../store.js";
import type { WalCheckpointer } from "../wal-checkpointer.js";
import { type AsyncDatabase, type Database, PreparedStatements, releaseClosedConnections, type SqlStep, type Statement, walkSteps } from "./driver.js";
import { eventRows } from "./event-rows.js";
import { GroupCommit, type GroupHost } from "./group-commit.js";
import { evictStep, type GroupContext, pruneStep } from "./group-steps.js";
import { EVENT_COLUMNS, NO_CUTOFF, PRUNE_INTERVAL_MS, toEvent, toSession } from "./schema.js";

/** How often a request waiting for a session another process is running asks again. */
const LOCK_POLL_MS = 25;

/** The SQLite store. Open it with `openEmbeddedStore`. */
export class EmbeddedMemoryStore implements MemoryStore {
  readonly kind = "embedded";
  /** Every append waits in one queue written in call order (one transaction per group): a writer need not wait for one append before the next. */
  readonly appendsInOrder = true;
  /** The database file. */
  readonly path: string;
  private readonly limits: ResolvedLimits;
  private readonly statements = new Map<string, Statement>();
  /** Appends, lock attempts and releases, written in groups. */
  private readonly groups: GroupCommit;
  private closed = false;
  private closing: Promise<void> | undefined;
  private lastPrune = 0;
  /** Session locks this store holds: token → session. */
  private readonly heldLocks = new Map<string, string>();

  /** Use `openEmbeddedStore`. */
  constructor(
    private readonly db: Database,
    path: string,
    limits: ResolvedLimits,
    groupCommit: boolean,
    /** Background checkpoints (none: SQLite's own, in `COMMIT`). */
    private readonly checkpointer?: WalCheckpointer,
    /** The connection group commits are written on, off the JavaScript thread (none: on `db`, on this thread). */
    writer?: AsyncDatabase,
    /** Every statement prepared on the store's connections (the checkpointer's too): `close` waits for them to be collected. */
    private readonly prepared = new PreparedStatements(),
  ) {
    this.path = path;
    this.limits = limits;
    const host: GroupHost = {
      write: (fn) => this.write(fn),
      runSync: (steps) => this.runSync(steps),
      describe: (error) => this.describe(error),
      context: () => this.groupContext(),
      closed: () => this.closed,
    };
    this.groups = new GroupCommit(host, groupCommit, checkpointer, writer, prepared);
  }

  async createSession(sessionId?: string, metadata: Record<string, unknown> = {}): Promise<SessionInfo> {
    this.check();
    const id = checkSessionId(sessionId ?? newSessionId());
    const metadataJson = JSON.stringify(prepareSessionMetadata(metadata));
    await this.writePending();
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
          this.db.exec(evictStep(id, this.limits.maxSessions).sql);
          this.groups.sessionMade();
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
    await this.writePending();
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

  async append(sessionId: string, events: readonly NewMemoryEvent[], options?: AppendOptions): Promise<MemoryEvent[]> {
    this.check();
    const rows = eventRows(sessionId, events);
    if (rows.length === 0) return [];
    return this.groups.append(sessionId, rows, options?.returnEvents !== false);
  }


  async events(sessionId: string, query: EventQuery = {}): Promise<MemoryEvent[]> {
    this.check();
    checkSessionId(sessionId);
    const limit = checkLimit(query.limit);
    const afterSeq = checkAfterSeq(query.afterSeq);
    const filter = checkTypes(query.types);
    const types = filter ? JSON.stringify(filter) : null;
    await this.writePending();
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
    await this.writePending();
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
    await this.writePending();
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
    await this.writePending();
    this.groups.forget(sessionId);
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
    for (;;) {
      if (signal?.aborted) throw abortedWaiting();
      if (await this.groups.attemptLock(sessionId, token)) break;
      await pauseForLock(LOCK_POLL_MS, signal);
    }
    this.heldLocks.set(token, sessionId);
    let released = false;
    const giveBack = () => this.groups.release(sessionId, token);
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
    this.groups.flushPending();
    await this.groups.untilWritable();
    // A background checkpoint still running ends first (then its connection closes).
    await this.checkpointer?.close();
    this.groups.flushPending();
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
    this.groups.close();
    this.db.close();
    // The connections let go of the file only once their statements are collected (see there).
    await releaseClosedConnections(this.prepared);
  }

  /** Deletes expired events and sessions now (appends also do it, at most once a minute). */
  async prune(): Promise<void> {
    this.check();
    await this.writePending();
    this.guard(() => this.write(() => this.pruneNow()));
  }


  /** Before a read or a write on this thread: waits for a group being written (or the log being emptied), then writes what is pending. */
  private async writePending(): Promise<void> {
    if (this.groups.busy) await this.groups.untilWritable();
    this.groups.flushPending();
  }

  private check(): void {
    if (this.closed) throw closedError(this.kind);
  }

  /** A prepared statement, made once per text; `rows`: one that returns rows, as arrays (no object per row). */
  private statement(sql: string, rows = false): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.prepared.add(this.db.prepare(sql));
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
    this.lastPrune = Date.now();
    if (this.limits.retentionMs !== undefined) this.db.exec(pruneStep(this.cutoffMs()).sql);
  }

  /** What a group's statements carry: the limits, and the deletion of expired rows once a minute (then taken as done). */
  private groupContext(): GroupContext {
    const { maxEventsPerSession, maxSessions, retentionMs } = this.limits;
    if (retentionMs === undefined || Date.now() - this.lastPrune < PRUNE_INTERVAL_MS) return { maxEventsPerSession, maxSessions };
    this.lastPrune = Date.now();
    return { maxEventsPerSession, maxSessions, prune: pruneStep(this.cutoffMs()) };
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
