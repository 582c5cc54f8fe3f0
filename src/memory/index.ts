/**
 * `agentloop/memory`: an append-only event log per session, the stores behind it, the history
 * projection, and the loop's `SessionMemory` adapter. The embedded (SQLite) and PostgreSQL stores
 * live in `agentloop/memory/embedded` and `agentloop/memory/postgres` and load only when used.
 */
export {
  DEFAULT_MEMORY_CONFIG,
  DisabledMemoryStore,
  type Memory,
  type MemoryConfig,
  type MemoryType,
  memoryConfigFromEnv,
  memoryFromEnv,
  openMemoryStore,
  parseDuration,
} from "./config.js";
export { DEFAULT_CONTEXT_LIMIT, type HistoryOptions, historyFromEvents, INTERRUPTED_TOOL_RESULT } from "./history.js";
export { InMemoryStore } from "./in-memory-store.js";
export { type SessionMemoryHandle, type SessionMemoryOptions, sessionMemory, type TraceIds } from "./session-memory.js";
export {
  type AppendOptions,
  DEFAULT_MAX_EVENTS_PER_SESSION,
  DEFAULT_MAX_SESSIONS,
  defaultEmbeddedPath,
  type EventQuery,
  type LatestEventsQuery,
  MEMORY_EVENT_TYPES,
  type MemoryEvent,
  type MemoryEventMetadata,
  type MemoryEventType,
  type MemoryLimits,
  type MemoryStore,
  type NewMemoryEvent,
  type SessionInfo,
} from "./store.js";
