import { AgentLoopError } from "../errors.js";
import type { TruncationOptions } from "../tools/tool.js";
import type { McpAuthConfig } from "./auth.js";

/** Launch an MCP server as a child process and talk to it over stdin/stdout. */
export interface McpStdioTransportConfig {
  command: string;
  args?: string[];
  /** Added to a minimal safe environment (PATH, HOME, ...), as the MCP SDK does. */
  env?: Record<string, string>;
  cwd?: string;
  /** What happens to the server's stderr. Default `pipe`: kept (last 4 KB) for error messages. */
  stderr?: "pipe" | "inherit" | "ignore";
}

/** Reach an MCP server over Streamable HTTP. */
export interface McpHttpTransportConfig {
  /** The endpoint. KAOS style: `/mcp` is appended when the path does not end with it (see `appendMcpPath`). */
  url: string;
  /** Default true. Set false to use the URL exactly as given. */
  appendMcpPath?: boolean;
  /** Sent with every HTTP request (authorization, tenant headers...). A function is called per request. */
  headers?: Record<string, string> | (() => Record<string, string>);
  /**
   * OAuth (the SDK's `authProvider`): `{ type: "client_credentials", clientId, clientSecret, scope? }`,
   * `{ type: "authorization_code", ... }` (PKCE, loopback redirect, tokens stored per server), or
   * `{ provider }` with any SDK `OAuthClientProvider`.
   */
  auth?: McpAuthConfig;
}

export interface McpToolNaming {
  /** Put in front of each tool name. Default: the server's `name`. `false` or `""`: no prefix. */
  prefix?: string | false;
  /** Between prefix and tool name. Default `.`. */
  separator?: string;
}

/** A server's question to the user (MCP elicitation, form mode). */
export interface McpElicitation {
  /** The MCP server that asks. */
  server: string;
  message: string;
  /** A flat JSON Schema object of the fields asked for (strings, numbers, booleans, enums). */
  requestedSchema: Record<string, unknown>;
}

/** The user's answer: `accept` with the field values, or `decline` / `cancel`. */
export interface McpElicitationAnswer {
  action: "accept" | "decline" | "cancel";
  content?: Record<string, string | number | boolean | string[]>;
}

/** Answers a server's question, usually by asking a human (`agentloop chat` asks inline). */
export type McpElicitationHandler = (request: McpElicitation, options: { signal: AbortSignal }) => Promise<McpElicitationAnswer>;

export interface McpCommonConfig {
  /** The server's name: the default tool name prefix, and the name error results mention. */
  name: string;
  /** Only these MCP tools (by their server-side name) are exposed; or a predicate on the server-side name. */
  allowedTools?: readonly string[] | ((toolName: string) => boolean);
  naming?: McpToolNaming;
  /**
   * Reconnection attempts allowed over the toolset's life after the connection dies (default: no
   * limit, for as long as the process lives). Attempts back off (see `reconnectDelayMs`).
   */
  maxReconnects?: number;
  /** Wait before the background reconnection attempt after a loss, doubled after each failed attempt (default 500). */
  reconnectDelayMs?: number;
  /** Longest wait between reconnection attempts (default 30,000). */
  maxReconnectDelayMs?: number;
  /**
   * Milliseconds between pings of a connected server, so a server that went away is noticed (and
   * reconnected) without waiting for a call; 0 or unset: no pings (a stdio server's exit is noticed at once anyway).
   */
  pingIntervalMs?: number;
  /** Milliseconds for one MCP request; progress notifications reset it (default 60,000). */
  requestTimeoutMs?: number;
  /** Milliseconds for opening a connection: the handshake and the first tool list (default 60,000;
   * a server started with `npx -y` may take a while). */
  connectTimeoutMs?: number;
  /** Applied to every exposed tool. */
  toolTimeoutMs?: number;
  truncation?: TruncationOptions;
  /** Mark every exposed tool sequential (a barrier in a wave). */
  sequential?: boolean;
  /** Called after the server's tool list changed and the cache was refreshed. */
  onToolsChanged?: (toolNames: string[]) => void;
  /**
   * Answers the server's questions to the user (elicitation; the client always declares the
   * capability). Without a handler every question is declined, with the reason in `_meta`: an
   * unattended agent has no one to ask.
   */
  onElicitation?: McpElicitationHandler;
}

export type McpServerConfig = McpCommonConfig & (McpStdioTransportConfig | McpHttpTransportConfig);

export function isStdioConfig(config: McpServerConfig): config is McpCommonConfig & McpStdioTransportConfig {
  return typeof (config as McpStdioTransportConfig).command === "string";
}

function configurationError(message: string): AgentLoopError {
  return new AgentLoopError("configuration", message);
}

/** Checks a config and throws a configuration error naming the problem. */
export function validateMcpConfig(config: McpServerConfig): void {
  if (typeof config !== "object" || config === null) throw configurationError("MCP server config must be an object");
  if (typeof config.name !== "string" || config.name.trim() === "") {
    throw configurationError("MCP server config needs a non-empty `name`");
  }
  const hasCommand = "command" in config && config.command !== undefined;
  const hasUrl = "url" in config && (config as McpHttpTransportConfig).url !== undefined;
  if (hasCommand && hasUrl) throw configurationError(`MCP server "${config.name}": give either \`command\` (stdio) or \`url\` (HTTP), not both`);
  if (!hasCommand && !hasUrl) throw configurationError(`MCP server "${config.name}": needs \`command\` (stdio) or \`url\` (Streamable HTTP)`);
  if (hasCommand) {
    const stdio = config as McpStdioTransportConfig;
    if (typeof stdio.command !== "string" || stdio.command.trim() === "") {
      throw configurationError(`MCP server "${config.name}": \`command\` must be a non-empty string`);
    }
    if (stdio.args !== undefined && (!Array.isArray(stdio.args) || stdio.args.some((arg) => typeof arg !== "string"))) {
      throw configurationError(`MCP server "${config.name}": \`args\` must be an array of strings`);
    }
  } else {
    normalizeMcpUrl((config as McpHttpTransportConfig).url, (config as McpHttpTransportConfig).appendMcpPath, config.name);
    const auth = (config as McpHttpTransportConfig).auth;
    if (auth && "type" in auth && auth.type === "client_credentials") {
      if (typeof auth.clientId !== "string" || auth.clientId === "") throw configurationError(`MCP server "${config.name}": client-credentials auth needs \`clientId\``);
      if ((auth.clientSecret === undefined) === (auth.privateKey === undefined)) {
        throw configurationError(`MCP server "${config.name}": client-credentials auth needs either \`clientSecret\` or \`privateKey\` (private_key_jwt), not ${auth.clientSecret === undefined ? "neither" : "both"}`);
      }
    }
    if (auth && "type" in auth && auth.type === "authorization_code" && auth.clientMetadataUrl !== undefined && !isClientMetadataUrl(auth.clientMetadataUrl)) {
      throw configurationError(`MCP server "${config.name}": \`auth.clientMetadataUrl\` must be an https URL with a path, got ${JSON.stringify(auth.clientMetadataUrl)}`);
    }
  }
  if (config.maxReconnects !== undefined && (!Number.isInteger(config.maxReconnects) || config.maxReconnects < 0)) {
    throw configurationError(`MCP server "${config.name}": \`maxReconnects\` must be a non-negative integer`);
  }
  for (const key of ["reconnectDelayMs", "maxReconnectDelayMs", "pingIntervalMs"] as const) {
    const value = config[key];
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value) || value < 0)) {
      throw configurationError(`MCP server "${config.name}": \`${key}\` must be a non-negative number of milliseconds`);
    }
  }
  for (const key of ["requestTimeoutMs", "connectTimeoutMs", "toolTimeoutMs"] as const) {
    const value = config[key];
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value) || value <= 0)) {
      throw configurationError(`MCP server "${config.name}": \`${key}\` must be a positive number of milliseconds`);
    }
  }
}

/** A Client ID Metadata Document URL must be https with a path (it becomes the client_id). */
function isClientMetadataUrl(value: unknown): boolean {
  if (typeof value !== "string") return false;
  try {
    const url = new URL(value);
    return url.protocol === "https:" && url.pathname !== "/";
  } catch {
    return false;
  }
}

/** `http://host:8000` → `http://host:8000/mcp`; a path already ending in `/mcp` is kept. */
export function normalizeMcpUrl(url: string, appendMcpPath = true, serverName = "?"): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw configurationError(`MCP server "${serverName}": \`url\` is not a valid URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw configurationError(`MCP server "${serverName}": \`url\` must be http or https, got ${parsed.protocol}`);
  }
  if (appendMcpPath) {
    const path = parsed.pathname.replace(/\/+$/, "");
    if (!path.endsWith("/mcp")) parsed.pathname = `${path}/mcp`;
  }
  return parsed;
}

/** The name the agent sees for a server-side tool. */
export function exposedToolName(serverName: string, toolName: string, naming: McpToolNaming = {}): string {
  const prefix = naming.prefix === undefined ? serverName : naming.prefix;
  if (prefix === false || prefix === "") return toolName;
  return `${prefix}${naming.separator ?? "."}${toolName}`;
}
