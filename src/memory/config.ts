/**
 * Memory configuration from the environment (the KAOS variables plus agentloop's own) and a
 * single entry point that opens the configured store.
 */
import { AgentLoopError } from "../errors.js";
import { DEFAULT_CONTEXT_LIMIT } from "./history.js";
import { InMemoryStore } from "./in-memory-store.js";
import { type SessionMemoryHandle, type SessionMemoryOptions, sessionMemory } from "./session-memory.js";
import {
  DEFAULT_MAX_EVENTS_PER_SESSION,
  DEFAULT_MAX_SESSIONS,
  defaultEmbeddedPath,
  type EventQuery,
  type LatestEventsQuery,
  type MemoryEvent,
  type MemoryStore,
  type NewMemoryEvent,
  newSessionId,
  type SessionInfo,
} from "./store.js";

/** `memory`: in-process (KAOS `local`); `embedded`: a SQLite file (the default); `postgres`: a shared server. */
export type MemoryType = "memory" | "embedded" | "postgres";

export interface MemoryConfig {
  /** `false`: nothing is recorded and every session starts empty. */
  enabled: boolean;
  type: MemoryType;
  contextLimit: number;
  maxSessions: number;
  maxEventsPerSession: number;
  retentionMs?: number;
  /** The embedded store's file (or a directory to hold its `memory.db`). Default: `.agentloop/<agent name>/memory.db`. */
  path: string;
  postgresUrl?: string;
  postgresSchema?: string;
}

export const DEFAULT_MEMORY_CONFIG: MemoryConfig = {
  enabled: true,
  type: "embedded",
  contextLimit: DEFAULT_CONTEXT_LIMIT,
  maxSessions: DEFAULT_MAX_SESSIONS,
  maxEventsPerSession: DEFAULT_MAX_EVENTS_PER_SESSION,
  path: ".agentloop/agent/memory.db",
};

const TYPE_NAMES: Record<string, MemoryType> = {
  local: "memory",
  memory: "memory",
  "in-memory": "memory",
  embedded: "embedded",
  sqlite: "embedded",
  postgres: "postgres",
  postgresql: "postgres",
};

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

function bad(name: string, value: string, expected: string): AgentLoopError {
  return new AgentLoopError("configuration", `${name} must be ${expected}, got ${JSON.stringify(value)}`);
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const value = read(env, name);
  if (value === undefined) return fallback;
  const lower = value.toLowerCase();
  if (["true", "1", "yes", "on"].includes(lower)) return true;
  if (["false", "0", "no", "off"].includes(lower)) return false;
  throw bad(name, value, "true or false");
}

function integer(env: Env, name: string, fallback: number, minimum: number): number {
  const value = read(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < minimum || !Number.isSafeInteger(Number(value))) {
    throw bad(name, value, minimum === 0 ? "a non-negative integer" : "a positive integer");
  }
  return Number(value);
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90" (seconds), "90s", "15m", "12h", "7d", "500ms". */
export function parseDuration(name: string, value: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/i.exec(value.trim());
  const milliseconds = match ? Number(match[1]) * DURATION_UNITS[(match[2] ?? "s").toLowerCase()] : Number.NaN;
  if (!(milliseconds > 0) || !Number.isFinite(milliseconds)) throw bad(name, value, 'a positive duration like "3600", "30m", "12h" or "7d"');
  return milliseconds;
}

/**
 * Reads the memory settings. Throws an `AgentLoopError` (kind `configuration`) naming the variable
 * when a value is invalid:
 * - `MEMORY_ENABLED` (true), `MEMORY_TYPE` (`embedded`; `local`/`memory`, `embedded`/`sqlite`, `postgres`/`postgresql`)
 * - `MEMORY_CONTEXT_LIMIT` (6), `MEMORY_MAX_SESSIONS` (1000), `MEMORY_MAX_SESSION_EVENTS` (500)
 * - `MEMORY_RETENTION` (keep forever; e.g. `7d`), `MEMORY_PATH` (`.agentloop/<AGENT_NAME>/memory.db`, `agent` when unnamed)
 * - `MEMORY_POSTGRES_URL` or `DATABASE_URL` (required for postgres), `MEMORY_POSTGRES_SCHEMA` (`public`)
 */
export function memoryConfigFromEnv(env: Env = process.env): MemoryConfig {
  const enabled = boolean(env, "MEMORY_ENABLED", true);
  const typeName = read(env, "MEMORY_TYPE");
  const type = typeName === undefined ? DEFAULT_MEMORY_CONFIG.type : TYPE_NAMES[typeName.toLowerCase()];
  if (type === undefined) {
    const hint = typeName!.toLowerCase() === "pglite" ? " (the PGlite store was replaced by the SQLite file of MEMORY_TYPE=embedded)" : "";
    throw bad("MEMORY_TYPE", typeName!, `one of local, memory, embedded, sqlite, postgres${hint}`);
  }
  const retention = read(env, "MEMORY_RETENTION");
  const config: MemoryConfig = {
    enabled,
    type,
    contextLimit: integer(env, "MEMORY_CONTEXT_LIMIT", DEFAULT_CONTEXT_LIMIT, 0),
    maxSessions: integer(env, "MEMORY_MAX_SESSIONS", DEFAULT_MAX_SESSIONS, 1),
    maxEventsPerSession: integer(env, "MEMORY_MAX_SESSION_EVENTS", DEFAULT_MAX_EVENTS_PER_SESSION, 1),
    retentionMs: retention === undefined ? undefined : parseDuration("MEMORY_RETENTION", retention),
    path: read(env, "MEMORY_PATH") ?? defaultEmbeddedPath(read(env, "AGENT_NAME")),
    postgresUrl: read(env, "MEMORY_POSTGRES_URL") ?? read(env, "DATABASE_URL"),
    postgresSchema: read(env, "MEMORY_POSTGRES_SCHEMA"),
  };
  if (config.postgresSchema !== undefined && !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(config.postgresSchema)) {
    throw bad("MEMORY_POSTGRES_SCHEMA", config.postgresSchema, "a plain SQL identifier (letters, digits, _)");
  }
  if (enabled && type === "postgres" && !config.postgresUrl) {
    throw new AgentLoopError("configuration", "MEMORY_TYPE=postgres needs MEMORY_POSTGRES_URL (or DATABASE_URL)");
  }
  return config;
}

/** The store of `MEMORY_ENABLED=false`: accepts everything, records nothing. */
export class DisabledMemoryStore implements MemoryStore {
  readonly kind = "disabled";
  async createSession(sessionId?: string, metadata: Record<string, unknown> = {}): Promise<SessionInfo> {
    const now = new Date().toISOString();
    return { session_id: sessionId ?? newSessionId(), created_at: now, updated_at: now, event_count: 0, last_seq: 0, metadata };
  }
  async getSession(_sessionId: string): Promise<SessionInfo | undefined> {
    return undefined;
  }
  async append(_sessionId: string, _events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> {
    return [];
  }
  async events(_sessionId: string, _query?: EventQuery): Promise<MemoryEvent[]> {
    return [];
  }
  async latestEvents(_query?: LatestEventsQuery): Promise<MemoryEvent[]> {
    return [];
  }
  async listSessions(): Promise<SessionInfo[]> {
    return [];
  }
  async deleteSession(_sessionId: string): Promise<boolean> {
    return false;
  }
  async close(): Promise<void> {}
}

/**
 * Opens the store a configuration names (defaults from `DEFAULT_MEMORY_CONFIG`). The embedded and
 * PostgreSQL modules are loaded only when used, so importing `agentloop/memory` stays light.
 */
export async function openMemoryStore(config: Partial<MemoryConfig> = {}): Promise<MemoryStore> {
  const settings = { ...DEFAULT_MEMORY_CONFIG, ...config };
  if (!settings.enabled) return new DisabledMemoryStore();
  const limits = { maxSessions: settings.maxSessions, maxEventsPerSession: settings.maxEventsPerSession, retentionMs: settings.retentionMs };
  switch (settings.type) {
    case "memory":
      return new InMemoryStore(limits);
    case "embedded": {
      const { openEmbeddedStore } = await import("./embedded.js");
      return openEmbeddedStore({ ...limits, path: settings.path });
    }
    case "postgres": {
      if (!settings.postgresUrl) throw new AgentLoopError("configuration", "memory: the postgres store needs postgresUrl (MEMORY_POSTGRES_URL or DATABASE_URL)");
      const { openPostgresStore } = await import("./postgres.js");
      return openPostgresStore({ ...limits, url: settings.postgresUrl, schema: settings.postgresSchema });
    }
    default:
      throw new AgentLoopError("configuration", `memory: unknown store type ${JSON.stringify(settings.type)}`);
  }
}

export interface Memory {
  config: MemoryConfig;
  store: MemoryStore;
  /** Give this to `new Agent({ memory })`. */
  memory: SessionMemoryHandle;
}

/** Reads the environment, opens the store and wraps it for the loop: the server's and the CLI's one call. */
export async function memoryFromEnv(env: Env = process.env, options: Omit<SessionMemoryOptions, "contextLimit"> = {}): Promise<Memory> {
  const config = memoryConfigFromEnv(env);
  const store = await openMemoryStore(config);
  return { config, store, memory: sessionMemory(store, { ...options, contextLimit: config.contextLimit }) };
}
