import { type MemoryEvent, type MemoryStore, memoryConfigFromEnv, memoryFromEnv, type SessionMemoryHandle, sessionMemory } from "../memory/index.js";

/**
 * One event as `GET /memory/events` returns it: exactly KAOS's five fields. The session id goes
 * into `metadata.session_id`, so events of several sessions (no `session_id` query) stay apart.
 */
export interface MemoryEventView {
  event_id: string;
  /** ISO 8601. */
  timestamp: string;
  event_type: string;
  content: unknown;
  metadata: Record<string, unknown> & { session_id: string };
}

export function eventView(event: MemoryEvent): MemoryEventView {
  return {
    event_id: event.event_id,
    timestamp: event.timestamp,
    event_type: event.event_type,
    content: event.content,
    metadata: { ...event.metadata, session_id: event.session_id },
  };
}

/** The store plus the loop adapter the server gives its agent. */
export interface ServerMemory {
  store: MemoryStore;
  /** Undefined when memory is disabled (nothing is recorded). */
  handle?: SessionMemoryHandle;
  /** Whether the server opened the store (and so closes it on shutdown). */
  owned: boolean;
}

/** Wraps a store given by the caller (the caller closes it); `MEMORY_CONTEXT_LIMIT` still applies. */
export function serverMemoryOf(store: MemoryStore, memoryEnv: Record<string, string | undefined> = {}): ServerMemory {
  if (store.kind === "disabled") return { store, owned: false };
  const { contextLimit } = memoryConfigFromEnv({ MEMORY_CONTEXT_LIMIT: memoryEnv.MEMORY_CONTEXT_LIMIT });
  return { store, handle: sessionMemory(store, { contextLimit }), owned: false };
}

/** Opens the store the `MEMORY_*` variables describe; the embedded store's default file is the agent's own. */
export async function serverMemoryFromEnv(env: Record<string, string | undefined>, agentName?: string): Promise<ServerMemory> {
  const memory = await memoryFromEnv({ AGENT_NAME: agentName, ...env });
  return { store: memory.store, handle: memory.config.enabled ? memory.memory : undefined, owned: true };
}
