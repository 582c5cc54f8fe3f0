/**
 * The embedded store's file and tables: where the file of a path is, the schema, and the rows it
 * reads back as events and sessions.
 */
import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { AgentLoopError } from "../../errors.js";
import type { MemoryEvent, SessionInfo } from "../store.js";

/** The file name used when `path` names a directory. */
const FILE_IN_DIRECTORY = "memory.db";

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
 * session index; the once-a-minute prune scans the table instead). A session row has one index
 * besides its key, `activity` (the order of `listSessions` and of eviction); none on `updated_ms`
 * (retention reads look a session up by its key; the once-a-minute prune scans the sessions), which
 * a file of an earlier version had: dropped on open, one b-tree less written by every group.
 */
export const SCHEMA = `
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
DROP INDEX IF EXISTS agentloop_sessions_updated;
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

/** Physical deletion of expired rows runs at most this often (reads filter them out anyway). */
export const PRUNE_INTERVAL_MS = 60_000;
/** `timestamp_ms`/`updated_ms` below every real time: no retention cutoff. */
export const NO_CUTOFF = -8.64e15;

type EventRow = [string, string, number, string, string, string, string, string];
type SessionRow = [string, string, string, number, string, number];

export const EVENT_COLUMNS = "e.event_id, e.session_id, e.seq, e.timestamp, e.event_type, e.content, e.metadata, e.id";

export function toEvent(row: unknown[]): MemoryEvent {
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

export function toSession(row: unknown[]): SessionInfo {
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
