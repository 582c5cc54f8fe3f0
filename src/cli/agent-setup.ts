import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { type Command, Option } from "commander";
// Types only: the configuration modules (settings, YAML, providers, MCP...) load when a command uses them.
import type { AgentRuntime } from "../config/build-agent.js";
import type { AgentSettings, McpServerSetting, ToolCallMode } from "../config/settings.js";
import { AgentLoopError } from "../errors.js";
import type { MemoryStore, SessionMemoryHandle } from "../memory/index.js";
import type { McpElicitationHandler } from "../mcp/index.js";
import { checkMockScript } from "../model/mock-script.js";
import type { Model } from "../model/model.js";
import { ScriptedModel } from "../model/scripted.js";
import { SESSION_ID_PATTERN } from "../server/chat-request.js";
import { TOOL_CALL_MODES } from "../text-tools/tool-call-mode.js";
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
  /** A DEBUG_MOCK_RESPONSES script, or `@path` of a file holding one. */
  mock?: string;
  maxSteps?: number;
  toolCallMode?: ToolCallMode;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Adds `--agent FILE`, `--session ID` and a repeatable `--mcp` to a command. */
export function addAgentOptions(command: Command): Command {
  return command
    .addOption(new Option("-a, --agent <file>", "agent file (YAML: name, instructions, model, mcpServers, subAgents, memory...)"))
    .addOption(new Option("-s, --session <id>", "continue this session (its history is loaded from memory, new events appended)"))
    .addOption(new Option("--mcp <server>", "an MCP server: a URL or a stdio command line (repeatable)").argParser(collect));
}

/**
 * Adds the model options `run`, `chat` and `serve` share: `--model`, `--mock`, `--max-steps`,
 * `--tool-call-mode` (each on top of the agent file and the KAOS variables).
 */
export function addModelOptions(command: Command): Command {
  return command
    .addOption(new Option("-m, --model <spec>", "provider:model (openai:gpt-4.1, openai-responses:gpt-5, anthropic:claude-sonnet-4-5); else the agent file, MODEL_API_URL/MODEL_NAME"))
    .addOption(new Option("--mock <json>", "script the model: a JSON array of responses (DEBUG_MOCK_RESPONSES format), or @file.json"))
    .addOption(
      new Option("--max-steps <n>", "model calls per input (default 5; AGENTIC_LOOP_MAX_STEPS); in action and plan modes, action steps or waves").argParser((value) => {
        if (!/^\d+$/.test(value) || Number(value) < 1) throw new AgentLoopError("configuration", `--max-steps must be a positive integer, got "${value}"`);
        return Number(value);
      }),
    )
    .addOption(new Option("--tool-call-mode <mode>", "how the model calls tools (default auto; TOOL_CALL_MODE)").choices(TOOL_CALL_MODES));
}

/** The `--mock` value as a script: `@path` reads the file; text that starts with `[` or `{` must be valid JSON. */
export async function readMockOption(value: string): Promise<string> {
  let script = value;
  let source = "--mock";
  if (value.startsWith("@")) {
    const path = value.slice(1);
    source = `--mock ${value}`;
    try {
      script = await readFile(path, "utf8");
    } catch (error) {
      throw new AgentLoopError("configuration", `--mock: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, { cause: error });
    }
  }
  checkMockScript(script, source);
  return script;
}

/** Applies `--model`, `--mock`, `--max-steps` and `--tool-call-mode` to settings from the agent file and the environment. */
export async function applyModelOptions(settings: AgentSettings, options: AgentCliOptions): Promise<void> {
  if (options.model !== undefined) {
    settings.model = options.model;
    settings.modelApiUrl = undefined;
    settings.modelName = undefined;
    settings.mockResponses = undefined;
  }
  if (options.mock !== undefined) settings.mockResponses = await readMockOption(options.mock);
  if (options.maxSteps !== undefined) settings.maxSteps = options.maxSteps;
  if (options.toolCallMode !== undefined) settings.toolCallMode = options.toolCallMode;
}

/**
 * The CLI reads `DEBUG_MOCK_RESPONSES` into its settings, where the flags override it (`--mock`,
 * `--model`), and builds the scripted model itself (paced; in `chat`, one script for the whole
 * conversation). So the variable must not make every `Agent` of this process replace the model
 * with a fresh copy of the environment's script.
 */
export function takeOverMockScript(env: NodeJS.ProcessEnv): void {
  if (env === process.env) delete process.env.DEBUG_MOCK_RESPONSES;
}

/** How long `run`, `chat` and `serve` wait for an MCP server or peer agent that is still starting. */
export const MCP_START_TIMEOUT_MS = 60_000;

/** The one line `run` and `chat` print when nothing names a model. */
export const NO_MODEL_MESSAGE =
  "model: no model configured; pass --model provider:model (e.g. openai:gpt-4.1), set MODEL_API_URL and MODEL_NAME, or script one with --mock '[\"Hello!\"]' (the hotel demo: agentloop demo hotel)";

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
  /** Answers MCP servers' questions to the user (`chat` asks inline; without it they are declined). */
  elicitation?: McpElicitationHandler;
  /** One script across all runs (a scripted chat continues from message to message). */
  continueScript?: boolean;
  /** Fail (a `configuration` error naming the server) when an MCP server cannot start or connect. */
  requireMcp?: boolean;
}

/**
 * Builds the agent `run` and `chat` use: agent file + environment (as `serve`), then flags on top
 * (`--model`, `--mock`, `--max-steps`, `--tool-call-mode`, `--mcp` added to the file's servers).
 * With a session, the memory store of the `MEMORY_*` settings is opened: the same store the server uses.
 */
export async function setupCliAgent(options: AgentCliOptions, setup: SetupOptions = {}): Promise<CliAgent> {
  const env = setup.env ?? process.env;
  const [{ resolveAgentSettings }, { buildAgentRuntime }] = await Promise.all([import("../config/settings.js"), import("../config/build-agent.js")]);
  const settings = await resolveAgentSettings({ agentFile: options.agent, env });
  await applyModelOptions(settings, options);
  settings.mcpServers = [...settings.mcpServers, ...mcpServersFromFlags(options.mcp)];
  const noModel = settings.model === undefined && settings.modelApiUrl === undefined && settings.modelName === undefined && settings.mockResponses === undefined;
  if (noModel && !setup.fallbackModel) throw new AgentLoopError("configuration", NO_MODEL_MESSAGE);
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
  let runtime: AgentRuntime;
  try {
    // A script streams with a small delay per chunk so answers visibly stream (and can be interrupted).
    // It stands in for the provider: the agent still wraps it in the tool-call mode.
    takeOverMockScript(env);
    const model =
      settings.mockResponses !== undefined
        ? new ScriptedModel(settings.mockResponses, { chunkDelayMs: 10, continueAcrossRuns: setup.continueScript })
        : noModel
          ? setup.fallbackModel?.()
          : undefined;
    // A server that fails (a missing command, one that exits, a refused connection) is known at once;
    // one that is still starting (npx fetching a package, a busy machine) gets a minute.
    runtime = await buildAgentRuntime(settings, { env, memory, model, tools: setup.tools, readyTimeoutMs: MCP_START_TIMEOUT_MS, mcp: setup.elicitation ? { onElicitation: setup.elicitation } : undefined, interactiveAuth: true });
  } catch (error) {
    await store?.close();
    throw error;
  }
  const close = async () => {
    await runtime.close();
    await memory?.flush();
    await store?.close();
  };
  const missing = setup.requireMcp ? runtime.unavailable.filter((item) => item.kind === "mcp") : [];
  if (missing.length > 0) {
    await close();
    // The toolset's reason already names the server ("MCP server "x" (stdio: cmd): could not connect: ...").
    const describe = (item: (typeof missing)[number]) => {
      if (item.reason.startsWith(`MCP server "${item.name}"`)) return item.reason;
      const server = runtime.settings.mcpServers.find((candidate) => candidate.name === item.name);
      const where = server?.command ? `stdio: ${[server.command, ...(server.args ?? [])].join(" ")}` : server?.url ? `http: ${server.url}` : undefined;
      const target = where ? ` (${where})` : "";
      return `MCP server "${item.name}"${target}: ${item.reason}`;
    };
    throw new AgentLoopError("configuration", missing.map(describe).join("; "));
  }
  return { runtime, settings, sessionId, store, memory, close };
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
