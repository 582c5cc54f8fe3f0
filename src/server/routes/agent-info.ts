/**
 * `GET /v1/agent`: what the agent is and runs with, for a person looking at it (the studio's agent
 * view): identity, model, tools (live, MCP and delegation tools included), MCP servers and peers
 * with their state as `/ready` knows it, and the settings in force. Secrets never leave: API keys,
 * OAuth client secrets, an MCP server's environment values and passwords inside URLs are redacted.
 */
import { Hono } from "hono";
import type { AgentSettings } from "../../config/settings.js";
import type { ServerContext } from "../context.js";

export const REDACTED = "[redacted]";

/** A URL with its password (and a user name's secret part) replaced; text that is not a URL is returned as is. */
export function redactUrl(value: string): string {
  try {
    const url = new URL(value);
    if (!url.password && !url.username) return value;
    if (url.password) url.password = REDACTED;
    return url.toString().replace(encodeURIComponent(REDACTED), REDACTED);
  } catch {
    return value;
  }
}

/** The settings as a person may see them: every secret replaced with `[redacted]`. */
export function redactedSettings(settings: AgentSettings) {
  return {
    name: settings.name,
    description: settings.description,
    instructions: settings.instructions,
    model: settings.model ?? (settings.modelName ? `${settings.modelName} at ${settings.modelApiUrl ? redactUrl(settings.modelApiUrl) : "?"}` : settings.mockResponses !== undefined ? "scripted (DEBUG_MOCK_RESPONSES)" : undefined),
    maxSteps: settings.maxSteps,
    toolCallMode: settings.toolCallMode,
    modelTimeouts: settings.modelTimeouts,
    publicUrl: settings.publicUrl,
    apiKey: settings.apiKey !== undefined ? REDACTED : undefined,
    memory: Object.fromEntries(Object.entries(settings.memoryEnv).map(([key, value]) => [key, /URL$/.test(key) ? redactUrl(value) : value])),
    guardrails: { deniedTools: settings.deniedTools },
    approvals: settings.approvals,
    durable: settings.durable ?? false,
    studio: settings.studio,
  };
}

function mcpServerView(server: AgentSettings["mcpServers"][number]) {
  const { auth } = server;
  return {
    name: server.name,
    transport: server.url ? "http" : "stdio",
    ...(server.url ? { url: redactUrl(server.url) } : { command: server.command, args: server.args ?? [] }),
    ...(server.env ? { env: Object.fromEntries(Object.keys(server.env).map((key) => [key, REDACTED])) } : {}),
    ...(auth ? { auth: { ...auth, ...(auth.clientSecret !== undefined ? { clientSecret: REDACTED } : {}) } } : {}),
  };
}

/** The secret values of the settings: whatever text carries them (an error message, a reason) shows `[redacted]` instead. */
function secretsOf(settings: AgentSettings): string[] {
  const secrets = [settings.apiKey];
  for (const entry of settings.mcpServers) {
    secrets.push(entry.auth?.clientSecret, ...Object.values(entry.env ?? {}));
    for (const url of [entry.url]) if (url) secrets.push(passwordOf(url));
  }
  for (const [key, value] of Object.entries(settings.memoryEnv)) if (/URL$/.test(key)) secrets.push(passwordOf(value));
  for (const peer of settings.subAgents) secrets.push(passwordOf(peer.url));
  if (settings.modelApiUrl) secrets.push(passwordOf(settings.modelApiUrl));
  return secrets.filter((secret): secret is string => typeof secret === "string" && secret.length >= 3);
}

function passwordOf(value: string): string | undefined {
  try {
    const password = new URL(value).password;
    return password ? decodeURIComponent(password) : undefined;
  } catch {
    return undefined;
  }
}

/** The body with every secret value, and any password inside a URL, replaced (the last line of defence). */
export function scrubbed(body: unknown, secrets: readonly string[]): string {
  let text = JSON.stringify(body).replace(/(:\/\/[^:/@\s"]+):[^@/\s"]+@/g, `$1:${REDACTED}@`);
  for (const secret of secrets) text = text.split(JSON.stringify(secret).slice(1, -1)).join(REDACTED);
  return text;
}

export function agentInfoRoutes(server: ServerContext): Hono {
  const app = new Hono();
  app.get("/v1/agent", async (c) => {
    const runtime = await server.connecting;
    const ready = server.readyStatus;
    const down = new Map((ready.unavailable ?? []).map((item) => [`${item.kind}:${item.name}`, item.reason]));
    const { settings } = server;
    const info = {
      name: settings.name,
      description: settings.description,
      ready,
      card: server.card(),
      tools: (runtime?.tools ?? []).map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })),
      mcpServers: settings.mcpServers.map((entry) => {
        const reason = down.get(`mcp:${entry.name}`);
        return { ...mcpServerView(entry), state: reason === undefined ? (runtime ? "connected" : "starting") : "down", ...(reason ? { reason } : {}) };
      }),
      subAgents: settings.subAgents.map((peer) => {
        const reason = down.get(`agent:${peer.name}`);
        return { name: peer.name, url: redactUrl(peer.url), protocol: peer.protocol, state: reason === undefined ? "reachable" : "down", ...(reason ? { reason } : {}) };
      }),
      settings: redactedSettings(settings),
    };
    return c.body(scrubbed(info, secretsOf(settings)), 200, { "content-type": "application/json; charset=utf-8" });
  });
  return app;
}
