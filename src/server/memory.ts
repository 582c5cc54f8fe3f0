import { type MemoryEvent, type MemoryStore, memoryFromEnv, type SessionInfo, type SessionMemoryHandle, sessionMemory } from "../memory/index.js";

/** One event as the memory routes return it (the KAOS shape plus its session). */
export interface MemoryEventView {
  event_id: string;
  session_id: string;
  /** ISO 8601. */
  timestamp: string;
  event_type: string;
  content: unknown;
  metadata: Record<string, unknown>;
}

export function eventView(event: MemoryEvent): MemoryEventView {
  return {
    event_id: event.event_id,
    session_id: event.session_id,
    timestamp: event.timestamp,
    event_type: event.event_type,
    content: event.content,
    metadata: event.metadata,
  };
}

export function sessionView(session: SessionInfo): Omit<SessionInfo, "last_seq"> {
  const { last_seq: _ignored, ...view } = session;
  return view;
}

/** The store plus the loop adapter the server gives its agent. */
export interface ServerMemory {
  store: MemoryStore;
  /** Undefined when memory is disabled (nothing is recorded). */
  handle?: SessionMemoryHandle;
  /** Whether the server opened the store (and so closes it on shutdown). */
  owned: boolean;
}

/** Wraps a store given by the caller (the caller closes it). */
export function serverMemoryOf(store: MemoryStore, contextLimit?: number): ServerMemory {
  return { store, handle: store.kind === "disabled" ? undefined : sessionMemory(store, { contextLimit }), owned: false };
}

/** Opens the store the `MEMORY_*` variables describe. */
export async function serverMemoryFromEnv(env: Record<string, string | undefined>): Promise<ServerMemory> {
  const memory = await memoryFromEnv(env);
  return { store: memory.store, handle: memory.config.enabled ? memory.memory : undefined, owned: true };
}
