/**
 * The PostgreSQL store's SQL (through `pg`): schema, group commit, limits, locks.
 */
import { AgentLoopError } from "../errors.js";
import { appendText, storedEvents } from "./sql-group.js";
import {
  type AppendOptions,
  checkAfterSeq,
  checkLimit,
  checkSessionId,
  checkTypes,
  closedError,
  type EventQuery,
  prepareSessionMetadata,
  type LatestEventsQuery,
  type MemoryEvent,
  type MemoryEventMetadata,
  type MemoryLimits,
  type MemoryStore,
  type NewMemoryEvent,
  newSessionId,
  type ResolvedLimits,
  resolveLimits,
  type SessionInfo,
  isoOf,
} from "./store.js";

/** A row of `SqlDatabase.statement`: its columns as text (null for SQL NULL), in order. */
export type TextRow = Array<string | null>;

/** Runs one statement and returns its rows. */
export interface SqlExecutor {
  /** `prepare`: a statement run often; the driver may keep it prepared per connection (parsed and planned once). */
  query(text: string, params?: unknown[], prepare?: boolean): Promise<Array<Record<string, unknown>>>;
}

/** A database the SQL store can use: statements, transactions, and a way to let go of it. */
export interface SqlDatabase extends SqlExecutor {
  /**
   * Runs a statement run often (the group commit's), named and parsed once per connection, with
   * text parameters; its rows come back as text columns in the statement's order. `lane`: the
   * group commit's write lane it comes from (the lane's statements run one at a time).
   */
  statement(text: string, values: ReadonlyArray<string | null>, lane?: number): Promise<TextRow[]>;
  /** Runs `fn` in one transaction (BEGIN ... COMMIT, ROLLBACK when it throws). */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /** Turns a driver error into an AgentLoopError with a clear message. */
  describeError?(error: unknown): AgentLoopError;
  /** Holds a lock named `key` across processes until the returned function is called (see `MemoryStore.lockSession`). */
  lock?(key: string, signal?: AbortSignal): Promise<() => Promise<void>>;
}

export interface SqlStoreOptions extends MemoryLimits {
  /** The PostgreSQL schema holding the tables (created if missing). Default "public". */
  schema?: string;
  /**
   * Group commit: appends that arrive while a write is in flight (or in the same event-loop turn)
   * wait and are written together in the next one (across sessions, one statement), instead of one
   * transaction each. `lanes` writes run at once (sessions are spread over them; one session always
   * uses the same lane, so its appends keep their order). `false`: one write per append.
   * Default: `{ lanes: 1 }`, `{ lanes: 4 }` for `openPostgresStore`.
   */
  groupCommit?: false | { lanes?: number };
}

/** One `append` call waiting for its group's transaction. */
interface PendingAppend {
  sessionId: string;
  /** The append as JSON text (`appendText`). */
  text: string;
  /** Its number of events. */
  count: number;
  /** False when the caller does not read the stored events (`AppendOptions.returnEvents`): none are parsed back. */
  returnEvents: boolean;
  resolve(stored: MemoryEvent[]): void;
  reject(error: unknown): void;
}

/** One write pipeline: a queue of appends and whether a transaction is running for it. */
interface WriteLane {
  /** Its place in `lanes` (the database may keep a connection per lane). */
  index: number;
  pending: PendingAppend[];
  running: Promise<void> | undefined;
}

/**
 * Evictions (sessions beyond `maxSessions`, two round trips) start at most this often: under a
 * stream of new sessions one eviction catches up with every group written since the last.
 */
const EVICT_GAP_MS = 100;

/**
 * Sessions made by this store between two counts of the sessions (an eviction check) at most:
 * with other replicas making sessions too, the table can pass maxSessions by about this many per
 * replica until one of them counts (a tenth of maxSessions when that is smaller).
 */
const RECOUNT_EVERY = 100;

/** A group stops growing at this many events (one statement carries them all as one JSON parameter). */
const MAX_GROUP_EVENTS = 2000;

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
/** Physical deletion of expired rows runs at most this often (reads filter them out anyway). */
const PRUNE_INTERVAL_MS = 60_000;

export function checkSchemaName(schema: string): string {
  if (typeof schema !== "string" || !SCHEMA_NAME.test(schema)) {
    throw new AgentLoopError("configuration", `memory: schema must be a plain SQL identifier (letters, digits, _), got ${JSON.stringify(schema)}`);
  }
  return schema;
}

function iso(value: unknown): string {
  return (value instanceof Date ? value : new Date(String(value))).toISOString();
}

function toEvent(row: Record<string, unknown>): MemoryEvent {
  return {
    event_id: String(row.event_id),
    session_id: String(row.session_id),
    seq: Number(row.seq),
    timestamp: iso(row.timestamp),
    event_type: String(row.event_type),
    content: row.content ?? null,
    metadata: (row.metadata ?? {}) as MemoryEventMetadata,
  };
}

function toSession(row: Record<string, unknown>): SessionInfo {
  return {
    session_id: String(row.session_id),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    event_count: Number(row.event_count ?? 0),
    last_seq: Number(row.last_seq),
    metadata: (row.metadata ?? {}) as Record<string, unknown>,
  };
}

/**
 * Whether a failure is a statement's own (bad data, a constraint, a limit: SQLSTATE classes 22,
 * 23, 42, 54...) rather than the database being unusable: no SQLSTATE (connection lost, pool
 * closed) or classes 08 connection, 28 authorization, 3D database, 53 resources, 57 operator
 * intervention, 58 system.
 */
function isStatementError(error: unknown): boolean {
  const cause = AgentLoopError.isInstance(error) ? (error as { cause?: unknown }).cause : error;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) && !["08", "28", "3D", "53", "57", "58"].includes(code.slice(0, 2));
}

/** What a written append resolves with: its stored events parsed back from its text, unless its caller does not read them. */
function answerOf(append: Pick<PendingAppend, "text" | "returnEvents">, firstSeq: number): MemoryEvent[] {
  return append.returnEvents ? storedEvents(append.text, firstSeq) : [];
}

/** The lane of a session: a stable hash of its id (FNV-1a). */
function laneOf(sessionId: string, lanes: number): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < sessionId.length; index++) hash = Math.imul(hash ^ sessionId.charCodeAt(index), 0x01000193);
  return (hash >>> 0) % lanes;
}

export class SqlMemoryStore implements MemoryStore {
  private readonly limits: ResolvedLimits;
  private readonly sessions: string;
  private readonly events_: string;
  private readonly activity: string;
  /** The group statement for one session, and for several (`groupStatement`). */
  private readonly groupOfOne: string;
  private readonly groupOfMany: string;
  private closed = false;
  private lastPrune = 0;
  /** Empty when group commit is off. */
  private readonly lanes: WriteLane[];
  /** The last append of each session still being written: a lock release waits for it. */
  private readonly lastAppends = new Map<string, Promise<unknown>>();
  /** The eviction running after groups that made new sessions (see `evictSoon`). */
  private evicting: Promise<void> | undefined;
  /** Whether groups written since the last eviction started made new sessions. */
  private evictDue = false;
  private evictTimer: NodeJS.Timeout | undefined;
  private lastEviction = 0;
  /** The number of sessions as the last eviction counted them (after it), undefined before the first. */
  private countedSessions: number | undefined;
  /** Sessions this store made since that count (see `madeSessions`). */
  private madeSince = 0;

  private constructor(
    readonly kind: string,
    private readonly database: SqlDatabase,
    private readonly schema: string,
    limits: ResolvedLimits,
    lanes: number,
  ) {
    this.limits = limits;
    this.lanes = Array.from({ length: lanes }, (_, index) => ({ index, pending: [], running: undefined }));
    this.sessions = `"${schema}".agentloop_sessions`;
    this.events_ = `"${schema}".agentloop_events`;
    this.activity = `"${schema}".agentloop_session_activity`;
    this.groupOfOne = this.groupStatement(false);
    this.groupOfMany = this.groupStatement(true);
  }

  /**
   * The group statement's text (see `writeGroup`), built once. Parameters: $1 the appends (a JSON
   * array of `appendText`s), $2 the time, $3 maxEventsPerSession; for one session $4 its id and $5 its events; for
   * several, $4 a JSON array of {session_id, count, rank} and $5 how many.
   */
  private groupStatement(several: boolean): string {
    const upsert = several
      ? `INSERT INTO ${this.sessions} AS s (session_id, created_at, updated_at, activity, last_seq, metadata)
         SELECT r.session_id, $2, $2, a.value, r.count, '{}'::jsonb
         FROM jsonb_to_recordset($4::jsonb) AS r(session_id text, count bigint, rank bigint) JOIN activity a ON a.rank = r.rank
         ORDER BY r.session_id
         ON CONFLICT (session_id) DO UPDATE SET last_seq = s.last_seq + EXCLUDED.last_seq, updated_at = EXCLUDED.updated_at, activity = EXCLUDED.activity`
      : `INSERT INTO ${this.sessions} AS s (session_id, created_at, updated_at, activity, last_seq, metadata)
         VALUES ($4, $2, $2, nextval('${this.activity}'), $5, '{}'::jsonb)
         ON CONFLICT (session_id) DO UPDATE SET last_seq = s.last_seq + $5, updated_at = $2, activity = nextval('${this.activity}')`;
    // Each event's distance from its session's last event in the group (`back`): its seq is the
    // session's new last_seq - back. The events' serial id follows arrival order (latestEvents
    // orders by it). The DELETE sees the rows as they were before this statement, so it trims older
    // events and never the new ones.
    return `WITH ${several ? `activity AS MATERIALIZED (SELECT value, row_number() OVER (ORDER BY value) AS rank FROM (SELECT nextval('${this.activity}') AS value FROM generate_series(1, $5::int)) v),` : ""}
       upserted AS (${upsert} RETURNING session_id, last_seq, (xmax = 0) AS inserted),
       given AS (
         SELECT a.append->>0 AS session_id, e.event, a.ordinal AS append_ordinal, e.ordinal AS event_ordinal,
           count(*) OVER (PARTITION BY a.append->>0) - row_number() OVER (PARTITION BY a.append->>0 ORDER BY a.ordinal, e.ordinal) AS back
         FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS a(append, ordinal)
         CROSS JOIN LATERAL jsonb_array_elements(a.append->1) WITH ORDINALITY AS e(event, ordinal)),
       written AS (
         INSERT INTO ${this.events_} (session_id, seq, event_id, timestamp, event_type, content, metadata)
         SELECT r.session_id, u.last_seq - r.back, r.event->>0, (r.event->>1)::timestamptz, r.event->>2, NULLIF(r.event->3, 'null'::jsonb), r.event->4
         FROM given r JOIN upserted u ON u.session_id = r.session_id
         WHERE r.back < $3
         ORDER BY r.append_ordinal, r.event_ordinal),
       trimmed AS (DELETE FROM ${this.events_} e USING upserted u WHERE u.last_seq > $3 AND e.session_id = u.session_id AND e.seq <= u.last_seq - $3)
       SELECT session_id, last_seq, inserted FROM upserted`;
  }

  /** Creates the tables if needed (safe when several processes start at once) and returns the store. */
  static async open(kind: string, database: SqlDatabase, options: SqlStoreOptions = {}): Promise<SqlMemoryStore> {
    const limits = resolveLimits(options);
    const schema = checkSchemaName(options.schema ?? "public");
    const lanes = options.groupCommit === false ? 0 : (options.groupCommit?.lanes ?? 1);
    if (options.groupCommit !== false && (!Number.isInteger(lanes) || lanes < 1)) {
      throw new AgentLoopError("configuration", `memory: groupCommit.lanes must be a positive integer, got ${String(lanes)}`);
    }
    const store = new SqlMemoryStore(kind, database, schema, limits, lanes);
    await store.run(() => store.migrate());
    return store;
  }

  private async migrate(): Promise<void> {
    await this.database.transaction(async (tx) => {
      // Serializes concurrent migrations (two replicas starting together): CREATE ... IF NOT EXISTS alone races.
      await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`agentloop.memory.${this.schema}`]);
      await tx.query(`CREATE SCHEMA IF NOT EXISTS "${this.schema}"`);
      await tx.query(`CREATE SEQUENCE IF NOT EXISTS ${this.activity}`);
      await tx.query(`CREATE TABLE IF NOT EXISTS ${this.sessions} (
        session_id text PRIMARY KEY,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        activity bigint NOT NULL,
        last_seq bigint NOT NULL DEFAULT 0,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb
      )`);
      await tx.query(`CREATE INDEX IF NOT EXISTS agentloop_sessions_activity ON ${this.sessions} (activity)`);
      await tx.query(`CREATE TABLE IF NOT EXISTS ${this.events_} (
        id bigserial PRIMARY KEY,
        session_id text NOT NULL REFERENCES ${this.sessions} (session_id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        event_id text NOT NULL,
        timestamp timestamptz NOT NULL,
        event_type text NOT NULL,
        content jsonb,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        UNIQUE (session_id, seq)
      )`);
      await tx.query(`CREATE INDEX IF NOT EXISTS agentloop_events_timestamp ON ${this.events_} (timestamp)`);
    });
  }

  async createSession(sessionId?: string, metadata: Record<string, unknown> = {}): Promise<SessionInfo> {
    this.check();
    const id = checkSessionId(sessionId ?? newSessionId());
    const metadataJson = JSON.stringify(prepareSessionMetadata(metadata));
    return this.run(async () => {
      await this.maybePrune();
      await this.database.transaction(async (tx) => {
        const now = new Date().toISOString();
        const inserted = await tx.query(
          `INSERT INTO ${this.sessions} (session_id, created_at, updated_at, activity, last_seq, metadata)
           VALUES ($1, $2, $2, nextval('${this.activity}'), 0, $3::jsonb)
           ON CONFLICT (session_id) DO UPDATE SET updated_at = $2, activity = nextval('${this.activity}')
             WHERE $4::timestamptz IS NOT NULL AND ${this.sessions}.updated_at < $4
           RETURNING (xmax = 0) AS inserted`,
          [id, now, metadataJson, this.cutoff()],
        );
        // An expired session that was not pruned yet is revived (its old events stay hidden).
        if (inserted[0]?.inserted === true) await this.evict(tx, id);
      });
      const session = await this.getSession(id);
      // Only a zero retention could hide it, and retention is always positive.
      return session!;
    });
  }

  async getSession(sessionId: string): Promise<SessionInfo | undefined> {
    this.check();
    checkSessionId(sessionId);
    return this.run(async () => {
      await this.evicted();
      const cutoff = this.cutoff();
      const rows = await this.database.query(
        `SELECT s.*, (SELECT count(*) FROM ${this.events_} e WHERE e.session_id = s.session_id AND ($2::timestamptz IS NULL OR e.timestamp >= $2)) AS event_count
         FROM ${this.sessions} s WHERE s.session_id = $1 AND ($2::timestamptz IS NULL OR s.updated_at >= $2)`,
        [sessionId, cutoff],
      );
      return rows.length > 0 ? toSession(rows[0]) : undefined;
    });
  }

  /** With group commit, a session's appends go through one lane, in call order. */
  get appendsInOrder(): boolean {
    return this.lanes.length > 0;
  }

  async append(sessionId: string, events: readonly NewMemoryEvent[], options?: AppendOptions): Promise<MemoryEvent[]> {
    this.check();
    checkSessionId(sessionId);
    if (!Array.isArray(events)) throw new TypeError("memory: append expects an array of events");
    const count = events.length;
    if (count === 0) return [];
    const text = appendText(sessionId, events);
    const returnEvents = options?.returnEvents !== false;
    const written =
      this.lanes.length === 0
        ? this.run(async () => {
            await this.maybePrune();
            const [firstSeq] = await this.writeGroup([{ sessionId, text, count }]);
            return answerOf({ text, returnEvents }, firstSeq);
          })
        : new Promise<MemoryEvent[]>((resolve, reject) => {
            const lane = this.lanes.length === 1 ? this.lanes[0] : this.lanes[laneOf(sessionId, this.lanes.length)];
            lane.pending.push({ sessionId, text, count, returnEvents, resolve, reject });
            lane.running ??= this.drain(lane);
          });
    // A lock release waits for the session's appends made before it (see `MemoryStore.lockSession`).
    // With group commit a session's appends settle in call order; without it, in any order.
    const last = this.lastAppends;
    const previous = last.get(sessionId);
    const tail: Promise<unknown> = previous && this.lanes.length === 0 ? Promise.allSettled([previous, written]) : written;
    last.set(sessionId, tail);
    const forget = () => {
      if (last.get(sessionId) === tail) last.delete(sessionId);
    };
    tail.then(forget, forget);
    return written;
  }

  /** Writes a lane's queue, one group (one statement) at a time, until it is empty. */
  private async drain(lane: WriteLane): Promise<void> {
    try {
      while (lane.pending.length > 0) {
        // Each group starts after the current turn of the event loop: appends made by the timers
        // and I/O callbacks of this turn join it (a database running statements on this very thread
        // would otherwise see no other append arrive while one is written).
        await new Promise((resolve) => setImmediate(resolve));
        let size = 0;
        let count = 0;
        while (count < lane.pending.length && (count === 0 || size + lane.pending[count].count <= MAX_GROUP_EVENTS)) {
          size += lane.pending[count].count;
          count++;
        }
        await this.commitGroup(lane.pending.splice(0, count), lane.index);
      }
    } finally {
      lane.running = undefined;
    }
  }

  /**
   * Writes a group and settles each member's promise only after it is committed. When the group
   * fails, its members are written again one by one, in order, so one bad append gets its own
   * error and cannot fail the others.
   */
  private async commitGroup(group: PendingAppend[], lane: number): Promise<void> {
    try {
      const firstSeqs = await this.run(async () => {
        await this.maybePrune();
        return this.writeGroup(group, lane);
      });
      for (let index = 0; index < group.length; index++) group[index].resolve(answerOf(group[index], firstSeqs[index]));
      return;
    } catch (error) {
      // Only a statement error can come from one member's data; when the database itself is
      // unusable (connection lost, out of resources) each member would just fail again, slowly.
      if (group.length === 1 || !isStatementError(error)) {
        for (const member of group) member.reject(error);
        return;
      }
    }
    for (const [index, member] of group.entries()) {
      try {
        member.resolve(answerOf(member, (await this.run(() => this.writeGroup([member], lane)))[0]));
      } catch (error) {
        member.reject(error);
        if (!isStatementError(error)) {
          for (const rest of group.slice(index + 1)) rest.reject(error);
          return;
        }
      }
    }
  }

  /**
   * Writes the appends of a group (in arrival order) and returns each one's first seq.
   *
   * One statement, so one implicit transaction: all of the group or nothing. It upserts the session
   * rows, which takes their row locks until commit: concurrent appenders to one session (another
   * lane, another replica) wait there, so seqs are gap-free and in commit order; rows are locked
   * in session id order, so two groups sharing sessions (two replicas) cannot deadlock. In the
   * same statement it inserts the events (their seqs computed from the new `last_seq`), skipping
   * any the session's event limit would trim at once, and deletes the session's events the limit
   * now trims.
   */
  private async writeGroup(group: ReadonlyArray<Pick<PendingAppend, "sessionId" | "text" | "count">>, lane?: number): Promise<number[]> {
    const now = isoOf(Date.now());
    const maxEvents = String(this.limits.maxEventsPerSession);
    if (group.length === 1) {
      // One append (a chat's events, mostly): its seqs end at the session's new last_seq.
      const [{ sessionId, text, count }] = group;
      const [[, lastSeq, inserted]] = await this.database.statement(this.groupOfOne, [`[${text}]`, now, maxEvents, sessionId, String(count)], lane);
      if (inserted === "t") this.madeSessions(1);
      return [Number(lastSeq) - count + 1];
    }
    // Per session: events in the group, and the index of its last append (its place in "least recently updated").
    const sessions = new Map<string, { count: number; last: number; lastSeq: number }>();
    group.forEach(({ sessionId, count }, index) => {
      const entry = sessions.get(sessionId);
      if (entry) {
        entry.count += count;
        entry.last = index;
      } else sessions.set(sessionId, { count, last: index, lastSeq: 0 });
    });
    const eventsJson = `[${group.map((member) => member.text).join(",")}]`;
    let rows: TextRow[];
    if (sessions.size === 1) {
      let total = 0;
      for (const member of group) total += member.count;
      rows = await this.database.statement(this.groupOfOne, [eventsJson, now, maxEvents, group[0].sessionId, String(total)], lane);
    } else {
      // Activity values (the update order) follow the order of each session's last append, while
      // the rows are locked in session id order.
      const ranked = [...sessions].sort((a, b) => a[1].last - b[1].last).map(([sessionId, entry], rank) => ({ session_id: sessionId, count: entry.count, rank: rank + 1 }));
      rows = await this.database.statement(this.groupOfMany, [eventsJson, now, maxEvents, JSON.stringify(ranked), String(ranked.length)], lane);
    }
    let made = 0;
    for (const [sessionId, lastSeq, inserted] of rows) {
      sessions.get(sessionId!)!.lastSeq = Number(lastSeq);
      if (inserted === "t") made++;
    }
    // Seqs continue each session's sequence, in arrival order within the group.
    const nextSeq = new Map([...sessions].map(([sessionId, entry]) => [sessionId, entry.lastSeq - entry.count + 1]));
    const firstSeqs = group.map((member) => {
      const seq = nextSeq.get(member.sessionId)!;
      nextSeq.set(member.sessionId, seq + member.count);
      return seq;
    });
    if (made > 0) this.madeSessions(made);
    return firstSeqs;
  }

  async events(sessionId: string, query: EventQuery = {}): Promise<MemoryEvent[]> {
    this.check();
    checkSessionId(sessionId);
    const limit = checkLimit(query.limit);
    const afterSeq = checkAfterSeq(query.afterSeq);
    const types = checkTypes(query.types) ?? null;
    return this.run(async () => {
      await this.evicted();
      const cutoff = this.cutoff();
      const where = `e.session_id = $1 AND ($2::timestamptz IS NULL OR e.timestamp >= $2) AND ($3::text[] IS NULL OR e.event_type = ANY($3::text[]))
        AND ($4::bigint IS NULL OR e.seq > $4)
        AND EXISTS (SELECT 1 FROM ${this.sessions} s WHERE s.session_id = e.session_id AND ($2::timestamptz IS NULL OR s.updated_at >= $2))`;
      const params = [sessionId, cutoff, types, afterSeq ?? null, limit ?? null];
      const rows =
        afterSeq === undefined
          ? await this.database.query(
              `SELECT * FROM (SELECT e.* FROM ${this.events_} e WHERE ${where} ORDER BY e.seq DESC LIMIT $5) t ORDER BY seq ASC`,
              params,
            )
          : await this.database.query(`SELECT e.* FROM ${this.events_} e WHERE ${where} ORDER BY e.seq ASC LIMIT $5`, params);
      return rows.map(toEvent);
    });
  }

  async latestEvents(query: LatestEventsQuery = {}): Promise<MemoryEvent[]> {
    this.check();
    const limit = checkLimit(query.limit) ?? 100;
    const types = checkTypes(query.types) ?? null;
    return this.run(async () => {
      await this.evicted();
      const rows = await this.database.query(
        `SELECT * FROM (
           SELECT e.* FROM ${this.events_} e JOIN ${this.sessions} s ON s.session_id = e.session_id
           WHERE ($1::timestamptz IS NULL OR (e.timestamp >= $1 AND s.updated_at >= $1)) AND ($2::text[] IS NULL OR e.event_type = ANY($2::text[]))
           ORDER BY e.id DESC LIMIT $3) t ORDER BY id ASC`,
        [this.cutoff(), types, limit],
      );
      return rows.map(toEvent);
    });
  }

  async listSessions(options: { limit?: number } = {}): Promise<SessionInfo[]> {
    this.check();
    const limit = checkLimit(options.limit);
    return this.run(async () => {
      await this.evicted();
      const rows = await this.database.query(
        `SELECT * FROM (
           SELECT s.*, (SELECT count(*) FROM ${this.events_} e WHERE e.session_id = s.session_id AND ($1::timestamptz IS NULL OR e.timestamp >= $1)) AS event_count
           FROM ${this.sessions} s WHERE ($1::timestamptz IS NULL OR s.updated_at >= $1)
           ORDER BY s.activity DESC LIMIT $2) t ORDER BY activity ASC`,
        [this.cutoff(), limit ?? null],
      );
      return rows.map(toSession);
    });
  }

  async deleteSession(sessionId: string): Promise<boolean> {
    this.check();
    checkSessionId(sessionId);
    return this.run(async () => {
      const rows = await this.database.query(`DELETE FROM ${this.sessions} WHERE session_id = $1 RETURNING session_id`, [sessionId]);
      return rows.length > 0;
    });
  }

  /** Across replicas on PostgreSQL; immediate when the database has no locks. */
  async lockSession(sessionId: string, signal?: AbortSignal): Promise<() => Promise<void>> {
    this.check();
    checkSessionId(sessionId);
    const lock = this.database.lock;
    if (!lock) return async () => {};
    const unlock = await this.run(() => lock(`agentloop.session.${this.schema}.${sessionId}`, signal));
    return async () => {
      // Appends made before the release are committed before another holder can take the session.
      await this.lastAppends.get(sessionId)?.catch(() => {});
      await unlock();
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Appends accepted before close are written first (and the evictions after them).
    await Promise.all(this.lanes.map((lane) => lane.running));
    await this.evicted();
    await this.database.close();
  }

  /** Deletes expired events and sessions now (appends also do it, at most once a minute). */
  async prune(): Promise<void> {
    this.check();
    await this.run(() => this.pruneNow());
  }

  private check(): void {
    if (this.closed) throw closedError(this.kind);
  }

  private cutoff(): string | null {
    return this.limits.retentionMs === undefined ? null : new Date(Date.now() - this.limits.retentionMs).toISOString();
  }

  private async maybePrune(): Promise<void> {
    if (this.limits.retentionMs === undefined || Date.now() - this.lastPrune < PRUNE_INTERVAL_MS) return;
    await this.pruneNow();
  }

  private async pruneNow(): Promise<void> {
    const cutoff = this.cutoff();
    this.lastPrune = Date.now();
    if (cutoff === null) return;
    await this.database.query(`DELETE FROM ${this.sessions} WHERE updated_at < $1`, [cutoff]);
    await this.database.query(`DELETE FROM ${this.events_} WHERE timestamp < $1`, [cutoff]);
  }

  /**
   * A group made new sessions, which may push the count over maxSessions. The eviction (two round
   * trips) runs after the events are committed, and the appends do not wait for it: reads do (see
   * `evicted`). If it fails (or the process dies first), the events stand and a later one evicts.
   * It runs when the sessions counted by the last eviction plus those this store made since pass
   * maxSessions, and after every `recountEvery` sessions made here (other replicas make sessions
   * too: they count in the next count), not by the clock: below the limit a new session costs no
   * query (before: a count every 100 ms while sessions were being made). It never evicts the most
   * recently updated session (see `evict`).
   */
  private madeSessions(made: number): void {
    this.madeSince += made;
    const recountEvery = Math.min(RECOUNT_EVERY, Math.max(1, Math.ceil(this.limits.maxSessions / 10)));
    if (this.countedSessions === undefined || this.countedSessions + this.madeSince > this.limits.maxSessions || this.madeSince >= recountEvery) this.evictSoon();
  }

  /** Evicts after a group that made new sessions: one eviction at a time, one more after it when groups made new sessions meanwhile. */
  private evictSoon(): void {
    this.evictDue = true;
    if (this.evicting || this.evictTimer) return;
    const wait = this.lastEviction + EVICT_GAP_MS - Date.now();
    if (wait <= 0) this.startEvicting();
    else
      this.evictTimer = setTimeout(() => {
        this.evictTimer = undefined;
        this.startEvicting();
      }, wait).unref();
  }

  private startEvicting(): void {
    if (!this.evictDue) return;
    this.evictDue = false;
    this.lastEviction = Date.now();
    // Sessions made from now on are not in the count this eviction makes (or may be: counted twice, an early check).
    this.madeSince = 0;
    this.evicting = this.run(() => this.evict())
      .catch(() => {})
      .finally(() => {
        this.evicting = undefined;
        // Groups written meanwhile made new sessions too: the next eviction, after the gap.
        if (this.evictDue) this.evictSoon();
      });
  }

  /** Resolves once the evictions after the groups written so far are done (one waiting for its gap runs now): reads see the limits kept. */
  private async evicted(): Promise<void> {
    for (;;) {
      if (this.evictTimer) {
        clearTimeout(this.evictTimer);
        this.evictTimer = undefined;
        this.startEvicting();
      }
      if (!this.evicting) return;
      await this.evicting;
    }
  }

  /**
   * Evicts the least recently updated sessions beyond `maxSessions`: never `keep` (the session a
   * transaction just made) nor the most recently updated one. A deferred eviction names no session:
   * by the time it runs, later groups may have updated others (a session named then could be stale).
   */
  private async evict(tx?: SqlExecutor, keep?: string): Promise<void> {
    // A deferred eviction counts on the first write lane's own connection (after the groups
    // written so far): no connection taken from the pool, which may have closed its idle ones.
    const count = tx
      ? (await tx.query(`SELECT count(*) AS count FROM ${this.sessions}`))[0].count
      : (await this.database.statement(`SELECT count(*) FROM ${this.sessions}`, [], this.lanes.length > 0 ? 0 : undefined))[0][0];
    const excess = Number(count) - this.limits.maxSessions;
    // After the delete (if it skipped a locked session, the next new session checks again).
    this.countedSessions = Math.min(Number(count), this.limits.maxSessions);
    if (excess <= 0) return;
    // SKIP LOCKED: a session another replica is appending to right now is not waited for (no deadlock).
    await (tx ?? this.database).query(
      `DELETE FROM ${this.sessions} WHERE session_id IN (
         SELECT session_id FROM ${this.sessions}
         WHERE ($1::text IS NULL OR session_id <> $1) AND activity < (SELECT max(activity) FROM ${this.sessions})
         ORDER BY activity ASC LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [keep ?? null, excess],
    );
  }

  /** Runs a database operation, turning driver errors into AgentLoopErrors. */
  private async run<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (AgentLoopError.isInstance(error)) throw error;
      if (this.database.describeError) throw this.database.describeError(error);
      throw new AgentLoopError("unknown", `memory (${this.kind}): ${(error as Error)?.message ?? String(error)}`, { cause: error });
    }
  }
}
