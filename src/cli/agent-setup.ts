import { randomUUID } from "node:crypto";
import { type Command, Option } from "commander";
// Types only: the configuration modules (settings, YAML, providers, MCP...) load when a command uses them.
import type { AgentRuntime } from "../config/build-agent.js";
import type { AgentSettings, McpServerSetting } from "../config/settings.js";
import { AgentLoopError } from "../errors.js";
import type { MemoryStore, SessionMemoryHandle } from "../memory/index.js";
import type { Model } from "../model/model.js";
import { SESSION_ID_PATTERN } from "../server/chat-request.js";
import { ScriptedModel } from "../model/scripted.js";
import type { Tool } from "../tools/tool.js";

/** The options `run` and `chat` share for choosing the agent. */
export interface AgentCliOptions {
  /** YAML agent file. */
  agent?: string;
  /** Continue (or start) this session. */
  session?: string;
  /** MCP servers: URLs or stdio command lines. */
  mcp?: string[];
  /** provider:model. */
  model?: string;
  /** A DEBUG_MOCK_RESPONSES script. */
  mock?: string;
  maxSteps?: number;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Adds `--agent FILE`, `--session ID` and a repeatable `--mcp` to a command. */
export function addAgentOptions(command: Command): Command {
  return command
    .addOption(new Option("-a, --agent <file>", "agent file (YAML: name, instructions, model, mcpServers, subAgents, memory...)"))
    .addOption(new Option("-s, --session <id>", "continue this session (its history is loaded from memory, new events appended)"))
    .addOption(new Option("--mcp <server>", "an MCP server: a URL or a stdio command line (repeatable)").argParser(collect));
}

/** True when `--agent`, `--session` or `--mcp` was given: `run` then uses the configured agent. */
export function usesAgentOptions(options: AgentCliOptions): boolean {
  return options.agent !== undefined || options.session !== undefined || (options.mcp !== undefined && options.mcp.length > 0);
}

/** Splits a command line into words, honouring single and double quotes. */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  const pattern = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const match of line.matchAll(pattern)) words.push(match[1] !== undefined ? match[1].replace(/\\(.)/g, "$1") : (match[2] ?? match[3]));
  return words;
}

/** Turns `--mcp` values into MCP server settings: a URL, or a stdio command line. */
export function mcpServersFromFlags(values: readonly string[] = []): McpServerSetting[] {
  return values.map((value, index) => {
    const trimmed = value.trim();
    if (trimmed === "") throw new AgentLoopError("configuration", "--mcp: expects a URL or a command, got an empty value");
    if (/^https?:\/\//i.test(trimmed)) {
      let url: URL;
      try {
        url = new URL(trimmed);
      } catch {
        throw new AgentLoopError("configuration", `--mcp: "${trimmed}" is not a valid URL`);
      }
      return { name: url.hostname.replace(/[^A-Za-z0-9_-]/g, "-") || `mcp${index + 1}`, url: trimmed };
    }
    const [command, ...args] = splitCommandLine(trimmed);
    const base = command.split(/[\\/]/).pop() ?? command;
    return { name: `${base.replace(/[^A-Za-z0-9_-]/g, "-")}-${index + 1}`, command, args };
  });
}

/** An agent ready for the CLI, with its memory when a session is used. */
export interface CliAgent {
  runtime: AgentRuntime;
  settings: AgentSettings;
  /** The session the runs belong to (undefined for one-shot runs without memory). */
  sessionId?: string;
  store?: MemoryStore;
  memory?: SessionMemoryHandle;
  close(): Promise<void>;
}

export interface SetupOptions {
  env?: NodeJS.ProcessEnv;
  /** Always use a session (a new one when `--session` is not given). */
  alwaysSession?: boolean;
  /** Prefix of a new session's id. */
  sessionPrefix?: string;
  /** Default model when nothing else names one. */
  fallbackModel?: () => Model;
  tools?: Tool[];
}

/**
 * Builds the agent `run` and `chat` use: agent file + environment (as `serve`), then flags on top
 * (`--model`, `--mock`, `--max-steps`, `--mcp` added to the file's servers). With a session, the
 * memory store of the `MEMORY_*` settings is opened: the same store the server uses.
 */
export async function setupCliAgent(options: AgentCliOptions, setup: SetupOptions = {}): Promise<CliAgent> {
  const env = setup.env ?? process.env;
  const [{ resolveAgentSettings }, { buildAgentRuntime }] = await Promise.all([import("../config/settings.js"), import("../config/build-agent.js")]);
  const settings = await resolveAgentSettings({ agentFile: options.agent, env });
  if (options.model !== undefined) {
    settings.model = options.model;
    settings.modelApiUrl = undefined;
    settings.modelName = undefined;
  }
  if (options.mock !== undefined) settings.mockResponses = options.mock;
  if (options.maxSteps !== undefined) settings.maxSteps = options.maxSteps;
  settings.mcpServers = [...settings.mcpServers, ...mcpServersFromFlags(options.mcp)];
  let sessionId: string | undefined;
  if (options.session !== undefined) {
    if (!SESSION_ID_PATTERN.test(options.session)) {
      throw new AgentLoopError("configuration", `--session: "${options.session}" must be 1-200 letters, digits, '_', '.', ':', '@' or '-'`);
    }
    sessionId = options.session;
  } else if (setup.alwaysSession) {
    sessionId = `${setup.sessionPrefix ?? "session"}_${randomUUID().slice(0, 8)}`;
  }
  let store: MemoryStore | undefined;
  let memory: SessionMemoryHandle | undefined;
  if (sessionId !== undefined) {
    const { memoryFromEnv } = await import("../memory/index.js");
    const opened = await memoryFromEnv({ AGENT_NAME: settings.name, ...settings.memoryEnv });
    store = opened.store;
    memory = opened.config.enabled ? opened.memory : undefined;
  }
  const noModel = settings.model === undefined && settings.modelApiUrl === undefined && settings.modelName === undefined && settings.mockResponses === undefined;
  let runtime: AgentRuntime;
  try {
    // A --mock script streams with a small delay per chunk so answers visibly stream (and can be interrupted).
    const model = options.mock !== undefined ? new ScriptedModel(options.mock, { chunkDelayMs: 10 }) : noModel ? setup.fallbackModel?.() : undefined;
    runtime = await buildAgentRuntime(settings, { env, memory, model, tools: setup.tools });
  } catch (error) {
    await store?.close();
    throw error;
  }
  return {
    runtime,
    settings,
    sessionId,
    store,
    memory,
    close: async () => {
      await runtime.close();
      await memory?.flush();
      await store?.close();
    },
  };
}

/** Opens the memory store the agent file and `MEMORY_*` variables describe (for `sessions` and `events`). */
export async function openCliStore(agentFile: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<MemoryStore> {
  const { resolveAgentSettings } = await import("../config/settings.js");
  const settings = await resolveAgentSettings({ agentFile, env });
  const { memoryConfigFromEnv, openMemoryStore } = await import("../memory/index.js");
  const config = memoryConfigFromEnv({ AGENT_NAME: settings.name, ...settings.memoryEnv });
  if (!config.enabled) throw new AgentLoopError("configuration", "MEMORY_ENABLED is false: there is no session store to read");
  // The embedded store is read live, also while a server or a run writes to it.
  return openMemoryStore(config);
}
