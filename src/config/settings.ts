import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { hostname } from "node:os";
import { AgentLoopError } from "../errors.js";
import { checkMockScript } from "../model/mock-script.js";

import type { ToolDenyRule } from "../loop/guardrails.js";
import { TOOL_CALL_MODES, type ToolCallMode } from "../text-tools/index.js";

export type { ToolCallMode };

/** One MCP server: a URL (streamable HTTP, SSE fallback) or a stdio command. */
export interface McpServerSetting {
  name: string;
  url?: string;
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  /**
   * OAuth for an HTTP server: a client id and secret (the client-credentials flow, for `serve`), or
   * `flow: authorization_code` (a person signs in; the CLI prints the URL and stores the tokens).
   */
  auth?: { flow?: "client_credentials" | "authorization_code"; clientId?: string; clientSecret?: string; scope?: string; clientMetadataUrl?: string; privateKeyFile?: string; algorithm?: string; issuer?: string };
}

/** A peer agent. `kaos` agents get a chat-completions call with a `task-delegation` message;
 * `a2a` agents are called through the A2A protocol. */
export interface SubAgentSetting {
  name: string;
  /** The agent's base URL (for `kaos`) or its A2A card URL / base URL (for `a2a`). */
  url: string;
  protocol: "kaos" | "a2a";
  /** Where the agent card is read to check that the agent is up. */
  cardUrl: string;
}

/**
 * Everything an agent server or the CLI needs to build an agent, merged from an agent file and
 * the KAOS environment variables (a variable that is set wins over the file).
 */
export interface AgentSettings {
  name: string;
  description: string;
  instructions: string;
  /** A model spec like `openai:gpt-4.1` (from the file's `model` string; see `agentloop/providers`). */
  model?: string;
  /** KAOS: an OpenAI-compatible endpoint and model name (`MODEL_API_URL`, `MODEL_NAME`). */
  modelApiUrl?: string;
  modelName?: string;
  /** Model calls per request (`AGENTIC_LOOP_MAX_STEPS`, default 5). */
  maxSteps: number;
  toolCallMode: ToolCallMode;
  mcpServers: McpServerSetting[];
  subAgents: SubAgentSetting[];
  /** The `MEMORY_*` variables (file values translated, then the environment's), for `memoryFromEnv`. */
  memoryEnv: Record<string, string>;
  /** `DEBUG_MOCK_RESPONSES`: when set, a scripted model replaces the real one. */
  mockResponses?: string;
  /** `AGENT_PORT` (default 8000). */
  port: number;
  /** `AGENT_API_KEY`: when set, every route but health and ready needs `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** `AGENT_PUBLIC_URL` (file: `publicUrl`): the base URL the agent card advertises (default: the listening address). */
  publicUrl?: string;
  /**
   * `AGENT_PROGRESS_BLOCKS` (file: `progressBlocks`, default true): KAOS's progress blocks in chat
   * completions streams; a request overrides it with `progress_blocks` or `X-Progress-Blocks`.
   */
  progressBlocks: boolean;
  /** The file's `tools` marked `client: true`: run by the frontend (`/api/chat`, `addToolOutput`). */
  clientTools: Array<{ name: string; description: string; parameters: Record<string, unknown> }>;
  /**
   * `A2A_CARD_DEFAULT_VERSION`: the A2A card `/.well-known/agent-card.json` serves to a client that
   * names no `A2A-Version`: `1.0` (default; the pure 1.0 card) or `0.3` (with the 0.3 fields, for
   * 0.3 clients that read `url`).
   */
  a2aCardDefaultVersion: "1.0" | "0.3";
  /** `AGENT_STUDIO` (file: `studio`, default true): `agentloop serve` serves the studio page at `/studio`. */
  studio: boolean;
  /**
   * Time limits of each model call (`MODEL_FIRST_BYTE_TIMEOUT_MS`, `MODEL_IDLE_TIMEOUT_MS`, or the
   * file's `modelTimeouts`); unset means the adapters' defaults (60 s, 30 s), 0 turns one off.
   */
  modelTimeouts: { firstByteTimeoutMs?: number; idleTimeoutMs?: number };
  /** The file's `guardrails`: denied tools (names or globs) with a reason. */
  deniedTools: ToolDenyRule[];
  /** The file's `approvals`: tools (names or globs, MCP and remote tools included) whose calls need approval. */
  approvals: { tools: string[]; mode?: "wait" | "interrupt"; timeoutMs?: number };
  /**
   * Durable mode (`DURABLE=true`, or the file's `durable`): every chat request is a durable run on
   * PostgreSQL (needs `MEMORY_TYPE=postgres`). `executorId` (`DURABLE_EXECUTOR_ID`, default the host
   * name: a StatefulSet pod's name) and the schema of DBOS's tables (`DURABLE_SCHEMA`, default `dbos`).
   */
  durable?: { executorId: string; schema: string };
}

/** The agent file (YAML). Every field is optional; the environment fills or overrides. */
export interface AgentFile {
  name?: string;
  description?: string;
  instructions?: string;
  model?: string | { url?: string; name?: string };
  maxSteps?: number;
  /** Milliseconds until a model call's first chunk, and of silence allowed between chunks (0: off). */
  modelTimeouts?: { firstByteMs?: number; idleMs?: number };
  toolCallMode?: ToolCallMode;
  /** The base URL the agent card advertises (behind a proxy or ingress). */
  publicUrl?: string;
  /** KAOS's progress blocks in chat completions streams (default true). */
  progressBlocks?: boolean;
  /** Tools the frontend runs (`client: true`, the only kind declared here): offered to the model on `/api/chat`. */
  tools?: Array<{ name: string; description?: string; parameters?: Record<string, unknown>; client: true }>;
  /** Serve the studio page at `/studio` (default true). */
  studio?: boolean;
  mcpServers?: Array<McpServerSetting | string> | Record<string, Omit<McpServerSetting, "name"> | string>;
  subAgents?: Array<{ name: string; url: string; protocol?: "kaos" | "a2a"; cardUrl?: string }> | Record<string, string | { url: string; protocol?: "kaos" | "a2a"; cardUrl?: string }>;
  memory?: {
    enabled?: boolean;
    type?: string;
    /** PostgreSQL URL (`MEMORY_POSTGRES_URL`). */
    url?: string;
    schema?: string;
    /** The embedded store's directory (`MEMORY_PATH`). */
    path?: string;
    /** e.g. `7d` (`MEMORY_RETENTION`). */
    retention?: string;
    contextLimit?: number;
    maxSessions?: number;
    maxSessionEvents?: number;
  };
  /** `deniedTools: [{ tools: "shell_*" | [names or globs], reason }]`: such calls never run. */
  guardrails?: { deniedTools?: ToolDenyRule[] };
  /** `tools`: names or globs whose calls need a person's approval; `mode`: wait (default) or interrupt; `timeoutMs` (wait mode). */
  approvals?: { tools?: string[]; mode?: "wait" | "interrupt"; timeoutMs?: number };
  /** Durable mode: `true`, or `{ executorId, schema }`. */
  durable?: boolean | { executorId?: string; schema?: string };
}

const memoryFileKeys: Record<string, string> = {
  enabled: "MEMORY_ENABLED",
  type: "MEMORY_TYPE",
  url: "MEMORY_POSTGRES_URL",
  schema: "MEMORY_POSTGRES_SCHEMA",
  path: "MEMORY_PATH",
  retention: "MEMORY_RETENTION",
  contextLimit: "MEMORY_CONTEXT_LIMIT",
  maxSessions: "MEMORY_MAX_SESSIONS",
  maxSessionEvents: "MEMORY_MAX_SESSION_EVENTS",
};

function configurationError(setting: string, problem: string): AgentLoopError {
  return new AgentLoopError("configuration", `${setting}: ${problem}`);
}

function positiveInteger(setting: string, value: unknown): number {
  const number = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  if (typeof number !== "number" || !Number.isInteger(number) || number < 1) {
    throw configurationError(setting, `must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return number;
}

function milliseconds(setting: string, value: unknown): number {
  const number = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  if (typeof number !== "number" || !Number.isInteger(number) || number < 0) {
    throw configurationError(setting, `must be a whole number of milliseconds (0 turns the limit off), got ${JSON.stringify(value)}`);
  }
  return number;
}

function port(setting: string, value: unknown): number {
  const number = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
  if (typeof number !== "number" || !Number.isInteger(number) || number < 0 || number > 65535) {
    throw configurationError(setting, `must be a port number between 0 and 65535, got ${JSON.stringify(value)}`);
  }
  return number;
}

/** A Client ID Metadata Document's URL: https with a path (it becomes the OAuth client_id). */
function clientMetadataUrl(setting: string, value: unknown): string {
  const url = httpUrl(setting, value);
  const parsed = new URL(url);
  if (parsed.protocol !== "https:" || parsed.pathname === "/") {
    throw configurationError(setting, `must be an https URL with a path (where your client metadata document is published), got ${JSON.stringify(value)}`);
  }
  return url;
}

function httpUrl(setting: string, value: unknown): string {
  if (typeof value !== "string" || value.trim() === "") throw configurationError(setting, "must be a URL");
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw configurationError(setting, `is not a valid URL: ${JSON.stringify(value)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw configurationError(setting, `must be an http(s) URL, got ${JSON.stringify(value)}`);
  return value.trim();
}

function text(setting: string, value: unknown): string {
  if (typeof value !== "string") throw configurationError(setting, `must be a string, got ${JSON.stringify(value)}`);
  return value;
}

function toolCallMode(setting: string, value: unknown): ToolCallMode {
  const mode = typeof value === "string" ? value.trim().toLowerCase() : value;
  if ((TOOL_CALL_MODES as readonly unknown[]).includes(mode)) return mode as ToolCallMode;
  throw configurationError(setting, `must be one of ${TOOL_CALL_MODES.join(", ")}; got ${JSON.stringify(value)}`);
}

function agentName(setting: string, value: unknown): string {
  const name = text(setting, value).trim();
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name)) {
    throw configurationError(setting, `must be a name of letters, digits, '-', '_' or '.', got ${JSON.stringify(value)}`);
  }
  return name;
}

/** The variable-name form KAOS uses for a name: upper case, non-alphanumerics as `_`. */
export function environmentKey(name: string): string {
  return name.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

function lookupPerName(env: NodeJS.ProcessEnv, prefix: string, name: string, suffix: string): { key: string; value?: string } {
  const exact = `${prefix}${name}${suffix}`;
  if (env[exact]) return { key: exact, value: env[exact] };
  const normalized = `${prefix}${environmentKey(name)}${suffix}`;
  return { key: normalized, value: env[normalized] };
}

/** A comma-separated list; the KAOS operator may write it in brackets (`[a,b]`). */
function list(value: string): string[] {
  return value
    .trim()
    .replace(/^\[(.*)\]$/s, "$1")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** A card path at the end of a URL: `/.well-known/agent` (KAOS), `agent.json` (A2A 0.3), `agent-card.json` (A2A 1.0). */
const CARD_PATH = /\/\.well-known\/(agent|agent\.json|agent-card\.json)$/;

/** The card URL of an A2A agent at a base URL (`/.well-known/agent.json`); a card URL is kept. */
export function agentCardUrl(baseUrl: string): string {
  if (CARD_PATH.test(baseUrl)) return baseUrl;
  return `${baseUrl.replace(/\/+$/, "")}/.well-known/agent.json`;
}

/** Where a KAOS agent serves its card: `<base>/.well-known/agent`, the path KAOS's RemoteAgent reads. */
function kaosCardUrl(url: string): string {
  return CARD_PATH.test(url) ? url : `${url.replace(/\/+$/, "")}/.well-known/agent`;
}

function baseUrlOfCard(cardUrl: string): string {
  return cardUrl.replace(CARD_PATH, "");
}

/** Reads and validates an agent file. Errors name the file and the field. */
export async function loadAgentFile(path: string): Promise<AgentFile> {
  let source: string;
  try {
    source = await readFile(path, "utf8");
  } catch (error) {
    throw new AgentLoopError("configuration", `agent file ${path}: cannot be read (${(error as Error).message})`, { cause: error });
  }
  return parseAgentFile(source, path);
}

/** Parses agent-file YAML text. `origin` names the file in error messages. */
export function parseAgentFile(source: string, origin = "agent file"): AgentFile {
  let value: unknown;
  try {
    // The YAML parser loads with the first agent file, not with the settings.
    value = (createRequire(import.meta.url)("yaml") as typeof import("yaml")).parse(source);
  } catch (error) {
    throw new AgentLoopError("configuration", `${origin}: invalid YAML (${(error as Error).message})`, { cause: error });
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== "object" || Array.isArray(value)) throw new AgentLoopError("configuration", `${origin}: must be a YAML mapping of settings`);
  const file = value as Record<string, unknown>;
  const known = new Set(["name", "description", "instructions", "model", "maxSteps", "modelTimeouts", "toolCallMode", "publicUrl", "progressBlocks", "studio", "tools", "mcpServers", "subAgents", "memory", "guardrails", "approvals", "durable"]);
  for (const key of Object.keys(file)) {
    if (!known.has(key)) throw new AgentLoopError("configuration", `${origin}: unknown setting "${key}" (known: ${[...known].join(", ")})`);
  }
  const field = (name: string) => `${origin}: ${name}`;
  if (file.name !== undefined) agentName(field("name"), file.name);
  if (file.description !== undefined) text(field("description"), file.description);
  if (file.instructions !== undefined) text(field("instructions"), file.instructions);
  if (file.maxSteps !== undefined) positiveInteger(field("maxSteps"), file.maxSteps);
  if (file.toolCallMode !== undefined) toolCallMode(field("toolCallMode"), file.toolCallMode);
  if (file.publicUrl !== undefined) httpUrl(field("publicUrl"), file.publicUrl);
  if (file.tools !== undefined) fileClientTools(file.tools, field("tools"));
  if (file.progressBlocks !== undefined && typeof file.progressBlocks !== "boolean") throw configurationError(field("progressBlocks"), `must be true or false, got ${JSON.stringify(file.progressBlocks)}`);
  if (file.studio !== undefined && typeof file.studio !== "boolean") throw configurationError(field("studio"), `must be true or false, got ${JSON.stringify(file.studio)}`);
  if (file.durable !== undefined && typeof file.durable !== "boolean") {
    const durable = file.durable as Record<string, unknown>;
    if (typeof durable !== "object" || durable === null || Array.isArray(durable)) throw configurationError(field("durable"), "must be true, false or { executorId, schema }");
    for (const key of Object.keys(durable)) if (key !== "executorId" && key !== "schema") throw configurationError(field("durable"), `unknown setting "${key}" (known: executorId, schema)`);
    if (durable.executorId !== undefined) text(field("durable.executorId"), durable.executorId);
    if (durable.schema !== undefined) text(field("durable.schema"), durable.schema);
  }
  if (file.model !== undefined && typeof file.model !== "string") {
    if (typeof file.model !== "object" || file.model === null || Array.isArray(file.model)) {
      throw configurationError(field("model"), 'must be a model spec like "openai:gpt-4.1" or { url, name }');
    }
    const model = file.model as Record<string, unknown>;
    if (model.url !== undefined) httpUrl(field("model.url"), model.url);
    if (model.name !== undefined) text(field("model.name"), model.name);
  }
  if (file.modelTimeouts !== undefined) {
    if (typeof file.modelTimeouts !== "object" || file.modelTimeouts === null || Array.isArray(file.modelTimeouts)) {
      throw configurationError(field("modelTimeouts"), "must be a mapping { firstByteMs, idleMs }");
    }
    for (const [key, value] of Object.entries(file.modelTimeouts)) {
      if (key !== "firstByteMs" && key !== "idleMs") throw configurationError(field(`modelTimeouts.${key}`), "unknown setting (known: firstByteMs, idleMs)");
      milliseconds(field(`modelTimeouts.${key}`), value);
    }
  }
  if (file.memory !== undefined && (typeof file.memory !== "object" || file.memory === null || Array.isArray(file.memory))) {
    throw configurationError(field("memory"), "must be a mapping");
  }
  for (const key of Object.keys((file.memory as object | undefined) ?? {})) {
    if (!(key in memoryFileKeys)) throw configurationError(field(`memory.${key}`), `unknown memory setting (known: ${Object.keys(memoryFileKeys).join(", ")})`);
  }
  checkControl(file, field);
  normalizeMcpServers(file.mcpServers, field("mcpServers"));
  normalizeSubAgents(file.subAgents, field("subAgents"));
  return file as AgentFile;
}

function stringList(setting: string, value: unknown): string[] {
  const items = typeof value === "string" ? [value] : value;
  if (!Array.isArray(items) || !items.every((item) => typeof item === "string" && item !== "")) {
    throw configurationError(setting, `must be a tool name or glob, or a list of them, got ${JSON.stringify(value)}`);
  }
  return items;
}

function mapping(setting: string, value: unknown, known: string[]): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw configurationError(setting, "must be a mapping");
  for (const key of Object.keys(value)) if (!known.includes(key)) throw configurationError(`${setting}.${key}`, `unknown setting (known: ${known.join(", ")})`);
  return value as Record<string, unknown>;
}

/** Checks the file's `guardrails` and `approvals`. */
function checkControl(file: Record<string, unknown>, field: (name: string) => string): void {
  if (file.guardrails !== undefined) {
    const guardrails = mapping(field("guardrails"), file.guardrails, ["deniedTools"]);
    const rules = guardrails.deniedTools ?? [];
    if (!Array.isArray(rules)) throw configurationError(field("guardrails.deniedTools"), "must be a list of { tools, reason }");
    rules.forEach((rule, index) => {
      const where = field(`guardrails.deniedTools[${index}]`);
      const entry = mapping(where, rule, ["tools", "reason"]);
      stringList(`${where}.tools`, entry.tools);
      if (typeof entry.reason !== "string" || entry.reason.trim() === "") throw configurationError(`${where}.reason`, "is required (the denied call's result says it)");
    });
  }
  if (file.approvals !== undefined) {
    const approvals = mapping(field("approvals"), file.approvals, ["tools", "mode", "timeoutMs"]);
    if (approvals.tools !== undefined) stringList(field("approvals.tools"), approvals.tools);
    if (approvals.mode !== undefined && approvals.mode !== "wait" && approvals.mode !== "interrupt") {
      throw configurationError(field("approvals.mode"), `must be wait or interrupt, got ${JSON.stringify(approvals.mode)}`);
    }
    if (approvals.timeoutMs !== undefined) positiveInteger(field("approvals.timeoutMs"), approvals.timeoutMs);
  }
}

function normalizeMcpServers(value: unknown, setting: string): McpServerSetting[] {
  if (value === undefined || value === null) return [];
  const entries: Array<[string | undefined, unknown]> = Array.isArray(value)
    ? value.map((item) => [undefined, item])
    : typeof value === "object"
      ? Object.entries(value as Record<string, unknown>)
      : [];
  if (!Array.isArray(value) && typeof value !== "object") throw configurationError(setting, "must be a list or a mapping of MCP servers");
  return entries.map(([key, item], index) => {
    const where = key === undefined ? `${setting}[${index}]` : `${setting}.${key}`;
    // A plain string is a URL or a stdio command line.
    if (typeof item === "string") {
      const name = key ?? `mcp${index + 1}`;
      return /^https?:\/\//.test(item) ? { name, url: httpUrl(where, item) } : { name, command: item };
    }
    if (typeof item !== "object" || item === null) throw configurationError(where, "must be a URL, a command or { name, url | command, args }");
    const server = item as Record<string, unknown>;
    const name = key ?? server.name;
    if (typeof name !== "string" || name === "") throw configurationError(`${where}.name`, "is required");
    if ((server.url === undefined) === (server.command === undefined)) throw configurationError(where, "needs exactly one of url or command");
    const result: McpServerSetting = { name };
    if (server.url !== undefined) result.url = httpUrl(`${where}.url`, server.url);
    if (server.command !== undefined) result.command = text(`${where}.command`, server.command);
    if (server.args !== undefined) {
      if (!Array.isArray(server.args) || !server.args.every((arg) => typeof arg === "string")) throw configurationError(`${where}.args`, "must be a list of strings");
      result.args = server.args as string[];
    }
    if (server.env !== undefined) {
      if (typeof server.env !== "object" || server.env === null) throw configurationError(`${where}.env`, "must be a mapping of strings");
      result.env = Object.fromEntries(Object.entries(server.env as Record<string, unknown>).map(([k, v]) => [k, String(v)]));
    }
    if (server.auth !== undefined) result.auth = mcpAuth(`${where}.auth`, server.auth, result.url !== undefined);
    return result;
  });
}

function mcpAuth(setting: string, value: unknown, http: boolean): NonNullable<McpServerSetting["auth"]> {
  if (!http) throw configurationError(setting, "OAuth applies to HTTP servers (url), not to stdio commands");
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw configurationError(setting, "must be a mapping { clientId, clientSecret, scope } or { flow: authorization_code }");
  const auth = value as Record<string, unknown>;
  for (const key of Object.keys(auth)) {
    if (!["flow", "clientId", "clientSecret", "privateKeyFile", "algorithm", "issuer", "scope", "clientMetadataUrl"].includes(key)) {
      throw configurationError(`${setting}.${key}`, "unknown setting (known: flow, clientId, clientSecret, privateKeyFile, algorithm, issuer, scope, clientMetadataUrl)");
    }
  }
  const flow = auth.flow ?? (auth.clientSecret !== undefined || auth.privateKeyFile !== undefined ? "client_credentials" : "authorization_code");
  if (flow !== "client_credentials" && flow !== "authorization_code") throw configurationError(`${setting}.flow`, `must be client_credentials or authorization_code, got ${JSON.stringify(flow)}`);
  const result: NonNullable<McpServerSetting["auth"]> = { flow };
  for (const key of ["clientId", "clientSecret", "privateKeyFile", "algorithm", "scope"] as const) if (auth[key] !== undefined) result[key] = text(`${setting}.${key}`, auth[key]);
  if (flow === "client_credentials" && (!result.clientId || (!result.clientSecret && !result.privateKeyFile))) {
    throw configurationError(setting, "the client-credentials flow needs clientId and clientSecret (or privateKeyFile, for private_key_jwt)");
  }
  if (result.clientSecret && result.privateKeyFile) throw configurationError(setting, "give clientSecret or privateKeyFile, not both");
  if (auth.issuer !== undefined) {
    if (flow !== "client_credentials") throw configurationError(`${setting}.issuer`, "applies to client credentials (the authorization server they may be sent to)");
    result.issuer = httpUrl(`${setting}.issuer`, auth.issuer);
  }
  if (auth.clientMetadataUrl !== undefined) {
    if (flow !== "authorization_code") throw configurationError(`${setting}.clientMetadataUrl`, "applies to the authorization-code flow (a person signs in), not to client credentials");
    result.clientMetadataUrl = clientMetadataUrl(`${setting}.clientMetadataUrl`, auth.clientMetadataUrl);
  }
  return result;
}

function normalizeSubAgents(value: unknown, setting: string): SubAgentSetting[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) && typeof value !== "object") throw configurationError(setting, "must be a list or a mapping of agents");
  const entries: Array<[string | undefined, unknown]> = Array.isArray(value) ? value.map((item) => [undefined, item]) : Object.entries(value as Record<string, unknown>);
  return entries.map(([key, item], index) => {
    const where = key === undefined ? `${setting}[${index}]` : `${setting}.${key}`;
    const agent = (typeof item === "string" ? { url: item } : item) as Record<string, unknown> | null;
    if (typeof agent !== "object" || agent === null) throw configurationError(where, "must be a URL or { name, url, protocol }");
    const name = agentName(`${where}.name`, key ?? agent.name);
    const url = httpUrl(`${where}.url`, agent.url);
    const protocol = agent.protocol ?? "kaos";
    if (protocol !== "kaos" && protocol !== "a2a") throw configurationError(`${where}.protocol`, `must be kaos or a2a, got ${JSON.stringify(protocol)}`);
    const cardUrl = agent.cardUrl !== undefined ? httpUrl(`${where}.cardUrl`, agent.cardUrl) : protocol === "kaos" ? kaosCardUrl(url) : agentCardUrl(url);
    return { name, url: protocol === "kaos" ? baseUrlOfCard(url) : url, protocol, cardUrl };
  });
}

function subAgentsFromEnv(env: NodeJS.ProcessEnv): SubAgentSetting[] | undefined {
  if (env.AGENT_SUB_AGENTS !== undefined && env.AGENT_SUB_AGENTS.trim() !== "") {
    return list(env.AGENT_SUB_AGENTS).map((entry) => {
      const separator = entry.indexOf(":");
      if (separator <= 0) throw configurationError("AGENT_SUB_AGENTS", `entry ${JSON.stringify(entry)} must be name:url`);
      const name = agentName("AGENT_SUB_AGENTS", entry.slice(0, separator));
      const url = httpUrl(`AGENT_SUB_AGENTS (${name})`, entry.slice(separator + 1));
      return { name, url: baseUrlOfCard(url), protocol: "kaos" as const, cardUrl: kaosCardUrl(url) };
    });
  }
  if (env.PEER_AGENTS !== undefined && env.PEER_AGENTS.trim() !== "") {
    return list(env.PEER_AGENTS).map((rawName) => {
      const name = agentName("PEER_AGENTS", rawName);
      const { key, value } = lookupPerName(env, "PEER_AGENT_", name, "_CARD_URL");
      if (!value) throw configurationError(key, `is required because PEER_AGENTS lists "${name}"`);
      const cardUrl = httpUrl(key, value);
      return { name, url: baseUrlOfCard(cardUrl), protocol: "kaos" as const, cardUrl: kaosCardUrl(cardUrl) };
    });
  }
  return undefined;
}

function mcpServersFromEnv(env: NodeJS.ProcessEnv): McpServerSetting[] | undefined {
  if (env.MCP_SERVERS === undefined || env.MCP_SERVERS.trim() === "") return undefined;
  return list(env.MCP_SERVERS).map((name) => {
    const { key, value } = lookupPerName(env, "MCP_SERVER_", name, "_URL");
    if (!value) throw configurationError(key, `is required because MCP_SERVERS lists "${name}"`);
    const server: McpServerSetting = { name, url: httpUrl(key, value) };
    // OAuth client credentials: MCP_SERVER_<NAME>_CLIENT_ID, _CLIENT_SECRET (and _SCOPE).
    const clientId = lookupPerName(env, "MCP_SERVER_", name, "_CLIENT_ID");
    const clientSecret = lookupPerName(env, "MCP_SERVER_", name, "_CLIENT_SECRET");
    const scope = lookupPerName(env, "MCP_SERVER_", name, "_SCOPE");
    // Or a private key (PEM file) instead of the secret: the client signs a JWT (private_key_jwt).
    const keyFile = lookupPerName(env, "MCP_SERVER_", name, "_PRIVATE_KEY_FILE");
    // The authorization server the credentials may be sent to (else: whichever the MCP server names).
    const issuer = lookupPerName(env, "MCP_SERVER_", name, "_ISSUER");
    const credential = clientSecret.value ? clientSecret : keyFile;
    if (clientId.value || credential.value) {
      if (!clientId.value || !credential.value) {
        throw configurationError(clientId.value ? clientSecret.key : clientId.key, `is required with ${clientId.value ? clientId.key : credential.key} (OAuth client credentials${clientId.value ? `; or ${keyFile.key}` : ""})`);
      }
      if (clientSecret.value && keyFile.value) throw configurationError(keyFile.key, `give ${clientSecret.key} or ${keyFile.key}, not both`);
      server.auth = {
        flow: "client_credentials",
        clientId: clientId.value,
        ...(clientSecret.value ? { clientSecret: clientSecret.value } : { privateKeyFile: keyFile.value }),
        ...(scope.value ? { scope: scope.value } : {}),
        ...(issuer.value ? { issuer: httpUrl(issuer.key, issuer.value) } : {}),
      };
    }
    return server;
  });
}

/**
 * `MCP_CLIENT_METADATA_URL`: the public URL of this client's metadata document (a Client ID
 * Metadata Document), used as the client_id by every authorization-code server that has no
 * `clientMetadataUrl` of its own, when its authorization server supports such documents.
 */
function withClientMetadataUrl(servers: McpServerSetting[], env: NodeJS.ProcessEnv): McpServerSetting[] {
  const value = env.MCP_CLIENT_METADATA_URL;
  if (value === undefined || value.trim() === "") return servers;
  const url = clientMetadataUrl("MCP_CLIENT_METADATA_URL", value);
  for (const server of servers) {
    if (server.auth?.flow === "authorization_code" && server.auth.clientMetadataUrl === undefined) server.auth.clientMetadataUrl = url;
  }
  return servers;
}

export interface ResolveSettingsOptions {
  /** Path of a YAML agent file. */
  agentFile?: string;
  /** An already parsed agent file (instead of a path). */
  file?: AgentFile;
  /** The environment to read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

/**
 * Merges an agent file and the KAOS environment into validated settings. Throws an
 * `AgentLoopError` of kind `configuration` whose message names the bad setting.
 */
export async function resolveAgentSettings(options: ResolveSettingsOptions = {}): Promise<AgentSettings> {
  const file = options.file ?? (options.agentFile ? await loadAgentFile(options.agentFile) : {});
  return settingsFrom(file, options.env ?? process.env);
}

/** The synchronous core of `resolveAgentSettings` for an already parsed file. */
/** `1.0` or `0.3` (a patch such as `0.3.0` is accepted: versions are `Major.Minor`). */
function cardVersion(name: string, value: string): "1.0" | "0.3" {
  const trimmed = value.trim();
  if (/^1\.0(\.\d+)?$/.test(trimmed)) return "1.0";
  if (/^0\.3(\.\d+)?$/.test(trimmed)) return "0.3";
  throw configurationError(name, `must be 1.0 or 0.3, got ${JSON.stringify(value)}`);
}

export function settingsFrom(file: AgentFile, env: NodeJS.ProcessEnv): AgentSettings {
  const set = (key: string) => env[key] !== undefined && env[key] !== "";
  const fileModel = file.model;
  const settings: AgentSettings = {
    name: set("AGENT_NAME") ? agentName("AGENT_NAME", env.AGENT_NAME) : (file.name ?? "agent"),
    description: set("AGENT_DESCRIPTION") ? env.AGENT_DESCRIPTION! : (file.description ?? "An agentloop agent"),
    instructions: set("AGENT_INSTRUCTIONS") ? env.AGENT_INSTRUCTIONS! : (file.instructions ?? "You are a helpful assistant."),
    model: typeof fileModel === "string" ? fileModel : undefined,
    modelApiUrl: set("MODEL_API_URL") ? httpUrl("MODEL_API_URL", env.MODEL_API_URL) : typeof fileModel === "object" ? fileModel.url : undefined,
    modelName: set("MODEL_NAME") ? env.MODEL_NAME : typeof fileModel === "object" ? fileModel.name : undefined,
    maxSteps: set("AGENTIC_LOOP_MAX_STEPS") ? positiveInteger("AGENTIC_LOOP_MAX_STEPS", env.AGENTIC_LOOP_MAX_STEPS) : (file.maxSteps ?? 5),
    toolCallMode: set("TOOL_CALL_MODE") ? toolCallMode("TOOL_CALL_MODE", env.TOOL_CALL_MODE) : (file.toolCallMode ?? "auto"),
    mcpServers: withClientMetadataUrl(mcpServersFromEnv(env) ?? normalizeMcpServers(file.mcpServers, "mcpServers"), env),
    subAgents: subAgentsFromEnv(env) ?? normalizeSubAgents(file.subAgents, "subAgents"),
    memoryEnv: {},
    mockResponses: set("DEBUG_MOCK_RESPONSES") ? env.DEBUG_MOCK_RESPONSES : undefined,
    port: set("AGENT_PORT") ? port("AGENT_PORT", env.AGENT_PORT) : 8000,
    apiKey: set("AGENT_API_KEY") ? env.AGENT_API_KEY : undefined,
    publicUrl: set("AGENT_PUBLIC_URL") ? httpUrl("AGENT_PUBLIC_URL", env.AGENT_PUBLIC_URL) : file.publicUrl,
    clientTools: fileClientTools(file.tools, "tools"),
    progressBlocks: set("AGENT_PROGRESS_BLOCKS") ? flag("AGENT_PROGRESS_BLOCKS", env.AGENT_PROGRESS_BLOCKS!) : file.progressBlocks !== false,
    a2aCardDefaultVersion: set("A2A_CARD_DEFAULT_VERSION") ? cardVersion("A2A_CARD_DEFAULT_VERSION", env.A2A_CARD_DEFAULT_VERSION!) : "1.0",
    studio: set("AGENT_STUDIO") ? flag("AGENT_STUDIO", env.AGENT_STUDIO!) : file.studio !== false,
    modelTimeouts: {},
    deniedTools: file.guardrails?.deniedTools ?? [],
    approvals: {
      tools: file.approvals?.tools === undefined ? [] : typeof file.approvals.tools === "string" ? [file.approvals.tools] : file.approvals.tools,
      mode: file.approvals?.mode,
      timeoutMs: file.approvals?.timeoutMs,
    },
  };
  const firstByte = set("MODEL_FIRST_BYTE_TIMEOUT_MS") ? milliseconds("MODEL_FIRST_BYTE_TIMEOUT_MS", env.MODEL_FIRST_BYTE_TIMEOUT_MS) : file.modelTimeouts?.firstByteMs;
  const idle = set("MODEL_IDLE_TIMEOUT_MS") ? milliseconds("MODEL_IDLE_TIMEOUT_MS", env.MODEL_IDLE_TIMEOUT_MS) : file.modelTimeouts?.idleMs;
  if (firstByte !== undefined) settings.modelTimeouts.firstByteTimeoutMs = firstByte;
  if (idle !== undefined) settings.modelTimeouts.idleTimeoutMs = idle;
  if (settings.mockResponses !== undefined) checkMockScript(settings.mockResponses, "DEBUG_MOCK_RESPONSES");
  for (const [key, variable] of Object.entries(memoryFileKeys)) {
    const value = file.memory?.[key as keyof NonNullable<AgentFile["memory"]>];
    if (value !== undefined) settings.memoryEnv[variable] = String(value);
  }
  for (const [key, value] of Object.entries(env)) if (key.startsWith("MEMORY_") && value !== undefined && value !== "") settings.memoryEnv[key] = value;
  const durable = set("DURABLE") ? flag("DURABLE", env.DURABLE!) : file.durable !== undefined && file.durable !== false;
  if (durable) {
    const fromFile = typeof file.durable === "object" ? file.durable : {};
    settings.durable = {
      executorId: set("DURABLE_EXECUTOR_ID") ? env.DURABLE_EXECUTOR_ID! : (fromFile.executorId ?? hostname()),
      schema: set("DURABLE_SCHEMA") ? env.DURABLE_SCHEMA! : (fromFile.schema ?? "dbos"),
    };
  }
  const names = new Set<string>();
  for (const agent of settings.subAgents) {
    if (names.has(agent.name)) throw configurationError("subAgents", `agent "${agent.name}" is listed twice`);
    names.add(agent.name);
  }
  return settings;
}

/** The file's `tools`: each `{ name, description?, parameters?, client: true }`. */
function fileClientTools(value: unknown, setting: string): AgentSettings["clientTools"] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw configurationError(setting, "must be a list of { name, description, parameters, client: true }");
  return value.map((entry, index) => {
    const tool = entry as Record<string, unknown> | null;
    const at = `${setting}[${index}]`;
    if (typeof tool !== "object" || tool === null || Array.isArray(tool)) throw configurationError(at, "must be { name, description, parameters, client: true }");
    if (tool.client !== true) throw configurationError(`${at}.client`, "must be true: the agent file declares only tools the frontend runs");
    if (typeof tool.name !== "string" || !/^[A-Za-z0-9_.:-]{1,128}$/.test(tool.name)) throw configurationError(`${at}.name`, "must be 1-128 letters, digits, '_', '.', ':' or '-'");
    if (tool.description !== undefined && typeof tool.description !== "string") throw configurationError(`${at}.description`, "must be a string");
    const parameters = tool.parameters ?? { type: "object", properties: {} };
    if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) throw configurationError(`${at}.parameters`, "must be a JSON Schema object");
    return { name: tool.name, description: (tool.description as string | undefined) ?? "", parameters: parameters as Record<string, unknown> };
  });
}

/** A boolean variable: true/false, 1/0, yes/no. */
function flag(name: string, value: string): boolean {
  const normalized = value.trim().toLowerCase();
  if (["true", "1", "yes", "on"].includes(normalized)) return true;
  if (["false", "0", "no", "off"].includes(normalized)) return false;
  throw configurationError(name, `must be true or false, got "${value}"`);
}
