import { readFileSync } from "node:fs";
import { timeoutSignal } from "../abort.js";
import { kaosAgentTool } from "../agents/index.js";
import { AgentLoopError } from "../errors.js";
import { Agent } from "../loop/agent.js";
import type { RunObserver, SessionMemory, Toolset } from "../loop/types.js";
import type { McpAuthConfig, McpElicitationHandler, McpToolset } from "../mcp/index.js";
import type { Model } from "../model/model.js";
import { ScriptedModel } from "../model/scripted.js";
import { withFallback } from "../model/fallback.js";
import { compatibleBaseURL, resolveModel } from "../providers/index.js";
import { withToolCallMode } from "../text-tools/index.js";
import type { Guardrails } from "../loop/guardrails.js";
import type { Tool } from "../tools/tool.js";
import { jsonSchemaOf } from "../tools/validate.js";
import type { AgentSettings, McpServerSetting } from "./settings.js";

/** A dependency that did not answer before the readiness timeout. */
export interface UnavailableDependency {
  kind: "mcp" | "agent";
  name: string;
  reason: string;
}

/** A built agent with what the server advertises. */
export interface AgentRuntime {
  /** The agent (`agent.run(input, { sessionId, signal })`). */
  agent: Agent;
  settings: AgentSettings;
  /** Every tool the agent can call now (MCP tools and `delegate_to_<name>` tools included); follows the MCP servers' tool list changes. */
  readonly tools: Array<{ name: string; description: string; inputSchema: unknown }>;
  /**
   * MCP servers and peer agents that are not usable now: peers whose card did not answer at start,
   * and MCP servers that are down (not connected yet, or lost and being reconnected). Read live.
   */
  readonly unavailable: UnavailableDependency[];
  /** Closes MCP connections. */
  close(): Promise<void>;
}

export interface BuildAgentOptions {
  /** Where provider credentials are read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  memory?: SessionMemory;
  observers?: RunObserver[];
  /** Use this model instead of resolving one from the settings (the settings' tool-call mode still wraps it). */
  model?: Model;
  /** Extra local tools. */
  tools?: Tool[];
  /** Guardrails in code (the settings' `deniedTools` are added to them). */
  guardrails?: Guardrails;
  /** How long MCP servers and peer cards get to answer (default 10 s). */
  readyTimeoutMs?: number;
  /**
   * How the MCP connections are watched: pings of each server (default every 10 s), and the
   * reconnection backoff (default 500 ms doubling up to 30 s). A server that is down at start or
   * goes away later is reconnected for as long as the process lives. `onElicitation` answers the
   * servers' questions to the user (without it they are declined: `run` and `serve` are unattended).
   */
  mcp?: { pingIntervalMs?: number; reconnectDelayMs?: number; maxReconnectDelayMs?: number; onElicitation?: McpElicitationHandler };
  /** A person is there to sign in (the CLI): MCP servers with `auth.flow: authorization_code` are allowed. */
  interactiveAuth?: boolean;
}

/** A runtime whose configuration is checked but whose MCP servers and peers are not contacted yet. */
export interface PreparedAgentRuntime {
  settings: AgentSettings;
  /** Contacts MCP servers and peers (each up to `readyTimeoutMs`) and builds the agent. Never rejects for an unreachable dependency. */
  connect(signal?: AbortSignal): Promise<AgentRuntime>;
  /** Closes MCP connections opened so far. */
  close(): Promise<void>;
}

/**
 * The model the settings name, wrapped in their tool-call mode: the scripted model for
 * `DEBUG_MOCK_RESPONSES`, else a provider's (`model` spec, or `MODEL_API_URL` + `MODEL_NAME` as an
 * OpenAI-compatible endpoint).
 */
export async function modelOfSettings(settings: AgentSettings, env: NodeJS.ProcessEnv): Promise<Model> {
  return withToolCallMode(await providerModelOfSettings(settings, env), settings.toolCallMode, { maxSteps: settings.maxSteps, maxWaves: settings.maxSteps });
}

/** The model the settings name, without the tool-call mode (the agent wraps it); with `fallback`, the chain. */
export async function providerModelOfSettings(settings: AgentSettings, env: NodeJS.ProcessEnv): Promise<Model> {
  const primary = await primaryModelOfSettings(settings, env);
  if (settings.mockResponses !== undefined || !settings.fallback?.length) return primary;
  const fallbacks: Model[] = [];
  for (const [index, spec] of settings.fallback.entries()) {
    try {
      fallbacks.push(await resolveModel(spec, env));
    } catch (error) {
      throw new AgentLoopError("configuration", `fallback[${index}]: ${reasonOf(error)}`, { cause: error });
    }
  }
  return withFallback([primary, ...fallbacks]);
}

async function primaryModelOfSettings(settings: AgentSettings, env: NodeJS.ProcessEnv): Promise<Model> {
  if (settings.mockResponses !== undefined) return new ScriptedModel(settings.mockResponses);
  if (settings.modelApiUrl !== undefined || settings.modelName !== undefined) {
    if (settings.modelApiUrl === undefined) throw new AgentLoopError("configuration", "MODEL_API_URL: is required with MODEL_NAME (the OpenAI-compatible server's URL)");
    if (settings.modelName === undefined) throw new AgentLoopError("configuration", "MODEL_NAME: is required with MODEL_API_URL (the model to use)");
    return resolveModel(
      { provider: "openai-compatible", model: settings.modelName, baseURL: compatibleBaseURL(settings.modelApiUrl), apiKey: env.MODEL_API_KEY, apiKeyEnvVar: "MODEL_API_KEY" },
      env,
    );
  }
  if (settings.model !== undefined) {
    try {
      return await resolveModel(settings.model, env);
    } catch (error) {
      throw new AgentLoopError("configuration", `model: ${reasonOf(error)}`, { cause: error });
    }
  }
  throw new AgentLoopError(
    "configuration",
    "model: no model configured; set `model` in the agent file (for example openai:gpt-4.1), MODEL_API_URL and MODEL_NAME, or DEBUG_MOCK_RESPONSES",
  );
}

function mcpAuthOf(server: McpServerSetting, interactive: boolean): McpAuthConfig | undefined {
  const auth = server.auth;
  if (!auth) return undefined;
  if (auth.flow === "client_credentials") {
    if (auth.privateKeyFile === undefined) return { type: "client_credentials", clientId: auth.clientId!, clientSecret: auth.clientSecret!, scope: auth.scope, issuer: auth.issuer };
    let privateKey: string;
    try {
      privateKey = readFileSync(auth.privateKeyFile, "utf8");
    } catch (error) {
      throw new AgentLoopError("configuration", `mcpServers (${server.name}): cannot read the private key file ${auth.privateKeyFile}: ${reasonOf(error)}`, { cause: error });
    }
    return { type: "client_credentials", clientId: auth.clientId!, privateKey, algorithm: auth.algorithm, scope: auth.scope, issuer: auth.issuer };
  }
  if (!interactive) {
    throw new AgentLoopError(
      "configuration",
      `mcpServers (${server.name}): auth flow authorization_code needs a person to sign in (agentloop run or chat); a server uses clientId and clientSecret (MCP_SERVER_<NAME>_CLIENT_ID / _CLIENT_SECRET)`,
    );
  }
  return { type: "authorization_code", clientId: auth.clientId, clientSecret: auth.clientSecret, scope: auth.scope, clientMetadataUrl: auth.clientMetadataUrl };
}

function mcpToolsetOf(server: McpServerSetting, McpToolset: typeof import("../mcp/index.js").McpToolset, watch: BuildAgentOptions["mcp"] = {}, interactive = false): McpToolset {
  const auth = mcpAuthOf(server, interactive);
  try {
    // KAOS exposes MCP tools under their own names, so no server prefix.
    const common = { name: server.name, naming: { prefix: false as const }, pingIntervalMs: 10_000, ...watch };
    return server.url !== undefined
      ? new McpToolset({ ...common, url: server.url, auth })
      : new McpToolset({ ...common, command: server.command!, args: server.args, env: server.env });
  } catch (error) {
    throw new AgentLoopError("configuration", `mcpServers (${server.name}): ${(error as Error).message}`, { cause: error });
  }
}

async function fetchCard(url: string, signal: AbortSignal): Promise<void> {
  const response = await fetch(url, { signal, headers: { accept: "application/json" } });
  if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}`);
  await response.json();
}

function withTimeout<T>(work: (signal: AbortSignal) => Promise<T>, timeoutMs: number, outer?: AbortSignal): Promise<T> {
  const signal = outer ? AbortSignal.any([outer, timeoutSignal(timeoutMs)]) : timeoutSignal(timeoutMs);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error(`no answer within ${timeoutMs} ms`));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    work(signal).then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Checks the settings (model, MCP server configs) without contacting anything. Throws a
 * `configuration` error naming the setting.
 */
export async function prepareAgentRuntime(settings: AgentSettings, options: BuildAgentOptions = {}): Promise<PreparedAgentRuntime> {
  const env = options.env ?? process.env;
  // The provider's model (or the scripted one standing in for it); the agent wraps it in the
  // tool-call mode, so DEBUG_MOCK_RESPONSES replaces the provider, never the protocol.
  const model = options.model ?? (await providerModelOfSettings(settings, env));
  // The MCP and A2A SDKs load only for agents that use them (a plain agent server stays small).
  const mcp = settings.mcpServers.length > 0 ? await import("../mcp/index.js") : undefined;
  const toolsets = settings.mcpServers.map((server) => mcpToolsetOf(server, mcp!.McpToolset, options.mcp, options.interactiveAuth === true));
  const timeoutMs = options.readyTimeoutMs ?? 10_000;
  const close = async () => {
    await Promise.allSettled(toolsets.map((toolset) => toolset.close()));
  };
  const connect = async (signal?: AbortSignal): Promise<AgentRuntime> => {
    const unavailable: UnavailableDependency[] = [];
    const startupFailures = new Map<McpToolset, string>();
    // Every toolset goes to the agent as a toolset, so it follows tools/list_changed and a server
    // that comes up later (its tools appear once it connects); one that did not answer in time
    // keeps connecting in the background.
    await Promise.all(
      toolsets.map(async (toolset) => {
        try {
          await withTimeout(() => toolset.tools(), timeoutMs, signal);
        } catch (error) {
          startupFailures.set(toolset, reasonOf(error));
          toolset.keepConnecting();
        }
      }),
    );
    const mcpToolsets = toolsets;
    const peerTools = await Promise.all(
      settings.subAgents.map(async (peer): Promise<Tool<any>> => {
        if (peer.protocol === "a2a") {
          const { a2aAgentTool } = await import("../a2a/index.js");
          // A remote agent that asks for input asks the person the MCP servers ask (`agentloop chat`).
          const tool = await a2aAgentTool({ cardUrl: peer.cardUrl, name: peer.name, onElicitation: options.mcp?.onElicitation });
          await withTimeout((inner) => fetchCard(peer.cardUrl, inner), timeoutMs, signal).catch((error) =>
            unavailable.push({ kind: "agent", name: peer.name, reason: reasonOf(error) }),
          );
          return tool;
        }
        await withTimeout((inner) => fetchCard(peer.cardUrl, inner), timeoutMs, signal).catch((error) =>
          unavailable.push({ kind: "agent", name: peer.name, reason: reasonOf(error) }),
        );
        return kaosAgentTool({ name: peer.name, url: peer.url });
      }),
    );
    const tools: Array<Tool<any> | Toolset> = [...(options.tools ?? []), ...mcpToolsets, ...peerTools];
    let agent: Agent;
    try {
      agent = new Agent({
        name: settings.name,
        description: settings.description,
        instructions: settings.instructions,
        model,
        toolCallMode: settings.toolCallMode,
        tools,
        maxTurns: settings.maxSteps,
        // The model calls' time limits travel with each request, whatever adapter (or wrapper) serves it.
        modelOptions: Object.keys(settings.modelTimeouts ?? {}).length > 0 ? { ...settings.modelTimeouts } : undefined,
        memory: options.memory,
        observers: options.observers,
        guardrails:
          settings.deniedTools.length > 0 ? { ...options.guardrails, deniedTools: [...(options.guardrails?.deniedTools ?? []), ...settings.deniedTools] } : options.guardrails,
        needsApproval: settings.approvals.tools.length > 0 ? settings.approvals.tools : undefined,
        onApproval: settings.approvals.mode,
        approvalTimeoutMs: settings.approvals.timeoutMs,
      });
    } catch (error) {
      await close();
      throw new AgentLoopError("configuration", `agent "${settings.name}": ${reasonOf(error)}`, { cause: error });
    }
    let toolList = agent.currentTools().map((tool) => ({ name: tool.name, description: tool.description, inputSchema: jsonSchemaOf(tool) }));
    return {
      agent,
      settings,
      get tools() {
        try {
          toolList = agent.currentTools().map((tool) => ({ name: tool.name, description: tool.description, inputSchema: jsonSchemaOf(tool) }));
        } catch {
          // A server's change clashed with another tool's name: runs fail naming it; keep the last good list here.
        }
        // The tools of an MCP server that is down now are not advertised.
        const down = new Set(mcpToolsets.filter((toolset) => toolset.status !== "connected").flatMap((toolset) => toolset.loadedTools.map((tool) => tool.name)));
        return down.size === 0 ? toolList : toolList.filter((tool) => !down.has(tool.name));
      },
      get unavailable() {
        const mcpDown = mcpToolsets
          .filter((toolset) => toolset.status !== "connected")
          .map((toolset): UnavailableDependency => ({ kind: "mcp", name: toolset.name, reason: toolset.failure ?? startupFailures.get(toolset) ?? "not connected" }));
        return [...mcpDown, ...unavailable];
      },
      close,
    };
  };
  return { settings, connect, close };
}

/** Prepares and connects in one step (for the CLI). */
export async function buildAgentRuntime(settings: AgentSettings, options: BuildAgentOptions = {}): Promise<AgentRuntime> {
  const prepared = await prepareAgentRuntime(settings, options);
  return prepared.connect();
}
