/**
 * The embedded store's group commit: appends, lock attempts and releases queue here and are
 * written together, one transaction per group, the appends made in one turn of the event loop in
 * the next. Off the JavaScript thread by default, on a second connection (`libsql/promise`) whose
 * statements run on the driver's threads; on the store's own connection otherwise (and for reads
 * and `close`, which first write what is pending).
 */
import type { AgentLoopError } from "../../errors.js";
import { type MemoryEvent, sessionsOfGroup } from "../store.js";
import type { WalCheckpointer } from "../wal-checkpointer.js";
import { type AsyncDatabase, type AsyncStatement, PreparedStatements, type SqlStep, walkSteps, walkStepsAsync } from "./driver.js";
import type { EventRow } from "./event-rows.js";
import {
  type Group,
  type GroupContext,
  type GroupResult,
  groupSteps,
  guardStep,
  newStepEntry,
  type PendingAppend,
  type PendingLock,
  type PendingRelease,
  SessionCount,
} from "./group-steps.js";

/** How many sessions' last seqs a store remembers for its one-call groups (~100 bytes each). */
const LAST_SEQ_ENTRIES = 10_000;

/** What the group commit asks of its store. */
export interface GroupHost {
  /** Runs `fn` in a write transaction on the store's own connection (this thread). */
  write<T>(fn: () => T): T;
  /** Runs SQL steps on the store's own connection, inside the transaction the caller holds. */
  runSync<T>(steps: Generator<SqlStep, T, unknown[][]>): T;
  /** A driver error as the store reports it. */
  describe(error: unknown): AgentLoopError;
  /** The limits and the prune a group's statements carry (a prune due is then taken as done). */
  context(): GroupContext;
  closed(): boolean;
}

export class GroupCommit {
  private pending: PendingAppend[] = [];
  private pendingLocks: PendingLock[] = [];
  private pendingReleases: PendingRelease[] = [];
  private scheduled: NodeJS.Immediate | undefined;
  /** Set while a group is being written by the writer connection. */
  private writing: Promise<void> | undefined;
  private readonly writerStatements = new Map<string, Promise<AsyncStatement>>();
  private flushWaitsForHold = false;
  /** The sessions this process made since it last counted them (see `SessionCount`). */
  private sessionCount: SessionCount | undefined;
  /** Each session's last seq as this process last committed it (the most recent `LAST_SEQ_ENTRIES`): what a one-call group expects. */
  private readonly lastSeqs = new Map<string, number>();

  constructor(
    private readonly host: GroupHost,
    /** false: each append is written at once, in a transaction of its own. */
    private readonly groupCommit: boolean,
    /** Background checkpoints (none: SQLite's own, in `COMMIT`). */
    private readonly checkpointer?: WalCheckpointer,
    /** The connection group commits are written on, off the JavaScript thread (none: on the store's, on this thread). */
    private readonly writer?: AsyncDatabase,
    /** Where the writer's statements are noted (the store's close waits for them to be collected). */
    private readonly prepared = new PreparedStatements(),
  ) {}

  /** Queues prepared events; settles once their group is committed (with the stored events when `returnEvents`, else none). */
  append(sessionId: string, events: EventRow[], returnEvents: boolean): Promise<MemoryEvent[]> {
    return new Promise<MemoryEvent[]>((resolve, reject) => {
      this.pending.push({ sessionId, events, returnEvents, resolve, reject });
      this.schedule();
    });
  }

  /** Queues a lock attempt for the next group: whether it took the lock. */
  attemptLock(sessionId: string, token: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.pendingLocks.push({ sessionId, token, resolve, reject });
      this.schedule();
    });
  }

  /** Queues a lock release for the next group (with the appends made before it). */
  release(sessionId: string, token: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pendingReleases.push({ sessionId, token, resolve, reject });
      this.schedule();
    });
  }

  /** A session made outside the groups (`createSession`): one more made since the last count, so the next group's count is not skipped past `maxSessions`. */
  sessionMade(): void {
    this.sessionCount?.made(1);
  }

  /** Forgets what this process knows of a session (deleted). */
  forget(sessionId: string): void {
    this.lastSeqs.delete(sessionId);
  }

  /** Resolves once no group is being written and no truncating checkpoint holds the file. */
  async untilWritable(): Promise<void> {
    while (this.busy) await (this.writing ?? this.checkpointer?.hold);
  }

  /** Closes the writer connection (after `untilWritable` and a last `flushPending`). */
  close(): void {
    this.writerStatements.clear();
    try {
      this.writer?.close();
    } catch {
      // already unusable
    }
  }

  /** Queues work for the next group transaction (after this turn of the event loop, or now without group commit). */
  private schedule(): void {
    if (!this.groupCommit) this.flushPending();
    else this.scheduled ??= setImmediate(() => this.startGroups());
  }

  /** Whether a read or a write on this thread must wait: a group is being written off the thread, or the log is being emptied. */
  get busy(): boolean {
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
        if (!/agentloop_guard|UNIQUE constraint failed: agentloop_sessions\./.test(String((error as Error)?.message))) throw error;
        // Another process wrote these sessions or locks since the read: the group goes the longer way.
      }
    }
    let script = "BEGIN IMMEDIATE;";
    let begun = false;
    try {
      // The writes before a read go in one `exec` with it; the rest with COMMIT.
      const result = await walkStepsAsync(
        groupSteps(group, this.context()),
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
    // Only sessions it never wrote and no lock asked: their rows are inserted, a duplicate (another
    // process made one) fails the transaction instead of a guard statement checking first.
    const newSessions = group.locks.length === 0 && expected.every(([, last]) => last === 0);
    const guard = newSessions ? "" : guardStep(expected, group.locks);
    // What the group's read inside the transaction would answer once the upsert ran.
    const after: unknown[][] = expected.map(([sessionId, last]) => [0, sessionId, last + sessions.get(sessionId)!.count, null]);
    // New sessions when the count of the sessions must be read: a read of its own, the longer way (at
    // the limit, between reads, the eviction counts in SQL: see `SessionCount`).
    const made = expected.filter(([, last]) => last === 0).length;
    if (made > 0 && (!this.sessionCount || (this.sessionCount.due(made) && this.sessionCount.mustRead(made)))) return undefined;
    let script = "";
    const result = walkSteps(
      groupSteps(group, this.context(), sessions, newSessions),
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
      statement = this.writer!.prepare(sql).then((prepared) => this.prepared.add(prepared.raw(true)));
      statement.catch(() => this.writerStatements.delete(sql));
      this.writerStatements.set(sql, statement);
    }
    return statement;
  }

  /** The host's context, with what this process knows of the count of sessions. */
  private context(): GroupContext {
    const context = this.host.context();
    this.sessionCount ??= new SessionCount(context.maxSessions);
    context.sessionCount = this.sessionCount;
    return context;
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
    const failure = this.host.describe(error);
    this.sessionCount?.forget();
    for (const member of group.appends) {
      this.lastSeqs.delete(member.sessionId);
      member.reject(failure);
    }
    for (const attempt of group.locks) attempt.reject(failure);
    for (const release of group.releases) release.reject(failure);
  }

  private settleGroup(group: Group, [stored, taken, lastSeqs]: GroupResult): void {
    for (const [index, member] of group.appends.entries()) this.rememberLastSeq(member.sessionId, lastSeqs[index]);
    for (const release of group.releases) release.resolve();
    for (const [index, member] of group.appends.entries()) member.resolve(stored[index]);
    for (const [index, attempt] of group.locks.entries()) attempt.resolve(taken[index]);
  }

  /**
   * Writes every pending append, lock release and lock attempt in one transaction on this thread,
   * then settles each one's promise (the path without the writer connection, and for reads and
   * `close`, which come here only once no group is being written off the thread).
   */
  flushPending(): void {
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
          if (this.writer && !this.host.closed()) this.startGroups();
          else this.flushPending();
        });
      }
      return;
    }
    const group = this.takeGroup();
    let result: GroupResult;
    try {
      result = this.host.write(() => this.host.runSync(groupSteps(group, this.context())));
    } catch (error) {
      this.failGroup(group, error);
      return;
    }
    this.settleGroup(group, result);
  }


  /** Resolves once no truncating checkpoint holds the file (a group waits for it before it starts). */
  private async untilCheckpointed(): Promise<void> {
    let hold: Promise<void> | undefined;
    while ((hold = this.checkpointer?.hold)) await hold;
  }
}
