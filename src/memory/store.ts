/**
 * The memory contract: an append-only event log per session, behind one `MemoryStore`
 * interface that every store (in-memory, embedded SQLite, PostgreSQL) implements.
 */
import { randomUUID } from "node:crypto";
import { AgentLoopError } from "../errors.js";

/** The seeds' (KAOS) event names, plus the state and steering events agentloop adds. */
export type MemoryEventType =
  | "user_message"
  | "tool_call"
  | "tool_result"
  | "delegation_request"
  | "delegation_response"
  | "agent_response"
  | "error"
  | "steering"
  | "run_started"
  | "run_ended"
  | "task_delegation_received"
  | "loop_warning"
  | "approval_requested"
  | "approval_decided";

/** Every event type agentloop itself writes. Stores accept any non-empty type name. */
export const MEMORY_EVENT_TYPES: readonly MemoryEventType[] = [
  "user_message",
  "tool_call",
  "tool_result",
  "delegation_request",
  "delegation_response",
  "agent_response",
  "error",
  "steering",
  "run_started",
  "run_ended",
  "task_delegation_received",
  "loop_warning",
  "approval_requested",
  "approval_decided",
];

/**
 * Well-known metadata keys (snake_case, as on the KAOS wire). Any other JSON value may be added.
 * `run_id`, `tool_call_id`, `tool_name`, `is_error`, `trace_id`, `span_id` are set by
 * `sessionMemory` when they apply.
 */
export interface MemoryEventMetadata {
  run_id?: string;
  tool_call_id?: string;
  tool_name?: string;
  is_error?: boolean;
  trace_id?: string;
  span_id?: string;
  [key: string]: unknown;
}

/** One entry of a session's log. Stored events are never modified, only trimmed or deleted. */
export interface MemoryEvent {
  /** Unique id (a UUID unless the writer chose one). */
  event_id: string;
  session_id: string;
  /** Position in the session: 1, 2, 3... assigned by the store in append order, never reused. */
  seq: number;
  /** ISO 8601 time the event happened. */
  timestamp: string;
  event_type: MemoryEventType | (string & {});
  /** Any JSON value: a string for messages, an object for tool calls and results. */
  content: unknown;
  metadata: MemoryEventMetadata;
}

/** What a writer hands to `append`: the store assigns `seq` (and `event_id`/`timestamp` if absent). */
export interface NewMemoryEvent {
  event_type: MemoryEventType | (string & {});
  content?: unknown;
  metadata?: MemoryEventMetadata;
  event_id?: string;
  /** ISO 8601 or a Date; default: now. */
  timestamp?: string | Date;
}

/** How `MemoryStore.append` answers. */
export interface AppendOptions {
  /**
   * False: the caller does not read the stored events, and the store may resolve with an empty
   * array instead of building them (the PostgreSQL store then skips parsing its appends back).
   * Default true.
   */
  returnEvents?: boolean;
}

export interface SessionInfo {
  session_id: string;
  /** ISO 8601. */
  created_at: string;
  /** ISO 8601 time of the last append (eviction removes the least recently updated first). */
  updated_at: string;
  /** Events currently kept (after trimming). */
  event_count: number;
  /** The highest seq ever assigned in this session (0 when empty). */
  last_seq: number;
  metadata: Record<string, unknown>;
}

export interface EventQuery {
  /** At most this many events. Without `afterSeq` the most recent ones; with it the first ones after it. */
  limit?: number;
  /** Only events with `seq > afterSeq` (to tail a session). */
  afterSeq?: number;
  /** Only these event types. */
  types?: readonly string[];
}

export interface LatestEventsQuery {
  /** At most this many events (the most recent across all sessions). Default 100. */
  limit?: number;
  types?: readonly string[];
}

/** Limits every store enforces. */
export interface MemoryLimits {
  /** Events kept per session; the oldest are trimmed on append. Default 500. */
  maxEventsPerSession?: number;
  /** Sessions kept; creating one more evicts the least recently updated. Default 1000. */
  maxSessions?: number;
  /** Events older than this are removed, and sessions idle for this long are deleted. Default: keep forever. */
  retentionMs?: number;
}

export const DEFAULT_MAX_EVENTS_PER_SESSION = 500;
export const DEFAULT_MAX_SESSIONS = 1000;

/**
 * An append-only event log per session. All methods reject with an `AgentLoopError`
 * (`invalid_request` for bad arguments, `configuration`/`network`/`unknown` for store failures).
 * Results are always in chronological order (oldest first).
 */
export interface MemoryStore {
  /** "memory", "embedded", "postgres" or "disabled". */
  readonly kind: string;
  /**
   * True when appends to one session are written in the order they were called even while earlier
   * ones are still in flight (a group-commit queue): a writer need not wait for one append before
   * calling the next, so a run's last events can join the group already waiting.
   */
  readonly appendsInOrder?: boolean;
  /** Creates the session if it does not exist (a new id when none is given) and returns it. */
  createSession(sessionId?: string, metadata?: Record<string, unknown>): Promise<SessionInfo>;
  getSession(sessionId: string): Promise<SessionInfo | undefined>;
  /**
   * Appends events atomically (all or none), creating the session if needed. Seqs are assigned
   * in the given order and continue the session's sequence, even across processes sharing the
   * store. Returns the stored events; with `{ returnEvents: false }` (a writer that never reads
   * them, as session memory) a store may resolve with an empty array instead of building them:
   * what is stored, the order, the atomicity and the errors are the same.
   */
  append(sessionId: string, events: readonly NewMemoryEvent[], options?: AppendOptions): Promise<MemoryEvent[]>;
  /** The session's events (empty when the session does not exist). */
  events(sessionId: string, query?: EventQuery): Promise<MemoryEvent[]>;
  /** The most recent events of all sessions. */
  latestEvents(query?: LatestEventsQuery): Promise<MemoryEvent[]>;
  /** Sessions, most recently updated last; `limit` keeps the most recent ones. */
  listSessions(options?: { limit?: number }): Promise<SessionInfo[]>;
  /** Removes a session and its events; false when it did not exist. */
  deleteSession(sessionId: string): Promise<boolean>;
  /**
   * Exclusive use of a session across every process sharing the store (server replicas on one
   * PostgreSQL; a server and `agentloop run --session` on one embedded file), until the returned
   * function is called. Waits while another holder has it; rejects with an `aborted` error when
   * `signal` aborts first. The in-process store does not need it: the server's per-session queue
   * serializes within a process. The release takes effect only after the appends to the session
   * this store was already given are written (it joins their group commit, or waits for them):
   * a holder may release right after its last append, without waiting for that append first.
   */
  lockSession?(sessionId: string, signal?: AbortSignal): Promise<() => Promise<void>>;
  /** Releases connections and files. Idempotent; other calls reject afterwards. */
  close(): Promise<void>;
}

// ---------- helpers shared by the stores ----------

export interface ResolvedLimits {
  maxEventsPerSession: number;
  maxSessions: number;
  retentionMs: number | undefined;
}

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (value === Number.POSITIVE_INFINITY) return Number.MAX_SAFE_INTEGER;
  if (!Number.isInteger(value) || value < 1) {
    throw new AgentLoopError("configuration", `memory: ${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

export function resolveLimits(limits: MemoryLimits = {}): ResolvedLimits {
  const retention = limits.retentionMs;
  if (retention !== undefined && (!Number.isFinite(retention) || retention <= 0)) {
    throw new AgentLoopError("configuration", `memory: retentionMs must be a positive number of milliseconds, got ${String(retention)}`);
  }
  return {
    maxEventsPerSession: positiveInteger("maxEventsPerSession", limits.maxEventsPerSession, DEFAULT_MAX_EVENTS_PER_SESSION),
    maxSessions: positiveInteger("maxSessions", limits.maxSessions, DEFAULT_MAX_SESSIONS),
    retentionMs: retention,
  };
}

const SESSION_ID_MAX_LENGTH = 256;

export function checkSessionId(sessionId: unknown): string {
  if (typeof sessionId !== "string" || sessionId.length === 0) {
    throw new AgentLoopError("invalid_request", "memory: a session id must be a non-empty string");
  }
  if (sessionId.length > SESSION_ID_MAX_LENGTH) {
    throw new AgentLoopError("invalid_request", `memory: a session id is at most ${SESSION_ID_MAX_LENGTH} characters`);
  }
  if (sessionId.includes("\u0000")) throw new AgentLoopError("invalid_request", "memory: a session id cannot contain NUL characters");
  // No UTF-8 form: stores that encode it would map distinct ids to one (U+FFFD), or fail reading it back.
  if (!sessionId.isWellFormed()) throw new AgentLoopError("invalid_request", "memory: a session id cannot contain a lone surrogate (UTF-16 \\ud800–\\udfff without its pair)");
  return sessionId;
}

/** The default file of an agent's embedded store: `.agentloop/<agent name>/memory.db` (relative to the working directory). */
export function defaultEmbeddedPath(agentName: string | undefined = "agent"): string {
  const safe = agentName.replace(/[^A-Za-z0-9_.-]/g, "_").replace(/^\.+/, "_") || "agent";
  return `.agentloop/${safe}/memory.db`;
}

/**
 * A new session id: a UUID in the version 7 layout (RFC 9562), whose first 48 bits are the time in
 * milliseconds, so ids made later sort later. A store's index of session ids then grows at its
 * end: a group commit of new sessions touches a few pages at the edge of each index instead of one
 * random page per session (a quarter less SQLite work per append in the server bench, half the
 * commit's page writes in a 100-session group), and the sessions evicted first (the oldest) sit
 * together at the other end. Built on `randomUUID` (its random bits, from Node's cached entropy
 * pool, 0.3 µs): the `uuid` package's v7 costs 5.6 µs a call and 34 ms to import.
 */
export function newSessionId(): string {
  const random = randomUUID();
  const time = Date.now().toString(16).padStart(12, "0");
  // Time (48 bits) as the first 12 hex digits, then version 7 where v4 has its 4; the variant bits stay.
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15)}`;
}

/**
 * Text every store can hold: PostgreSQL text and jsonb (and SQLite's UTF-8) cannot hold NUL
 * characters or lone UTF-16 surrogates (`"\ud800"`), so every store replaces both with U+FFFD,
 * the same way, before it sees them (`storableText`).
 */
export function storableText(value: string): string {
  // `toWellFormed` replaces each lone surrogate with U+FFFD (native, unlike a regular expression).
  const clean = value.isWellFormed() ? value : value.toWellFormed();
  return clean.includes("\u0000") ? clean.replaceAll("\u0000", "\uFFFD") : clean;
}
const withoutNul = storableText;

/**
 * A JSON copy of a value (what every store gives back), with NUL characters replaced. Plain data
 * (strings, finite numbers, booleans, null, arrays and plain objects of them, as most events are)
 * is copied directly; anything else (a Date, a class instance, a function such as a toJSON,
 * undefined or non-finite values, deep nesting) takes the JSON round trip, whose result the direct
 * copy matches for plain data.
 */
export function jsonCopy(value: unknown, what: string): unknown {
  if (value === undefined) return null;
  const copy = plainCopy(value, 0);
  return copy === notPlain ? jsonRoundTrip(value, what) : copy;
}

const notPlain = Symbol("not plain data");

function plainCopy(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case "string":
      return withoutNul(value);
    case "number":
      // JSON writes -0 as 0.
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : notPlain;
    case "boolean":
      return value;
    case "object": {
      if (value === null) return null;
      if (depth > 32) return notPlain;
      if (Array.isArray(value)) {
        const array: unknown[] = new Array(value.length);
        for (let index = 0; index < value.length; index++) {
          const item = plainCopy(value[index], depth + 1);
          if (item === notPlain) return notPlain;
          array[index] = item;
        }
        return array;
      }
      if (Object.getPrototypeOf(value) !== Object.prototype) return notPlain;
      const object: Record<string, unknown> = {};
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue;
        // Assigning "__proto__" would set the copy's prototype instead of a key.
        if (key === "__proto__") return notPlain;
        const item = plainCopy((value as Record<string, unknown>)[key], depth + 1);
        if (item === notPlain) return notPlain;
        object[withoutNul(key)] = item;
      }
      return object;
    }
    default:
      return notPlain;
  }
}

function jsonRoundTrip(value: unknown, what: string): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new AgentLoopError("invalid_request", `memory: ${what} is not JSON-serializable (${(error as Error).message})`);
  }
  if (text === undefined) return null;
  // The round trip's result is plain data: its strings (NULs, lone surrogates) are made storable like any other.
  const copy = plainCopy(JSON.parse(text), 0);
  return copy === notPlain ? JSON.parse(text, storableJsonValue) : copy;
}

/**
 * `JSON.parse`'s reviver for what `plainCopy` does not take (deep nesting, an own `__proto__` key):
 * each string and key made storable, as `plainCopy` makes them. On the parsed values, not on the
 * JSON text: a text holding a backslash and `u0000` (escaped code, say) is kept as written.
 */
function storableJsonValue(_key: string, value: unknown): unknown {
  if (typeof value === "string") return withoutNul(value);
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const keys = Object.keys(value);
  if (keys.every((key) => withoutNul(key) === key)) return value;
  const object: Record<string, unknown> = {};
  for (const key of keys) {
    // A data property, not an assignment: an own "__proto__" key stays a key.
    Object.defineProperty(object, withoutNul(key), { value: (value as Record<string, unknown>)[key], enumerable: true, writable: true, configurable: true });
  }
  return object;
}

/** The last millisecond formatted, and its text: events written together mostly share one. */
let lastMs = Number.NaN;
let lastIso = "";

/** 10000-01-01T00:00:00.000Z: from here on `toISOString` writes a six-digit year. */
const YEAR_10000_MS = 253_402_300_800_000;

/**
 * The ISO 8601 text of a time in milliseconds, exactly as `Date.prototype.toISOString` writes it
 * (the same string again for the same millisecond). Times from 1970 to year 9999 are formatted
 * here: V8's `toISOString` goes through a printf (~4 K instructions a call, several per stored
 * event and chat, bench/README.md issue 33); others by `toISOString`.
 */
export function isoOf(ms: number): string {
  if (ms !== lastMs) {
    lastIso = ms >= 0 && ms < YEAR_10000_MS ? formatIso(Math.trunc(ms)) : new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

const twoDigits = (value: number): string => (value < 10 ? `0${value}` : `${value}`);

/** `toISOString` of a whole number of milliseconds from 0 to YEAR_10000_MS (days to a civil date: H. Hinnant's `civil_from_days`). */
function formatIso(ms: number): string {
  const days = Math.floor(ms / 86_400_000);
  let rest = ms - days * 86_400_000;
  const shifted = days + 719_468; // days since 0000-03-01
  const era = Math.floor(shifted / 146_097);
  const dayOfEra = shifted - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const shiftedMonth = Math.floor((5 * dayOfYear + 2) / 153); // March = 0
  const day = dayOfYear - Math.floor((153 * shiftedMonth + 2) / 5) + 1;
  const month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const millis = rest - seconds * 1000;
  const millisText = millis < 10 ? `00${millis}` : millis < 100 ? `0${millis}` : `${millis}`;
  return `${year}-${twoDigits(month)}-${twoDigits(day)}T${twoDigits(hours)}:${twoDigits(minutes)}:${twoDigits(seconds)}.${millisText}Z`;
}

/** An event's timestamp as ISO 8601 (now when not given); `invalid_request` when it is no time. */
export function isoTimestamp(value: string | Date | undefined): string {
  return isoOf(timestampMs(value));
}

/** An event's timestamp in ms since the epoch (now when not given); `invalid_request` when it is no time. */
export function timestampMs(value: string | Date | undefined): number {
  if (value === undefined) return Date.now();
  const ms = value instanceof Date ? value.getTime() : new Date(value).getTime();
  if (Number.isNaN(ms)) throw new AgentLoopError("invalid_request", `memory: invalid event timestamp ${String(value)}`);
  return ms;
}

/**
 * The sessions of a group of appends (the SQL stores' group commit): per session its number of
 * events and the index of its last append (so "least recently updated" follows the appends), with
 * the fields `extra()` adds for the store's own bookkeeping.
 */
export function sessionsOfGroup<Extra extends object>(
  appends: ReadonlyArray<{ sessionId: string; events: readonly unknown[] }>,
  extra: () => Extra,
): Map<string, Extra & { count: number; last: number }> {
  const sessions = new Map<string, Extra & { count: number; last: number }>();
  appends.forEach((member, index) => {
    const entry = sessions.get(member.sessionId);
    if (entry) {
      entry.count += member.events.length;
      entry.last = index;
    } else {
      // Properties set on the new object, not spread into another (a spread copies slowly, per key).
      const fresh = extra() as Extra & { count: number; last: number };
      fresh.count = member.events.length;
      fresh.last = index;
      sessions.set(member.sessionId, fresh);
    }
  });
  return sessions;
}

/**
 * A session's metadata as every store keeps it: a JSON copy of an object, its text made storable
 * (NUL and lone surrogates become U+FFFD, as in events). Anything but an object is refused, as an
 * event's metadata is (PostgreSQL would keep a string, SQLite a null, the in-memory store either).
 */
export function prepareSessionMetadata(metadata: unknown): Record<string, unknown> {
  const copy = jsonCopy(metadata ?? {}, "session metadata");
  if (typeof copy !== "object" || copy === null || Array.isArray(copy)) {
    throw new AgentLoopError("invalid_request", "memory: session metadata must be an object");
  }
  return copy as Record<string, unknown>;
}

/** Validates an append's arguments and every event before anything is stored (an append is all or nothing). */
export function prepareAppend(sessionId: string, events: readonly NewMemoryEvent[]): Array<Omit<MemoryEvent, "seq">> {
  checkSessionId(sessionId);
  if (!Array.isArray(events)) throw new TypeError("memory: append expects an array of events");
  return events.map((event) => prepareEvent(sessionId, event));
}

/** Validates and normalizes one event before it is stored (everything but `seq`). */
export function prepareEvent(sessionId: string, event: NewMemoryEvent): Omit<MemoryEvent, "seq"> {
  checkEvent(event);
  const metadata = jsonCopy(event.metadata ?? {}, "metadata");
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
    throw new AgentLoopError("invalid_request", "memory: metadata must be an object");
  }
  return {
    event_id: withoutNul(event.event_id ?? randomUUID()),
    session_id: sessionId,
    timestamp: isoTimestamp(event.timestamp),
    event_type: withoutNul(event.event_type),
    content: jsonCopy(event.content, "content"),
    metadata: metadata as MemoryEventMetadata,
  };
}

/** `prepareEvent`'s checks of an event's own fields: an object, a non-empty `event_type`, an `event_id` non-empty when given. */
export function checkEvent(event: NewMemoryEvent): void {
  if (typeof event !== "object" || event === null) throw new AgentLoopError("invalid_request", "memory: an event must be an object");
  if (typeof event.event_type !== "string" || event.event_type.length === 0) {
    throw new AgentLoopError("invalid_request", "memory: event_type must be a non-empty string");
  }
  if (event.event_id !== undefined && (typeof event.event_id !== "string" || event.event_id.length === 0)) {
    throw new AgentLoopError("invalid_request", "memory: event_id must be a non-empty string when given");
  }
}

export function checkLimit(limit: number | undefined, name = "limit"): number | undefined {
  if (limit === undefined) return undefined;
  if (!Number.isInteger(limit) || limit < 0) throw new AgentLoopError("invalid_request", `memory: ${name} must be a non-negative integer`);
  return limit;
}

/**
 * A query's `types` filter: an array of strings, each made storable as an event type is when it is
 * written (NUL and lone surrogates as U+FFFD), so a filter finds what was stored under that name in
 * every store (PostgreSQL refused a NUL in it; the others matched nothing). Anything else is refused.
 */
export function checkTypes(types: readonly string[] | undefined): string[] | undefined {
  if (types === undefined) return undefined;
  if (!Array.isArray(types) || !types.every((type) => typeof type === "string")) {
    throw new AgentLoopError("invalid_request", "memory: types must be an array of event type names (strings)");
  }
  return types.map(storableText);
}

export function checkAfterSeq(afterSeq: number | undefined): number | undefined {
  if (afterSeq === undefined) return undefined;
  if (!Number.isInteger(afterSeq) || afterSeq < 0) throw new AgentLoopError("invalid_request", "memory: afterSeq must be a non-negative integer");
  return afterSeq;
}

export function closedError(kind: string): AgentLoopError {
  return new AgentLoopError("invalid_request", `memory: the ${kind} store is closed`);
}

/** The error of a session-lock wait that its signal ended. */
export function abortedWaiting(): AgentLoopError {
  return new AgentLoopError("aborted", "memory: stopped waiting for the session, which another run is using");
}

/** Waits `milliseconds` between attempts to take a session lock; the signal ends the wait with `abortedWaiting()`. */
export function pauseForLock(milliseconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortedWaiting());
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedWaiting());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, milliseconds);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
