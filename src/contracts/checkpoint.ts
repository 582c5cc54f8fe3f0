/**
 * The checkpoint's shapes (types only): what an interrupted run hands back, and what a delegating
 * tool gets to resume its sub-agent. Below both src/tools and src/loop; src/loop/checkpoint.ts
 * makes and claims checkpoints and re-exports these.
 */
import type { Message, ToolCallPart, ToolResultMessage } from "../messages.js";
import type { Usage } from "../usage.js";

/** A person's answer to one approval request. `argumentsHash`, when given, must match the request's. */
export type ApprovalDecision = { approve: true; argumentsHash?: string } | { approve: false; reason?: string; argumentsHash?: string };

/** One tool call waiting for a person's decision. */
export interface PendingApproval {
  toolCallId: string;
  toolName: string;
  /** The arguments the call will run with once approved (after bindings and the tool guardrail). */
  arguments: Record<string, unknown>;
  /** Binds a decision to these arguments: sha256 of the call id, the model's raw arguments and these. */
  argumentsHash: string;
  /** The agents from the top-level one down to the one whose call this is. */
  agentPath: string[];
}

/** The wave the run stopped in, as far as it got. */
export interface CheckpointWave {
  /** Every call of the wave, in the order the model asked. */
  calls: ToolCallPart[];
  /** Results of calls that already ran (a parallel wave whose sub-agent stopped for an approval). */
  done: Record<string, { result: ToolResultMessage; arguments: unknown }>;
  /** Decisions already given for this wave (a resume that decided some calls, not all), with what was asked. */
  decided: Record<string, { decision: ApprovalDecision; request: PendingApproval }>;
  /** Checkpoints of sub-agent runs that stopped inside this wave, by the delegating call's id. */
  nested: Record<string, RunCheckpoint>;
}

/** A JSON-serializable snapshot of an interrupted run. Opaque to callers except `id` and `pending`. */
export interface RunCheckpoint {
  version: 1;
  /** Unique per checkpoint: a checkpoint can be resumed once. */
  id: string;
  agent: string;
  runId: string;
  sessionId?: string;
  createdAt: string;
  /** Every call waiting for a decision, sub-agents' included. */
  pending: PendingApproval[];
  messages: Message[];
  firstNew: number;
  inputs: Record<string, unknown>;
  counters: {
    turns: number;
    toolRounds: number;
    toolCalls: number;
    /** Model calls and waves of the current input (its limits go on counting from here). */
    inputTurns: number;
    inputRounds: number;
    /** Index of the current input's user message in `messages` (absent in checkpoints made before it was kept). */
    inputStart?: number;
    loopWarnings: number;
    signatures: string[];
    usage: Usage;
  };
  wave: CheckpointWave;
  /**
   * Set when the calls wait inside a remote worker (A2A `input-required`, or a KAOS delegation to
   * an agentloop server answering `approval_required`): this checkpoint only names where; the
   * worker keeps its own run, checks the decisions against its own hashes and resumes it.
   */
  remote?: RemoteWait;
  /** What the run was started from, when it was not an `Agent` built in code: a `.prompty` file (`resumeAgent` loads it again). */
  source?: { prompty: string };
}

/** Where a remote worker waits for decisions. */
export interface RemoteWait {
  protocol: "a2a" | "kaos";
  /** The worker as the delegating tool names it. */
  agent: string;
  /** A2A: the task waiting in `input-required` and its context. */
  taskId?: string;
  contextId?: string;
  /** KAOS: the worker's session, for its `POST /v1/approvals`. */
  sessionId?: string;
  /** The worker's checkpoint id, as it reported it. */
  checkpointId?: string;
}

/** What a delegating tool gets to resume its sub-agent's run instead of starting one. */
export interface NestedResume {
  checkpoint: RunCheckpoint;
  decisions: Record<string, ApprovalDecision>;
}
