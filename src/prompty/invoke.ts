import { dirname, resolve } from "node:path";
import { childRunOptions, DEFAULT_MAX_DELEGATION_DEPTH, delegationPath, delegationRefusal, errorResult } from "../agents/local.js";
import { singleModelCall } from "../agents/single-call.js";
import { AgentLoopError, type ErrorKind } from "../errors.js";
import { Agent } from "../loop/agent.js";
import type { LoopEvent, RunResult } from "../loop/events.js";
import type { Run } from "../loop/run.js";
import type { Guardrails } from "../loop/guardrails.js";
import type { AgentConfig, Instrumentation, RunObserver, SessionMemory } from "../loop/types.js";
import { type Message, textOf } from "../messages.js";
import type { JsonSchema, Model, ModelOptions } from "../model/model.js";
import { scriptedModelFromEnv } from "../model/scripted.js";
import type { Tool, ToolContext, ToolOutput, ToolResultValue } from "../tools/tool.js";
import { promptyContextBudget } from "./context.js";
import { type PromptyEventHandler, promptyEventBridge } from "./events.js";
import { controlOfFrontmatter } from "./control.js";
import { loadPrompty } from "./loader.js";
import { getTool, getToolHandler, type PromptyKindCall, type PromptyToolHandler } from "./registry.js";
import { prepare, propertiesSchema } from "./template.js";
import type { PromptyAgent, PromptyToolSpec } from "./types.js";

/** Model calls per invocation unless the file or the options say otherwise. */
export const DEFAULT_MAX_ITERATIONS = 10;

/** Tools added at invocation: core tools (replacing declared tools of the same name) or name handlers. */
export type PromptyRuntimeTools = Tool<any>[] | Record<string, PromptyToolHandler>;

export interface InvokeAgentOptions {
  /**
   * The model: an instance, or a function choosing one per prompty file (children too). Without
   * it, `DEBUG_MOCK_RESPONSES` gives the scripted model, else the file's `model` section is
   * resolved with `agentloop/providers`.
   */
  model?: Model | ((agent: PromptyAgent) => Model | Promise<Model>);
  /** Model calls allowed (default: the file's `maxIterations`, else 10). */
  maxIterations?: number;
  /** Where `${env:VAR}` references are looked up (default `process.env`). */
  env?: Record<string, string | undefined>;
  signal?: AbortSignal;
  sessionId?: string;
  memory?: SessionMemory;
  observers?: RunObserver[];
  /** Wraps the run, model and tool calls (tracing); prompty children inherit it. */
  instrumentation?: Instrumentation;
  /** Values handed to tools (trace headers...). */
  services?: Record<string, unknown>;
  /** More agent settings (toolTimeoutMs, concurrency, truncation, onLimit...). */
  agentConfig?: Partial<Omit<AgentConfig, "model" | "tools" | "instructions">>;
  /**
   * Prompty agent events (§13.1): `token`, `thinking`, `tool_call_start`, `tool_result`, `status`,
   * `messages_updated`, `done`, `error`, `cancelled`, `compaction_*`, each with its payload.
   */
  onEvent?: PromptyEventHandler;
  /** Context budget in characters (§13.3); default: the file's `contextBudget`. */
  contextBudget?: number;
  /** Guardrails (§13.4), handed to `AgentConfig.guardrails` (the file's `guardrails.deniedTools` are added to them). */
  guardrails?: Guardrails;
  /** Steering (§13.5): messages sent to it are injected between iterations. */
  steering?: Steering;
  /** Run the tool calls of one response concurrently (§13.6). Default `false`: one after another. */
  parallelToolCalls?: boolean;
  /** `false`: non-streaming requests and no `token` events. Default: the file's `stream`, else `true`. */
  stream?: boolean;
  /** Set when a prompty runs as another agent's tool. */
  depth?: number;
  agentPath?: readonly string[];
  parentRunId?: string;
  /** The calling tool call (a `single` child's model call is traced under it). */
  parentToolCallId?: string;
}

/** A prompty run that did not complete. `result` holds the whole run (`result.messages`: the conversation so far). */
export class PromptyRunError extends AgentLoopError {
  constructor(
    message: string,
    readonly result: RunResult,
    kind: ErrorKind = result.error?.kind ?? "unknown",
  ) {
    super(kind, message, { cause: result.error, retryable: false });
    this.name = "PromptyRunError";
  }
}

/**
 * Steering (§13.5): `send` queues a user message for the running prompty, injected between its
 * iterations; messages sent before the run starts wait for it.
 */
export class Steering {
  private queue: string[] = [];
  private run?: Run;

  send(message: string): void {
    if (this.run) this.run.steer(message);
    else this.queue.push(message);
  }

  /** Messages not yet handed to a run. */
  get hasPending(): boolean {
    return this.queue.length > 0;
  }

  /** Removes and returns the messages not yet handed to a run. */
  drain(): string[] {
    return this.queue.splice(0);
  }

  /** Called by `startAgent`: queued messages go to the run, later ones straight to it. */
  attach(run: Run): void {
    this.run = run;
    for (const message of this.drain()) run.steer(message);
  }
}

/** The tool a run called without the prompty having it (`Tool not registered: <name>`). */
const notRegistered = new WeakMap<Run, string>();

/** §9.9: a tool that throws gives the result `Error: Tool '<name>' failed: <message>`. */
function toolFailure(name: string, error: unknown): ToolResultValue {
  return errorResult(`Error: Tool '${name}' failed: ${error instanceof Error ? error.message : String(error)}`);
}

function failuresAsResults(tool: Tool<any>): Tool<any> {
  const execute = tool.execute;
  return {
    ...tool,
    async execute(args, context) {
      try {
        return await execute.call(tool, args, context);
      } catch (error) {
        return toolFailure(tool.name, error);
      }
    },
  };
}

/** The message a run that used up its iterations reports. */
export const iterationsExceeded = (maxIterations: number) => `Agent loop exceeded ${maxIterations} iterations`;

const label = (agent: PromptyAgent) => (agent.path ? `${agent.name} (${agent.path})` : agent.name);

async function resolveAgent(pathOrAgent: string | PromptyAgent, options: InvokeAgentOptions): Promise<PromptyAgent> {
  if (typeof pathOrAgent === "string") return loadPrompty(pathOrAgent, { env: options.env });
  if (!pathOrAgent || typeof pathOrAgent.template !== "string") {
    throw new TypeError("invokeAgent: pass a .prompty file path or a loaded prompty (loadPrompty)");
  }
  return pathOrAgent;
}

/** The model for a prompty file: the option, `DEBUG_MOCK_RESPONSES`, or its `model` section. */
export async function resolvePromptyModel(agent: PromptyAgent, options: InvokeAgentOptions = {}): Promise<Model> {
  if (typeof options.model === "function") return options.model(agent);
  if (options.model) return options.model;
  const scripted = scriptedModelFromEnv(options.env ?? process.env);
  if (scripted) return scripted;
  const { id, provider, apiType, connection = {} } = agent.model;
  if (!id) {
    throw new AgentLoopError("configuration", `Prompty ${label(agent)} has no model.id: add one, pass options.model, or set DEBUG_MOCK_RESPONSES`, {
      retryable: false,
    });
  }
  const text = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);
  const baseURL = text(connection.endpoint) ?? text(connection.baseURL) ?? text(connection.baseUrl) ?? text(connection.url);
  let providerName = provider;
  if (provider === "openai" && apiType === "responses") providerName = "openai-responses";
  else if (provider && !["openai", "anthropic", "openai-compatible", "openai-chat", "openai-responses"].includes(provider) && baseURL) {
    providerName = "openai-compatible"; // foundry, azure, ollama...: an OpenAI-compatible endpoint
  }
  const { resolveModel } = await import("../providers/index.js");
  const stream = options.stream ?? agent.stream;
  return resolveModel(
    { provider: providerName, model: id, baseURL, apiKey: text(connection.apiKey) ?? text(connection.key), ...(stream === false ? { stream: false } : {}) },
    options.env ?? process.env,
  );
}

/** The file's `model.options` as request options. */
export function modelOptionsOf(agent: PromptyAgent): ModelOptions | undefined {
  const options = agent.model.options;
  if (!options) return undefined;
  const number = (...keys: string[]) => {
    for (const key of keys) if (typeof options[key] === "number") return options[key] as number;
    return undefined;
  };
  const result: ModelOptions = {};
  const temperature = number("temperature");
  const topP = number("topP", "top_p");
  const maxOutputTokens = number("maxOutputTokens", "maxTokens", "max_tokens", "max_completion_tokens");
  const seed = number("seed");
  const stop = options.stopSequences ?? options.stop;
  if (temperature !== undefined) result.temperature = temperature;
  if (topP !== undefined) result.topP = topP;
  if (maxOutputTokens !== undefined) result.maxOutputTokens = maxOutputTokens;
  if (seed !== undefined) result.seed = seed;
  if (typeof stop === "string") result.stopSequences = [stop];
  else if (Array.isArray(stop)) result.stopSequences = stop.filter((item): item is string => typeof item === "string");
  return Object.keys(result).length ? result : undefined;
}

/** System blocks become the instructions, the last user block the input, the rest history. */
function splitConversation(agent: PromptyAgent, messages: Message[]): { instructions?: string; history: Message[]; input: string } {
  const system = messages.filter((message) => message.role === "system").map((message) => textOf(message));
  const conversation = messages.filter((message) => message.role !== "system");
  const last = conversation.at(-1);
  if (last?.role !== "user") {
    throw new AgentLoopError("configuration", `Prompty ${label(agent)} must end with a user: block (the input of the run)`, { retryable: false });
  }
  return { instructions: system.length ? system.join("\n\n") : undefined, history: conversation.slice(0, -1), input: textOf(last!) };
}

interface BuildState {
  agent: PromptyAgent;
  inputs: Record<string, unknown>;
  options: InvokeAgentOptions;
  nameHandlers: Record<string, PromptyToolHandler>;
  /** Opened for this run (MCP connections); closed when it ends. */
  cleanups: Array<() => Promise<void>>;
}

/** Two-layer dispatch for a declared tool: a name handler wins, then a kind handler, else an error. */
function dispatchingTool(spec: PromptyToolSpec, state: BuildState, builtIn?: (args: Record<string, unknown>, call: PromptyKindCall) => Promise<ToolOutput>): Tool<any> {
  return {
    name: spec.name,
    description: spec.description ?? `Tool ${spec.name}`,
    parameters: propertiesSchema(spec.parameters),
    bindings: Object.keys(spec.bindings).length ? spec.bindings : undefined,
    kind: spec.kind,
    action: spec.kind === "prompty" ? "delegate" : "tool_call",
    async execute(args: Record<string, unknown>, context: ToolContext) {
      try {
        const byName = state.nameHandlers[spec.name] ?? getTool(spec.name);
        if (byName) return await byName(args, context);
        const call: PromptyKindCall = { agent: state.agent, inputs: state.inputs, context };
        const byKind = getToolHandler(spec.kind);
        if (byKind) return await byKind(spec, args, call);
        if (builtIn) return await builtIn(args, call);
        throw new AgentLoopError("configuration", `No handler registered for tool: ${spec.name} (kind: ${spec.kind})`, { retryable: false });
      } catch (error) {
        return toolFailure(spec.name, error);
      }
    },
  };
}

/** A `prompty` tool: the child file (relative to the parent) run in `single` or `agentic` mode. */
async function promptyTool(spec: PromptyToolSpec, state: BuildState): Promise<Tool<any>> {
  const base = state.agent.path ? dirname(state.agent.path) : process.cwd();
  const child = await loadPrompty(resolve(base, spec.path!), { env: state.options.env });
  const tool = dispatchingTool(spec, state, (args, call) => runChild(child, spec.mode ?? "single", args, call.context, state));
  // The model fills in the child's inputs (bound ones hidden by the loop).
  tool.parameters = propertiesSchema(spec.parameters.length ? spec.parameters : child.inputs);
  tool.description = spec.description ?? child.description ?? `Run the prompty "${child.name}".`;
  return tool;
}

async function runChild(
  child: PromptyAgent,
  mode: "single" | "agentic",
  args: Record<string, unknown>,
  context: ToolContext,
  state: BuildState,
): Promise<ToolResultValue | string> {
  const path = delegationPath(context);
  const refusal = delegationRefusal(child.name, context, path, DEFAULT_MAX_DELEGATION_DEPTH);
  if (refusal) return errorResult(refusal);
  const { onEvent: _loopListener, ...runOptions } = childRunOptions(context, path);
  const inherited: InvokeAgentOptions = {
    model: state.options.model,
    env: state.options.env,
    instrumentation: state.options.instrumentation,
    ...runOptions,
    parentToolCallId: context.toolCallId,
  };
  if (mode === "single") return runPrompty(child, args, inherited).catch((error) => errorResult(AgentLoopError.from(error).message));
  const { run } = await startAgent(child, args, state.nameHandlers, inherited);
  for await (const event of run as AsyncIterable<LoopEvent>) context.nested(child.name, event);
  const result = await run;
  if (result.state === "COMPLETED") return result.text;
  return errorResult(failureMessage(child, result, maxIterationsOf(child, inherited)));
}

/** An `mcp` tool without a handler: connects to the server (agentloop/mcp) and exposes its tools. */
async function mcpTools(spec: PromptyToolSpec, state: BuildState): Promise<Tool<any>[]> {
  const connection = (spec.raw.connection ?? {}) as Record<string, unknown>;
  const url = connection.endpoint ?? connection.url;
  const serverName = typeof spec.raw.serverName === "string" && spec.raw.serverName ? spec.raw.serverName : spec.name;
  const common = {
    name: serverName,
    allowedTools: Array.isArray(spec.raw.allowedTools) ? (spec.raw.allowedTools as string[]) : undefined,
    naming: { prefix: spec.name },
  };
  const transport =
    typeof url === "string"
      ? { url, headers: connection.headers as Record<string, string> | undefined }
      : typeof connection.command === "string"
        ? { command: connection.command, args: connection.args as string[] | undefined, env: connection.env as Record<string, string> | undefined }
        : undefined;
  if (!transport) {
    throw new AgentLoopError("configuration", `mcp tool "${spec.name}" in ${label(state.agent)} needs connection.endpoint (a URL) or connection.command`, {
      retryable: false,
    });
  }
  const { connectMcp } = await import("../mcp/index.js");
  const toolset = await connectMcp({ ...common, ...transport });
  state.cleanups.push(() => toolset.close());
  return [...(await toolset.tools())];
}

async function buildTools(state: BuildState, runtime: PromptyRuntimeTools | undefined): Promise<Tool<any>[]> {
  const extra = Array.isArray(runtime) ? runtime : [];
  const replaced = new Set(extra.map((tool) => tool.name));
  const tools: Tool<any>[] = [];
  for (const spec of state.agent.tools) {
    if (replaced.has(spec.name)) continue;
    const handled = state.nameHandlers[spec.name] ?? getTool(spec.name) ?? getToolHandler(spec.kind);
    if (spec.kind === "prompty") tools.push(await promptyTool(spec, state));
    else if (spec.kind === "mcp" && !handled) tools.push(...(await mcpTools(spec, state)));
    else tools.push(dispatchingTool(spec, state));
  }
  return [...tools, ...extra.map(failuresAsResults)];
}

/** The file's `outputs` as the schema of the final answer: an object with exactly those properties (§7.7). */
function outputsSchema(agent: PromptyAgent): JsonSchema {
  const schema = propertiesSchema((agent.outputs ?? []).map((property) => ({ ...property, default: undefined })));
  return { ...schema, required: Object.keys(schema.properties as object), additionalProperties: false };
}

function maxIterationsOf(agent: PromptyAgent, options: InvokeAgentOptions): number {
  return options.maxIterations ?? agent.maxIterations ?? DEFAULT_MAX_ITERATIONS;
}

function failureMessage(agent: PromptyAgent, result: RunResult, maxIterations: number): string {
  if (result.state === "TURN_LIMIT" || result.state === "ROUND_LIMIT") return iterationsExceeded(maxIterations);
  if (result.error?.kind === "refusal") return `Model refused: ${result.error.message}`;
  return `Prompty ${agent.name} ended with state ${result.state}: ${result.reason}`;
}

/** A started prompty run. (Wrapped: a `Run` is thenable, so a promise cannot resolve to it directly.) */
export interface StartedPrompty {
  run: Run;
  prompty: PromptyAgent;
}

/**
 * Loads (if given a path), prepares and starts a prompty as an agent run, for streaming:
 * `const { run } = await startAgent(...)`, then `for await (const event of run)`,
 * `run.textStream()`, `await run`. The declared tools are built first (prompty children
 * loaded, MCP servers connected; closed when the run ends).
 */
export async function startAgent(
  pathOrAgent: string | PromptyAgent,
  inputs: Record<string, unknown> = {},
  tools?: PromptyRuntimeTools,
  options: InvokeAgentOptions = {},
): Promise<StartedPrompty> {
  const agent = await resolveAgent(pathOrAgent, options);
  const prepared = prepare(agent, inputs);
  const { instructions, history, input } = splitConversation(agent, prepared.messages);
  const nameHandlers = tools && !Array.isArray(tools) ? tools : {};
  const state: BuildState = { agent, inputs: prepared.inputs, options, nameHandlers, cleanups: [] };
  const closeAll = () => Promise.all(state.cleanups.map((cleanup) => cleanup().catch(() => undefined)));
  try {
    const model = await resolvePromptyModel(agent, options);
    const streaming = options.stream ?? agent.stream ?? true;
    const contextBudget = options.contextBudget ?? agent.contextBudget;
    const loopAgent = new Agent({
      ...(options.guardrails !== undefined ? { guardrails: options.guardrails } : {}),
      ...(contextBudget !== undefined ? { context: promptyContextBudget(contextBudget) } : {}),
      ...(agent.outputs?.length ? { output: outputsSchema(agent) } : {}),
      // §13.6: tool calls one after another unless parallel execution is asked for.
      ...(options.parallelToolCalls ? {} : { concurrency: 1 }),
      ...options.agentConfig,
      ...controlOfFrontmatter(agent, { ...options.agentConfig, guardrails: options.agentConfig?.guardrails ?? options.guardrails }),
      name: agent.name,
      description: agent.description,
      instructions,
      model,
      tools: await buildTools(state, tools),
      maxTurns: maxIterationsOf(agent, options),
      modelOptions: options.agentConfig?.modelOptions ?? modelOptionsOf(agent),
      observers: options.observers ?? options.agentConfig?.observers,
      memory: options.memory ?? options.agentConfig?.memory,
      instrumentation: options.instrumentation ?? options.agentConfig?.instrumentation,
    });
    let started: Run | undefined;
    const bridge = promptyEventBridge(options.onEvent, {
      streaming,
      isKnownTool(name) {
        try {
          return loopAgent.currentTools().some((tool) => tool.name === name);
        } catch {
          return true; // a toolset conflict: the loop reports it itself
        }
      },
      onUnknownTool(name) {
        // §12.4: a configuration error, raised (not a tool result): the run stops here.
        if (!started) return;
        notRegistered.set(started, name);
        started.abort(`Tool not registered: ${name}`);
      },
    });
    const run = loopAgent.run(input, {
      onEvent: bridge,
      history,
      inputs: prepared.inputs,
      signal: options.signal,
      sessionId: options.sessionId,
      services: options.services,
      depth: options.depth,
      agentPath: options.agentPath,
      parentRunId: options.parentRunId,
    });
    started = run;
    options.steering?.attach(run);
    if (state.cleanups.length) void run.result.finally(closeAll);
    return { run, prompty: agent };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/**
 * Runs a `.prompty` file (or a loaded prompty) as an agent loop and returns the run's result.
 * `tools` adds core tools or name handlers for declared tools. Throws an `AgentLoopError` for a
 * missing file (naming the path), a missing required input (naming it), a bad frontmatter, and a
 * `PromptyRunError` when the run does not complete: `Agent loop exceeded 10 iterations` when
 * it used up `maxIterations` model calls.
 */
export async function invokeAgent(
  pathOrAgent: string | PromptyAgent,
  inputs: Record<string, unknown> = {},
  tools?: PromptyRuntimeTools,
  options: InvokeAgentOptions = {},
): Promise<RunResult> {
  const agent = await resolveAgent(pathOrAgent, options);
  const { run } = await startAgent(agent, inputs, tools, options);
  const outcome = await run;
  const unregistered = notRegistered.get(run);
  if (unregistered !== undefined) throw new PromptyRunError(`Tool not registered: ${unregistered}`, outcome, "configuration");
  if (outcome.state !== "COMPLETED") {
    throw new PromptyRunError(failureMessage(agent, outcome, maxIterationsOf(agent, options)), outcome, outcome.state === "ABORTED" ? "aborted" : undefined);
  }
  return outcome;
}

/**
 * One model call with the prompt's messages and no tools (a prompty tool's `single` mode),
 * traced as a model call when `options.instrumentation` is given. Returns the answer text;
 * throws an `AgentLoopError` when the model fails.
 */
export async function runPrompty(pathOrAgent: string | PromptyAgent, inputs: Record<string, unknown> = {}, options: InvokeAgentOptions = {}): Promise<string> {
  const agent = await resolveAgent(pathOrAgent, options);
  const { messages } = prepare(agent, inputs);
  const response = await singleModelCall({
    model: await resolvePromptyModel(agent, options),
    messages,
    options: modelOptionsOf(agent),
    signal: options.signal,
    agentName: agent.name,
    instrumentation: options.instrumentation,
    depth: options.depth,
    parentRunId: options.parentRunId,
    parentToolCallId: options.parentToolCallId,
  });
  if (response.error) throw response.error;
  return textOf(response.message);
}
