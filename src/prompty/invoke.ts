import { singleModelCall } from "../agents/single-call.js";
import { AgentLoopError, type ErrorKind } from "../errors.js";
import { Agent } from "../loop/agent.js";
import type { ApprovalDecision, RunCheckpoint } from "../loop/checkpoint.js";
import type { RunResult } from "../loop/events.js";
import type { Run } from "../loop/run.js";
import type { Guardrails } from "../loop/guardrails.js";
import type { AgentConfig, Instrumentation, RunObserver, SessionMemory } from "../loop/types.js";
import { type Message, textOf } from "../messages.js";
import type { JsonSchema, Model, ModelOptions } from "../model/model.js";
import { withFallback } from "../model/fallback.js";
import { scriptedModelFromEnv } from "../model/scripted.js";
import type { Tool } from "../tools/tool.js";
import { promptyContextBudget } from "./context.js";
import { type PromptyEventHandler, promptyEventBridge } from "./events.js";
import { controlOfFrontmatter } from "./control.js";
import { loadPrompty } from "./loader.js";
import type { PromptyToolHandler } from "./registry.js";
import { prepare, propertiesSchema } from "./template.js";
import { type BuildState, buildTools } from "./tools.js";
import type { PromptyAgent } from "./types.js";

/** Rounds of tool calls per invocation unless the file or the options say otherwise. */
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
  /** Rounds of tool calls allowed (default: the file's `maxIterations`, else 10); one more model call may answer. */
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

/** The message a run that used up its iterations reports. */
export const iterationsExceeded = (maxIterations: number) => `Agent loop exceeded ${maxIterations} iterations`;

export const label = (agent: PromptyAgent) => (agent.path ? `${agent.name} (${agent.path})` : agent.name);

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
  else if (provider && !["openai", "anthropic", "google", "openai-compatible", "openai-chat", "openai-responses"].includes(provider) && baseURL) {
    providerName = "openai-compatible"; // foundry, azure, ollama...: an OpenAI-compatible endpoint
  }
  const { resolveModel } = await import("../providers/index.js");
  const stream = options.stream ?? agent.stream;
  const env = options.env ?? process.env;
  const primary = await resolveModel(
    { provider: providerName, model: id, baseURL, apiKey: text(connection.apiKey) ?? text(connection.key), ...(stream === false ? { stream: false } : {}) },
    env,
  );
  if (!agent.model.fallback?.length) return primary;
  const fallbacks = await Promise.all(agent.model.fallback.map((spec) => resolveModel(spec, env)));
  return withFallback([primary, ...fallbacks]);
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

/**
 * A first system block becomes the instructions, the last user block the input, everything between
 * the history: further system blocks too, each its own message where it stands (as the vectors keep them).
 */
function splitConversation(agent: PromptyAgent, messages: Message[]): { instructions?: string; history: Message[]; input: string } {
  const last = messages.at(-1);
  if (last?.role !== "user") {
    throw new AgentLoopError("configuration", `Prompty ${label(agent)} must end with a user: block (the input of the run)`, { retryable: false });
  }
  const leading = messages.length > 1 && messages[0]!.role === "system" ? 1 : 0;
  return { instructions: leading ? textOf(messages[0]!) : undefined, history: messages.slice(leading, -1), input: textOf(last) };
}

/** The file's `outputs` as the schema of the final answer: an object with exactly those properties (§7.7). */
function outputsSchema(agent: PromptyAgent): JsonSchema {
  const schema = propertiesSchema((agent.outputs ?? []).map((property) => ({ ...property, default: undefined })));
  return { ...schema, required: Object.keys(schema.properties as object), additionalProperties: false };
}

export function maxIterationsOf(agent: PromptyAgent, options: InvokeAgentOptions): number {
  return options.maxIterations ?? agent.maxIterations ?? DEFAULT_MAX_ITERATIONS;
}

export function failureMessage(agent: PromptyAgent, result: RunResult, maxIterations: number): string {
  if (result.state === "TURN_LIMIT" || result.state === "ROUND_LIMIT") return iterationsExceeded(maxIterations);
  if (result.state === "GUARDRAIL") {
    // "input guardrail: <reason>" → "Input guardrail denied: <reason>" (§13.4's error event text).
    const [where = "", ...why] = result.reason.split(": ");
    return `${where.charAt(0).toUpperCase()}${where.slice(1)} denied: ${why.join(": ")}`;
  }
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
  return launch(await resolveAgent(pathOrAgent, options), inputs, tools, options);
}

/**
 * The prompty as an `Agent` (its tools built: prompty children loaded, MCP servers connected;
 * closed when the run ends), then `start` runs it: a new run, or a resume of its checkpoint.
 */
async function launch(
  agent: PromptyAgent,
  inputs: Record<string, unknown>,
  tools: PromptyRuntimeTools | undefined,
  options: InvokeAgentOptions,
  resume?: { checkpoint: RunCheckpoint; decisions: Record<string, ApprovalDecision> },
): Promise<StartedPrompty> {
  const prepared = prepare(agent, inputs);
  const { instructions, history, input } = splitConversation(agent, prepared.messages);
  const nameHandlers = tools && !Array.isArray(tools) ? tools : {};
  let loopAgent: Agent | undefined;
  let started: Run | undefined;
  const bridge = promptyEventBridge(options.onEvent, {
    streaming: options.stream ?? agent.stream ?? true,
    isKnownTool(name) {
      try {
        return loopAgent?.currentTools().some((tool) => tool.name === name) ?? true;
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
  const state: BuildState = { agent, inputs: prepared.inputs, options, nameHandlers, events: bridge, cleanups: [] };
  const closeAll = () => Promise.all(state.cleanups.map((cleanup) => cleanup().catch(() => undefined)));
  try {
    const model = await resolvePromptyModel(agent, options);
    const contextBudget = options.contextBudget ?? agent.contextBudget;
    const maxIterations = maxIterationsOf(agent, options);
    loopAgent = new Agent({
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
      // As the vectors count: N rounds of tools; a model call after them that asks for more raises
      // `Agent loop exceeded N iterations` without running them (N + 1 model calls at most).
      maxTurns: maxIterations + 1,
      maxToolRounds: options.agentConfig?.maxToolRounds ?? maxIterations,
      modelOptions: options.agentConfig?.modelOptions ?? modelOptionsOf(agent),
      observers: options.observers ?? options.agentConfig?.observers,
      memory: options.memory ?? options.agentConfig?.memory,
      instrumentation: options.instrumentation ?? options.agentConfig?.instrumentation,
    });
    const common = {
      onEvent: bridge.onEvent,
      signal: options.signal,
      sessionId: options.sessionId,
      services: options.services,
      depth: options.depth,
      agentPath: options.agentPath,
      parentRunId: options.parentRunId,
    };
    // A resume is the same loop going on from the checkpoint (its conversation and inputs are in it).
    const run = resume ? loopAgent.resume(resume.checkpoint, { ...common, decisions: resume.decisions }) : loopAgent.run(input, { ...common, history, inputs: prepared.inputs });
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
 * Goes on with a prompty run that stopped for approvals (`approvals.mode: interrupt` in the
 * frontmatter, or `agentConfig.onApproval`): `invokeAgent` returned it INTERRUPTED with a
 * checkpoint naming the file (`checkpoint.source.prompty`). The file is loaded again (or pass the
 * loaded prompty as `options.prompty`), its tools built again, and the loop resumes at the stopped
 * wave with the decisions (the same rules as `agent.resume`). Resolves like `invokeAgent`.
 */
export async function resumeAgent(
  checkpoint: RunCheckpoint,
  decisions: Record<string, ApprovalDecision>,
  tools?: PromptyRuntimeTools,
  options: InvokeAgentOptions & { prompty?: PromptyAgent } = {},
): Promise<RunResult> {
  const file = checkpoint?.source?.prompty;
  if (!options.prompty && typeof file !== "string") {
    throw new AgentLoopError("invalid_request", "resumeAgent: the checkpoint names no .prompty file (checkpoint.source.prompty); pass the loaded prompty as options.prompty", { retryable: false });
  }
  const agent = options.prompty ?? (await resolveAgent(file as string, options));
  const { run } = await launch(agent, checkpoint.inputs ?? {}, tools, options, { checkpoint, decisions });
  return settle(agent, run, options);
}

/** A started prompty's result: returned when it completed or stopped for approvals (its checkpoint naming the file), else thrown. */
async function settle(agent: PromptyAgent, run: Run, options: InvokeAgentOptions): Promise<RunResult> {
  const outcome = await run;
  const unregistered = notRegistered.get(run);
  if (unregistered !== undefined) throw new PromptyRunError(`Tool not registered: ${unregistered}`, outcome, "configuration");
  if (outcome.state === "INTERRUPTED" && outcome.checkpoint) {
    if (agent.path) outcome.checkpoint.source = { prompty: agent.path };
    return outcome;
  }
  if (outcome.state !== "COMPLETED") {
    throw new PromptyRunError(failureMessage(agent, outcome, maxIterationsOf(agent, options)), outcome, outcome.state === "ABORTED" ? "aborted" : undefined);
  }
  return outcome;
}

/**
 * Runs a `.prompty` file (or a loaded prompty) as an agent loop and returns the run's result.
 * `tools` adds core tools or name handlers for declared tools. Throws an `AgentLoopError` for a
 * missing file (naming the path), a missing required input (naming it), a bad frontmatter, and a
 * `PromptyRunError` when the run does not complete: `Agent loop exceeded 10 iterations` when
 * the model asked for tools again after `maxIterations` rounds of them.
 */
export async function invokeAgent(
  pathOrAgent: string | PromptyAgent,
  inputs: Record<string, unknown> = {},
  tools?: PromptyRuntimeTools,
  options: InvokeAgentOptions = {},
): Promise<RunResult> {
  const agent = await resolveAgent(pathOrAgent, options);
  const { run } = await launch(agent, inputs, tools, options);
  return settle(agent, run, options);
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
