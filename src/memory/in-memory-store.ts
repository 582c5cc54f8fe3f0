import {
  checkAfterSeq,
  checkLimit,
  checkSessionId,
  checkTypes,
  closedError,
  type EventQuery,
  isoOf,
  prepareSessionMetadata,
  type LatestEventsQuery,
  type MemoryEvent,
  type MemoryLimits,
  type MemoryStore,
  type NewMemoryEvent,
  newSessionId,
  prepareAppend,
  type ResolvedLimits,
  resolveLimits,
  type SessionInfo,
} from "./store.js";

/** A stored event (deeply frozen, handed out as is) and its place across sessions. */
interface StoredEvent {
  event: MemoryEvent;
  order: number;
}

interface StoredSession {
  info: Omit<SessionInfo, "event_count">;
  events: StoredEvent[];
}

/**
 * Freezes a JSON value and everything in it. Stored events are frozen once, when appended, and
 * then returned without copying: callers cannot change the log through them (assigning throws a
 * TypeError in strict code), and reads cost no clone.
 */
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    // JSON data (a private copy): own enumerable properties only, so for...in needs no Object.keys array.
    for (const key in value) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}

/** A process-local store: fast, shared by every agent of the process, gone when it exits. */
export class InMemoryStore implements MemoryStore {
  readonly kind = "memory";
  private readonly limits: ResolvedLimits;
  /** Map order is update order: the first entry is the least recently updated session. */
  private readonly sessions = new Map<string, StoredSession>();
  /** A global counter ordering events across sessions (for `latestEvents`). */
  private order = 0;
  private closed = false;

  constructor(limits: MemoryLimits = {}) {
    this.limits = resolveLimits(limits);
  }

  async createSession(sessionId?: string, metadata: Record<string, unknown> = {}): Promise<SessionInfo> {
    this.check();
    const id = checkSessionId(sessionId ?? newSessionId());
    this.prune();
    const existing = this.sessions.get(id);
    if (existing) return this.info(existing);
    const session = this.create(id, prepareSessionMetadata(metadata), new Date().toISOString());
    return this.info(session);
  }

  async getSession(sessionId: string): Promise<SessionInfo | undefined> {
    this.check();
    checkSessionId(sessionId);
    this.prune();
    const session = this.sessions.get(sessionId);
    return session ? this.info(session) : undefined;
  }

  async append(sessionId: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
    return this.appendSync(sessionId, events);
  }

  /** `append`, synchronously: throws where `append` rejects. */
  appendSync(sessionId: string, events: readonly NewMemoryEvent[]): MemoryEvent[] {
    this.check();
    const prepared = prepareAppend(sessionId, events);
    this.prune();
    if (prepared.length === 0) return [];
    const now = isoOf(Date.now());
    let session = this.sessions.get(sessionId);
    if (session) {
      // Move to the end: most recently updated.
      this.sessions.delete(sessionId);
      this.sessions.set(sessionId, session);
    } else {
      session = this.create(sessionId, {}, now);
    }
    // prepareEvent made private JSON copies of content and metadata: freezing them touches nothing of the caller's.
    const stored = prepared as MemoryEvent[];
    for (const event of stored) {
      // prepareEvent made a fresh object: `seq` is set on it (no copy), so it is its last key here,
      // where the SQL stores (`storedEvent`, `storedEvents`) put it third as the MemoryEvent interface does.
      event.seq = ++session.info.last_seq;
      session.events.push({ event: deepFreeze(event), order: ++this.order });
    }
    session.info.updated_at = now;
    const excess = session.events.length - this.limits.maxEventsPerSession;
    // shift() for a few (V8 moves the array's start instead of copying it), splice for many.
    if (excess > 0 && excess <= 8) for (let index = 0; index < excess; index++) session.events.shift();
    else if (excess > 0) session.events.splice(0, excess);
    return stored;
  }

  async events(sessionId: string, query: EventQuery = {}): Promise<MemoryEvent[]> {
    this.check();
    checkSessionId(sessionId);
    const limit = checkLimit(query.limit);
    const afterSeq = checkAfterSeq(query.afterSeq);
    const filter = checkTypes(query.types);
    this.prune();
    const session = this.sessions.get(sessionId);
    if (!session) return [];
    const types = filter ? new Set(filter) : undefined;
    const selected: MemoryEvent[] = [];
    for (const { event } of session.events) if ((afterSeq === undefined || event.seq > afterSeq) && (!types || types.has(event.event_type))) selected.push(event);
    if (limit === undefined) return selected;
    return afterSeq === undefined ? selected.slice(Math.max(0, selected.length - limit)) : selected.slice(0, limit);
  }

  async latestEvents(query: LatestEventsQuery = {}): Promise<MemoryEvent[]> {
    this.check();
    const limit = checkLimit(query.limit) ?? 100;
    const filter = checkTypes(query.types);
    this.prune();
    const types = filter ? new Set(filter) : undefined;
    const all: StoredEvent[] = [];
    for (const session of this.sessions.values()) for (const entry of session.events) if (!types || types.has(entry.event.event_type)) all.push(entry);
    all.sort((a, b) => a.order - b.order);
    return all.slice(Math.max(0, all.length - limit)).map((entry) => entry.event);
  }

  async listSessions(options: { limit?: number } = {}): Promise<SessionInfo[]> {
    this.check();
    const limit = checkLimit(options.limit);
    this.prune();
    // Map order is update order.
    const sessions = [...this.sessions.values()].map((session) => this.info(session));
    return limit === undefined ? sessions : sessions.slice(Math.max(0, sessions.length - limit));
  }

  async deleteSession(sessionId: string): Promise<boolean> {
    this.check();
    checkSessionId(sessionId);
    return this.sessions.delete(sessionId);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.sessions.clear();
  }

  private check(): void {
    if (this.closed) throw closedError(this.kind);
  }

  private create(sessionId: string, metadata: Record<string, unknown>, now: string): StoredSession {
    const session: StoredSession = { info: { session_id: sessionId, created_at: now, updated_at: now, last_seq: 0, metadata }, events: [] };
    this.sessions.set(sessionId, session);
    // Evict the least recently updated sessions beyond the limit (never the one just created).
    for (const id of this.sessions.keys()) {
      if (this.sessions.size <= this.limits.maxSessions) break;
      if (id !== sessionId) this.sessions.delete(id);
    }
    return session;
  }

  /** Drops events and sessions older than the retention period. */
  private prune(): void {
    if (this.limits.retentionMs === undefined) return;
    const cutoff = new Date(Date.now() - this.limits.retentionMs).toISOString();
    for (const [id, session] of this.sessions) {
      if (session.info.updated_at < cutoff) {
        this.sessions.delete(id);
        continue;
      }
      if (session.events.some((entry) => entry.event.timestamp < cutoff)) session.events = session.events.filter((entry) => entry.event.timestamp >= cutoff);
    }
  }

  private info(session: StoredSession): SessionInfo {
    return { ...session.info, metadata: structuredClone(session.info.metadata), event_count: session.events.length };
  }
}
