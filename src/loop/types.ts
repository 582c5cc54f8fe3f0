import type { AgentLoopError } from "../errors.js";
import type { Message } from "../messages.js";
import type { Model, ModelOptions, ModelResponse, ToolChoice } from "../model/model.js";
import type { Tool, TruncationOptions } from "../tools/tool.js";
import type { ApprovalMode, ApprovalScope } from "./approvals.js";
import type { ApprovalDecision, RunCheckpoint } from "./checkpoint.js";
import type { ContextBudget } from "./context.js";
import type { LoopEvent, RunResult, ToolErrorKind } from "./events.js";
import type { Guardrails } from "./guardrails.js";
import type { OutputSchema } from "./output.js";

export interface LoopDetectionOptions {
  /** How many recent tool calls are compared (default 10). */
  window?: number;
  /** Stop the run (state LOOP_DETECTED) after this many warnings. Default: never stop. */
  maxWarnings?: number;
}

/** Read-only facts about a run, handed to observers and instrumentation. */
export interface RunInfo {
  runId: string;
  agentName: string;
  model: Model;
  sessionId?: string;
  depth: number;
  parentRunId?: string;
  /** The tool call of the parent run that started this run (sub-agents). */
  parentToolCallId?: string;
}

/** Consumes a run's events in order. A returned promise is awaited before the next event is
 * delivered to this observer, and all are settled before the run's result resolves. */
export interface RunObserver {
  onEvent(event: LoopEvent, run: RunInfo): void | Promise<void>;
  /**
   * True when the observer keeps its own order (as `sessionMemory` does): it is handed each event
   * at once, even while the promise it returned for an earlier one is pending, so a run's events
   * can join one group commit. Default: the next event waits for that promise.
   */
  readonly ordersItself?: boolean;
}

/** A session store as the loop sees it: history in, events out. Implemented in `agentloop/memory`. */
export interface SessionMemory extends RunObserver {
  /** The conversation to continue, rebuilt from the session's log (no dangling tool calls). */
  loadHistory(sessionId: string): Promise<Message[]>;
  /** Whether the session's log records a resume of this checkpoint (a second resume is refused, across processes). */
  checkpointResumed?(sessionId: string, checkpointId: string): Promise<boolean>;
}

export interface ToolCallOutcome {
  isError: boolean;
  errorKind?: ToolErrorKind;
  output: string;
}

/**
 * Scopes around the run, each model call and each tool call (tracing lives here). Each wrapper
 * must call `fn` exactly once and return what it returns.
 */
export interface Instrumentation {
  run(info: RunInfo & { input: string }, fn: () => Promise<RunResult>): Promise<RunResult>;
  modelCall(info: RunInfo & { turn: number; toolNames: string[] }, fn: () => Promise<ModelResponse>): Promise<ModelResponse>;
  toolCall(
    info: RunInfo & { toolCallId: string; toolName: string; kind?: string; arguments: unknown; services: Record<string, unknown> },
    fn: () => Promise<ToolCallOutcome>,
  ): Promise<ToolCallOutcome>;
}

export interface AgentConfig<Output = unknown> {
  name?: string;
  description?: string;
  /** The system prompt. */
  instructions?: string;
  /**
   * The model. `DEBUG_MOCK_RESPONSES` in the environment replaces it with the scripted model. A list
   * is a fallback chain (`withFallback`): the next model takes a request the one before could not serve.
   */
  model: Model | readonly Model[];
  /** Tools, and toolsets whose tools can change while the agent lives (an MCP toolset). */
  tools?: Array<Tool<any> | Toolset>;
  /** Agents this agent may delegate to: each becomes a tool `delegate_to_<name>` (see `agentloop/agents`). */
  subAgents?: DelegateTarget[];
  /** Deepest nested delegation allowed through `subAgents` (default 3). */
  maxDelegationDepth?: number;
  /** Model calls per input before TURN_LIMIT (default 10). With `toolCallMode` `action` or `plan`,
   * the protocol's steps (action turns, waves) per input, then one more call for the answer. */
  maxTurns?: number;
  /** Tool waves per input before ROUND_LIMIT (default: no limit besides maxTurns). */
  maxToolRounds?: number;
  /** Total tokens per run; checked before each model call (TOKEN_BUDGET). */
  maxTokens?: number;
  /** Tool calls per run; a wave that would pass it does not start (TOOL_BUDGET). */
  maxToolCalls?: number;
  /** `stop` (default) ends on a limit with the partial transcript; `final-answer` first makes one
   * last model call with tools disabled so the user gets an answer. */
  onLimit?: "stop" | "final-answer";
  /** Most tool calls running at once within a wave (default: all of them). */
  concurrency?: number;
  /** Default per-call timeout for tools without their own (default: none). */
  toolTimeoutMs?: number;
  /** Default truncation for tools without their own. */
  truncation?: TruncationOptions;
  /** `false` turns loop detection off. */
  loopDetection?: false | LoopDetectionOptions;
  modelOptions?: ModelOptions;
  toolChoice?: ToolChoice;
  /** How tools reach the model: `native` (default) function calling, or one of the text protocols of
   * `agentloop/text-tools` (`string`, `action`, `plan`, `fenced`), or `auto` (native, falling back to string
   * when the server rejects tools). Applies to a `DEBUG_MOCK_RESPONSES` model too. */
  toolCallMode?: "auto" | "native" | "string" | "action" | "plan" | "fenced";
  observers?: RunObserver[];
  /**
   * Wraps the run, each model call and each tool call (`otelInstrumentation()` from
   * `agentloop/tracing`). Default: OpenTelemetry spans when a tracer provider is registered globally,
   * else none. `false`: never traced.
   */
  instrumentation?: Instrumentation | false;
  memory?: SessionMemory;
  /**
   * A budget for each request's input: over it, the oldest exchanges are left out of the request
   * (the transcript keeps them), replaced by a marker or a summary. See `ContextBudget`.
   */
  context?: ContextBudget;
  /**
   * The final answer must be JSON matching this schema (a zod schema types `result.output`). Sent
   * natively to the built-in providers, as instructions to other models; an invalid answer is asked
   * again once, then the run fails with kind `output_validation`.
   */
  output?: OutputSchema<Output>;
  /** Checks of the input (before any model call), the answer, and each tool call (before its wave starts). */
  guardrails?: Guardrails;
  /**
   * What a wave with calls that need approval (`needsApproval`) does: `wait` (default) for
   * `run.approve(callId)` / `run.reject(callId, reason?)`, or `interrupt`: the run ends INTERRUPTED
   * with `result.checkpoint`, and `agent.resume(checkpoint, { decisions })` goes on.
   */
  onApproval?: ApprovalMode;
  /** In `wait` mode, a request not decided within this many milliseconds is rejected. */
  approvalTimeoutMs?: number;
  /** Tool names or globs (`*`, `?`) whose calls need approval, whatever the tool says: marks MCP and remote tools. */
  needsApproval?: string[];
}

/**
 * A set of tools that can change while an agent uses it (`McpToolset` and `McpToolsetGroup` of
 * `agentloop/mcp` are toolsets). The agent compares `toolsVersion` with the one it last saw once per
 * model call and before each wave, and reads `loadedTools` again only when it changed.
 */
export interface Toolset {
  /** Shown in errors about the toolset's tools. */
  readonly name?: string;
  /** Changes whenever `loadedTools` changes (a counter that only grows). */
  readonly toolsVersion: number;
  /** The tools now. Read only after `toolsVersion` changed; the agent copies what it needs. */
  readonly loadedTools: readonly Tool<any>[];
}

/** What a sub-agent must offer to be delegated to (an `Agent` satisfies it). */
export interface DelegateTarget {
  readonly name: string;
  readonly description: string;
  run(input: string, options?: RunOptions): AsyncIterable<LoopEvent> & PromiseLike<RunResult>;
  /** Resumes a run of this target that stopped for approvals (an `Agent` has it). */
  resume?(checkpoint: RunCheckpoint, options: ResumeOptions): AsyncIterable<LoopEvent> & PromiseLike<RunResult>;
}

export interface RunOptions {
  signal?: AbortSignal;
  /** The run's id (default: a new `run_<uuid>`). A durable run passes its workflow id, so a
   * recovered run keeps its id and its tools' idempotency keys. */
  runId?: string;
  /** Named inputs for bindings and templates. */
  inputs?: Record<string, unknown>;
  /** Conversation to continue (after the system prompt). Appended to what memory loads. */
  history?: Message[];
  sessionId?: string;
  /**
   * The session is new (its id was just made): memory's `loadHistory` is not asked, the run still
   * records its events. Saves a store read per run for callers that make the ids (the server does
   * for a request without a session).
   */
  newSession?: boolean;
  /** Set by sub-agent tools: depth in the delegation chain and the agents above. */
  depth?: number;
  agentPath?: readonly string[];
  parentRunId?: string;
  /** Set by sub-agent tools: the parent's tool call that runs this agent (tracing nests under it). */
  parentToolCallId?: string;
  /** Called synchronously with every event as it is emitted: the cheapest way to consume a run
   * (no async iteration). An exception it throws becomes a non-fatal `error` event. */
  onEvent?: (event: LoopEvent) => void;
  /** Services handed to tools through their context (instrumentation uses it for trace context). */
  services?: Record<string, unknown>;
  /** Structured output for this run only, instead of `AgentConfig.output` (the server's `response_format`). */
  output?: OutputSchema;
  /** Overrides `AgentConfig.onApproval` for this run. */
  onApproval?: ApprovalMode;
  /** Overrides `AgentConfig.approvalTimeoutMs` for this run. */
  approvalTimeoutMs?: number;
  /** Set by sub-agent tools: the parent run's approvals (a sub-agent's requests are answered through the parent). */
  approvals?: ApprovalScope;
}

export interface ResumeOptions extends Omit<RunOptions, "history" | "newSession" | "inputs"> {
  /** Decisions by tool call id. Calls left undecided stop the run again (a new checkpoint). */
  decisions: Record<string, ApprovalDecision>;
}

export type { AgentLoopError };
