/**
 * What the route modules share: the settings, the memory, the runs, the agent and the checks every
 * route makes. `createAgentServer` (server.ts) builds one and wires the routes around it.
 */
import type { Context } from "hono";
import type { AgentCard } from "@a2a-js/sdk";
import type { AgentRuntime, UnavailableDependency } from "../config/build-agent.js";
import type { AgentSettings } from "../config/settings.js";
import type { KaosAgentCard } from "./agent-card.js";
import { AgentLoopError } from "../errors.js";
import { badRequest, HttpError } from "./http-errors.js";
import { jsonDepthError } from "./json-depth.js";
import type { ServerMemory } from "./memory.js";
import type { DurableRuns } from "./durable-runs.js";
import type { ServerRuns } from "./runs.js";

/** The `/ready` body. `timestamp` is Unix seconds, as KAOS sends it. */
export interface ReadyStatus {
  status: "ready" | "starting" | "degraded" | "failed";
  name: string;
  timestamp: number;
  /** What is down: MCP servers and peers that did not answer, and the memory store once a write failed. */
  unavailable?: Array<UnavailableDependency | { kind: "memory"; name: string; reason: string }>;
  error?: string;
}

export interface ServerContext {
  readonly settings: AgentSettings;
  readonly log: (line: string) => void;
  readonly memory: ServerMemory;
  readonly runs: ServerRuns;
  /** Durable mode (`DURABLE=true`): the chat requests are durable runs. */
  readonly durable?: DurableRuns;
  /** Largest request body in bytes. */
  readonly bodyLimitBytes: number;
  /** True once shutdown began: every route but `/health` answers 503. */
  readonly draining: boolean;
  readonly readyStatus: ReadyStatus;
  /** Settles once the agent was built (undefined when it could not be). */
  readonly connecting: Promise<AgentRuntime | undefined>;
  /** The agent card as it is now (the tools of the built agent). */
  card(): AgentCard & Record<string, unknown>;
  /** KAOS's card shape (`/.well-known/agent`). */
  kaosCard(): KaosAgentCard;
  /** The names of the agent's own tools (once it is built): a client tool may not take one. */
  toolNames(): Promise<string[]>;
  /** The answer to a request that threw: its own status, 503 for a store or dependency failure, else 500 (logged). */
  httpErrorOfRequest(error: unknown, method: string, path: string): HttpError;
}

export const VERSION = "0.1.0";

/** Unix seconds: the `timestamp` of KAOS's `/health` and `/ready`. */
export const unixSeconds = () => Math.floor(Date.now() / 1000);

export function errorResponse(c: Context, error: HttpError): Response {
  return c.json(error.body(), error.status);
}

export const shuttingDownError = () => new HttpError(503, "the server is shutting down", "server_error", "shutting_down");

/** Parses a request body's text as JSON; 400 `invalid_json` when it is empty or not JSON. */
export function parseJsonText(text: string): unknown {
  if (text.trim() === "") throw badRequest("the request body is empty; send a JSON object", null, "invalid_json");
  const tooDeep = jsonDepthError(text);
  if (tooDeep) throw tooDeep;
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest(`the request body is not valid JSON: ${(error as Error).message}`, null, "invalid_json");
  }
}

/** Reads a Hono request's body as JSON (400 when it is not). */
export const readJson = async (c: Context): Promise<unknown> => parseJsonText(await c.req.text());

/** The `httpErrorOfRequest` of a server: logs store, dependency and unexpected failures. */
export function requestErrorMapper(settings: AgentSettings, log: (line: string) => void) {
  return (error: unknown, method: string, path: string): HttpError => {
    if (error instanceof HttpError) return error;
    if (AgentLoopError.isInstance(error)) {
      // A store or dependency failure (requests are validated before): the service is unavailable.
      log(`[${settings.name}] ${method} ${path} failed: ${error.kind}: ${error.message}`);
      return new HttpError(503, error.message, "server_error", error.kind);
    }
    log(`[${settings.name}] unexpected error on ${method} ${path}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return new HttpError(500, "internal error", "server_error", "internal_error");
  };
}
