/**
 * Durable runs on PostgreSQL with DBOS Transact (`@dbos-inc/dbos-sdk`, loaded only by this subpath).
 *
 * A durable run is the agent's own loop, unchanged, run as a DBOS workflow. What makes it durable is
 * the two calls the loop makes to the outside world: `Model.stream` and `Tool.execute`. The durable
 * agent hands the loop a model and tools whose calls are DBOS steps, so each model response and each
 * tool result is checkpointed in PostgreSQL. When a process dies, DBOS recovers its pending workflows
 * (at the next launch with the same executor id): the loop runs again from the
 * start, the recorded steps return their recorded results (their events reach observers exactly as
 * live ones did) and the run goes on from the first step that had not finished.
 *
 * A tool call that was running when the process died is run again only when its tool says it is
 * idempotent (`defineTool({ idempotent: true })`); otherwise its result is {@link INTERRUPTED} and the
 * loop goes on. Every call's `context.idempotencyKey` is `<runId>:<toolCallId>`, the same after a
 * recovery.
 */
import { DBOS } from "@dbos-inc/dbos-sdk";
import { AgentLoopError } from "../errors.js";
import type { RunResult } from "../loop/events.js";
import { Agent } from "../loop/agent.js";
import type { ApprovalDecision } from "../loop/checkpoint.js";
import type { RunOptions, SessionMemory, Toolset } from "../loop/types.js";
import type { Model, ModelEvent, ModelRequest } from "../model/model.js";
import type { Tool, ToolContext, ToolOutput } from "../tools/tool.js";

/** The result of a tool call that was running when the process died and is not idempotent. */
export const INTERRUPTED = "Interrupted: the process stopped while this tool ran; it was not retried";

const APPROVALS_TOPIC = "agentloop.approvals";
/** How long a durable run waits for approvals without `approvalTimeoutMs`: 7 days. */
const DEFAULT_APPROVAL_TIMEOUT_MS = 7 * 24 * 3600 * 1000;

export interface DurableOptions {
  /** PostgreSQL URL of the database DBOS keeps its checkpoints in (its tables go in `schema`). */
  databaseUrl: string;
  /**
   * This process's executor id (default `local`, or `DBOS__VMID`). A process that restarts with the
   * same id recovers the runs the previous one left unfinished (as a Kubernetes StatefulSet's pods do).
   */
  executorId?: string;
  /** The PostgreSQL schema of DBOS's tables (default `dbos`). */
  schema?: string;
  /** The DBOS application name (default `agentloop`): runs are recovered only by the same name. */
  appName?: string;
  /** The application version recovery matches (default: DBOS's hash of the registered workflows). */
  appVersion?: string;
  /** DBOS's own log level (default `warn`). */
  logLevel?: "debug" | "info" | "warn" | "error";
}

export interface DurableRunOptions extends Pick<RunOptions, "sessionId" | "inputs" | "newSession" | "onEvent"> {
  /** The run's id, used as the DBOS workflow id: starting a run with an id already used returns that run. */
  runId?: string;
}

/** What a durable run returns: the run's result as stored by DBOS (JSON: the error is its message). */
export type DurableRunResult = Omit<RunResult, "error" | "messages"> & { error?: { kind: string; message: string } };

export interface DurableRun {
  readonly runId: string;
  /** Resolves when the run ends (here or, after a crash, in the process that recovered it). */
  result(): Promise<DurableRunResult>;
}

export interface DurableAgent {
  /** The agent whose loop the runs use, its model and tools made durable. */
  readonly agent: Agent;
  /** Connects DBOS (creating its schema if needed) and recovers this executor's unfinished runs. */
  launch(): Promise<void>;
  /** Starts a durable run. Live events go to `options.onEvent` and to the agent's observers and memory. */
  run(input: string, options?: DurableRunOptions): Promise<DurableRun>;
  /**
   * Decides the calls a run waits on (its `approval-request` events), from any process connected to
   * the same database: the run resumes where it runs (or, after a crash, where it is recovered).
   * Calls of the wave left undecided are rejected.
   */
  decide(runId: string, decisions: Record<string, ApprovalDecision>): Promise<void>;
  /** A run by id (started here or elsewhere). */
  retrieve(runId: string): DurableRun;
  /** Stops DBOS in this process (unfinished runs stay recoverable). */
  shutdown(): Promise<void>;
}

interface StoredOptions {
  sessionId?: string;
  inputs?: Record<string, unknown>;
  newSession?: boolean;
}

/** Live listeners of the runs started by this process (a function cannot be a workflow input). */
const listeners = new Map<string, (event: import("../loop/events.js").LoopEvent) => void>();
let launched: { url: string; promise: Promise<void> } | undefined;

/**
 * Makes an agent's runs durable: each run is a DBOS workflow whose steps are the model calls and tool
 * calls of the agent's loop. Create durable agents before the first `launch()` (DBOS registers
 * workflows before it starts); one database per process.
 */
export function durableAgent(agent: Agent, options: DurableOptions): DurableAgent {
  if (!(agent instanceof Agent)) throw new TypeError("durableAgent: the first argument must be an Agent");
  if (!options || typeof options.databaseUrl !== "string" || !/^postgres(ql)?:\/\//.test(options.databaseUrl)) {
    throw new TypeError(`durableAgent: databaseUrl must be a postgres:// URL, got ${JSON.stringify(options?.databaseUrl)}`);
  }
  const config = agent.config;
  const inner = new Agent({
    ...config,
    model: durableModel(agent.model),
    tools: (config.tools ?? []).map((source) => (isToolset(source) ? durableToolset(source) : durableTool(source))),
    memory: config.memory ? durableMemory(config.memory) : undefined,
  });
  const workflow = DBOS.registerWorkflow(
    async (input: string, stored: StoredOptions): Promise<DurableRunResult> => {
      const runId = DBOS.workflowID!;
      const onEvent = listeners.get(runId);
      // Approvals stop the loop with a checkpoint; the workflow waits for the decisions as a DBOS
      // message (recorded: a recovered run does not wait again for what was decided), then resumes.
      let result = await inner.run(input, { ...stored, runId, onEvent, onApproval: "interrupt" });
      const timeoutSeconds = Math.ceil((config.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS) / 1000);
      while (result.state === "INTERRUPTED" && result.checkpoint) {
        const pending = result.checkpoint.pending;
        const decided = await DBOS.recv<Record<string, ApprovalDecision>>(APPROVALS_TOPIC, timeoutSeconds);
        const decisions: Record<string, ApprovalDecision> = {};
        for (const call of pending) decisions[call.toolCallId] = decided?.[call.toolCallId] ?? { approve: false, reason: "no decision in time" };
        result = await inner.resume(result.checkpoint, { decisions, runId, onEvent, sessionId: stored.sessionId, onApproval: "interrupt" });
      }
      return storedResult(result);
    },
    { name: `agentloop.run.${agent.name}` },
  );
  const handleOf = (runId: string): DurableRun => ({
    runId,
    result: () => DBOS.retrieveWorkflow<DurableRunResult>(runId).getResult() as Promise<DurableRunResult>,
  });
  return {
    agent: inner,
    async launch() {
      if (launched) {
        if (launched.url !== options.databaseUrl) throw new Error("durableAgent: DBOS is already launched in this process with another database");
        return launched.promise;
      }
      DBOS.setConfig({
        name: options.appName ?? "agentloop",
        systemDatabaseUrl: options.databaseUrl,
        systemDatabaseSchemaName: options.schema,
        executorID: options.executorId,
        applicationVersion: options.appVersion,
        logLevel: options.logLevel ?? "warn",
      });
      const promise = DBOS.launch();
      launched = { url: options.databaseUrl, promise };
      try {
        await promise;
      } catch (error) {
        launched = undefined;
        throw error;
      }
    },
    async run(input, runOptions = {}) {
      if (typeof input !== "string") throw new TypeError("durable run: the input must be a string");
      if (!launched) throw new Error("durable run: call launch() first");
      const stored: StoredOptions = { sessionId: runOptions.sessionId, inputs: runOptions.inputs, newSession: runOptions.newSession };
      const runId = runOptions.runId ?? `run_${crypto.randomUUID()}`;
      if (runOptions.onEvent) listeners.set(runId, runOptions.onEvent);
      let handle: Awaited<ReturnType<ReturnType<typeof DBOS.startWorkflow<[string, StoredOptions], DurableRunResult>>>>;
      try {
        handle = await DBOS.startWorkflow(workflow, { workflowID: runId })(input, stored);
      } catch (error) {
        listeners.delete(runId);
        throw error;
      }
      // Started here: the result comes from the running workflow, without polling the database.
      const result = handle.getResult().finally(() => listeners.delete(runId));
      result.catch(() => undefined);
      return { runId, result: () => result };
    },
    retrieve: handleOf,
    async decide(runId, decisions) {
      if (!launched) throw new Error("durable decide: call launch() first");
      if (typeof decisions !== "object" || decisions === null) throw new TypeError("durable decide: decisions must be an object keyed by tool call id");
      await DBOS.send(runId, decisions, APPROVALS_TOPIC);
    },
    async shutdown() {
      if (!launched) return;
      launched = undefined;
      await DBOS.shutdown();
    },
  };
}

function storedResult(result: RunResult): DurableRunResult {
  const { error, messages: _messages, ...rest } = result;
  const plain = JSON.parse(JSON.stringify(rest)) as DurableRunResult;
  if (error) plain.error = { kind: error.kind, message: error.message };
  return plain;
}

// ---- the model: each call one step, its events recorded ----

type StoredEvent = ModelEvent | { type: "error"; error: { kind: string; message: string; status?: number; provider?: string } };

/** A model whose `stream` is a DBOS step inside a workflow (and the model itself outside one). */
export function durableModel(model: Model): Model & { durable: true } {
  return {
    provider: model.provider,
    modelId: model.modelId,
    durable: true,
    stream: (request) => (DBOS.isWithinWorkflow() ? recordedStream(model, request) : model.stream(request)),
    ...(model.forRun ? { forRun: (run?: Parameters<NonNullable<Model["forRun"]>>[0]) => durableModel(model.forRun!(run)) } : {}),
  } as Model & { durable: true };
}

/**
 * One model call as a step: live, its events are passed on as they arrive and recorded when the
 * stream ends; replayed, the recorded events are passed on. A step never throws (a throwing stream
 * is recorded as an error event, as the loop would treat it).
 */
async function* recordedStream(model: Model, request: ModelRequest): AsyncGenerator<ModelEvent> {
  const channel = new Channel<ModelEvent>();
  let live = false;
  const step = DBOS.runStep(
    async () => {
      live = true;
      const events: StoredEvent[] = [];
      try {
        for await (const event of model.stream(request)) {
          channel.push(event);
          events.push(storeEvent(event));
          if (event.type === "finish" || event.type === "error") break;
        }
      } catch (error) {
        const wrapped = AgentLoopError.from(error);
        channel.push({ type: "error", error: wrapped });
        events.push(storeEvent({ type: "error", error: wrapped }));
      }
      return events;
    },
    { name: "model" },
  );
  step.then(
    (events) => {
      if (!live) for (const event of events) channel.push(restoreEvent(event));
      channel.end();
    },
    (error: unknown) => channel.fail(error),
  );
  yield* channel;
}

function storeEvent(event: ModelEvent): StoredEvent {
  if (event.type !== "error") return event;
  const { kind, message, status, provider } = event.error;
  return { type: "error", error: { kind, message, status, provider } };
}

function restoreEvent(event: StoredEvent): ModelEvent {
  if (event.type !== "error") return event as ModelEvent;
  const { kind, message, status, provider } = event.error as { kind: string; message: string; status?: number; provider?: string };
  return { type: "error", error: new AgentLoopError(kind as AgentLoopError["kind"], message, { status, provider }) };
}

/** A one-consumer queue: pushed values come out in order through `for await`. */
class Channel<T> implements AsyncIterable<T> {
  private readonly values: T[] = [];
  private done = false;
  private error: unknown;
  private failed = false;
  private wake?: () => void;

  push(value: T): void {
    this.values.push(value);
    this.wake?.();
  }
  end(): void {
    this.done = true;
    this.wake?.();
  }
  fail(error: unknown): void {
    this.failed = true;
    this.error = error;
    this.end();
  }
  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      if (this.values.length) {
        yield this.values.shift()!;
        continue;
      }
      if (this.failed) throw this.error;
      if (this.done) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
  }
}

// ---- tools: each call two steps, "started" then its result ----

type StoredCall = { output: unknown } | { threw: string; name: string } | { interrupted: true };

/** A tool whose `execute` is checkpointed inside a workflow (and the tool itself outside one). */
export function durableTool<Args>(tool: Tool<Args>): Tool<Args> {
  const wrapped = Object.create(tool) as Tool<Args>;
  wrapped.execute = (args, context) => (DBOS.isWithinWorkflow() ? recordedCall(tool, args, context) : tool.execute(args, context));
  return wrapped;
}

/**
 * Two steps per call, their ids taken together (DBOS numbers steps as they are called, so concurrent
 * calls of a wave keep their order on replay): `started` is recorded before the tool runs; if it was
 * already recorded and the result was not, the call was in flight when the process died.
 */
async function recordedCall<Args>(tool: Tool<Args>, args: Args, context: ToolContext): Promise<ToolOutput> {
  let fresh = false;
  const started = DBOS.runStep(
    async () => {
      fresh = true;
      return context.idempotencyKey;
    },
    { name: `tool-started:${tool.name}` },
  );
  const result = DBOS.runStep(
    async (): Promise<StoredCall> => {
      await started;
      if (!fresh && tool.idempotent !== true) return { interrupted: true };
      try {
        const output = await tool.execute(args, context);
        return { output: output === undefined ? null : JSON.parse(JSON.stringify(output) ?? "null") };
      } catch (error) {
        return { threw: error instanceof Error ? error.message : String(error), name: error instanceof Error ? error.name : "Error" };
      }
    },
    { name: `tool:${tool.name}` },
  );
  started.catch(() => undefined);
  const stored = await result;
  if ("interrupted" in stored) return { content: INTERRUPTED, isError: true };
  if ("threw" in stored) {
    const error = new Error(stored.threw);
    error.name = stored.name;
    throw error;
  }
  return stored.output;
}

function durableToolset(toolset: Toolset): Toolset {
  let version = Number.NaN;
  let tools: readonly Tool<any>[] = [];
  return {
    name: toolset.name,
    get toolsVersion() {
      return toolset.toolsVersion;
    },
    get loadedTools() {
      if (version !== toolset.toolsVersion) {
        version = toolset.toolsVersion;
        tools = toolset.loadedTools.map((tool) => durableTool(tool));
      }
      return tools;
    },
  };
}

/** The history a run starts from is a step too: a recovered run continues the same conversation. */
function durableMemory(memory: SessionMemory): SessionMemory {
  return {
    loadHistory: (sessionId) => (DBOS.isWithinWorkflow() ? DBOS.runStep(() => memory.loadHistory(sessionId), { name: "history" }) : memory.loadHistory(sessionId)),
    onEvent: (event, run) => memory.onEvent(event, run),
  };
}

function isToolset(source: Tool<any> | Toolset): source is Toolset {
  return typeof (source as Tool<any>).execute !== "function" && typeof (source as Toolset).toolsVersion === "number";
}
