/**
 * The loop's events and its result: the one union every consumer reads. Below both src/tools (a
 * tool forwards a sub-agent's events) and src/loop; src/loop/events.ts re-exports these.
 */
import type { AgentLoopError } from "../errors.js";
import type { AssistantMessage, Message, ToolResultMessage } from "../messages.js";
import type { FinishReason } from "../model/model.js";
import type { Usage } from "../usage.js";
import type { ApprovalDecision, RunCheckpoint } from "./checkpoint.js";

export type RunState =
  | "CREATED"
  | "RUNNING"
  | "COMPLETED"
  | "FAILED"
  | "ABORTED"
  | "TURN_LIMIT"
  | "ROUND_LIMIT"
  | "TOKEN_BUDGET"
  | "TOOL_BUDGET"
  | "LOOP_DETECTED"
  /** A guardrail denied the input or the answer (`reason` names it). */
  | "GUARDRAIL"
  /** Stopped for approvals (`onApproval: "interrupt"`): `result.checkpoint` resumes it. */
  | "INTERRUPTED";

export type TerminalState = Exclude<RunState, "CREATED" | "RUNNING">;

/** Why a tool call produced an error result. */
export type ToolErrorKind = "unknown_tool" | "invalid_arguments" | "schema" | "threw" | "timeout" | "cancelled" | "error_result" | "guardrail" | "rejected";

export interface ProgressBlock {
  type: "progress";
  step: number;
  max_steps: number;
  action: "tool_call" | "delegate";
  target: string;
}

export interface RunResult<Output = unknown> {
  runId: string;
  state: TerminalState;
  /** Human-readable reason for the terminal state ("model answered", "maxTurns (10) reached", ...). */
  reason: string;
  /** The final answer text ("" when the run ended without one). */
  text: string;
  /** The whole conversation of this run, including the history it started from. */
  messages: Message[];
  /** Only the messages this run added. */
  newMessages: Message[];
  usage: Usage;
  turns: number;
  toolRounds: number;
  toolCalls: number;
  /** With `AgentConfig.output`: the final answer parsed and validated (typed from a zod schema). */
  output?: Output;
  error?: AgentLoopError;
  /** Set when the state is INTERRUPTED: JSON-serializable; `agent.resume(checkpoint, { decisions })` goes on. */
  checkpoint?: RunCheckpoint;
}

/**
 * Every observable thing the loop does. The CLI, the server's SSE, memory and tracing all read
 * this one union; the loop knows none of them.
 */
export type LoopEvent =
  | {
      type: "run-start";
      runId: string;
      agent: string;
      model: string;
      input: string;
      sessionId?: string;
      timestamp: number;
      /** A resumed run (`agent.resume`): the checkpoint it goes on from and the decisions given. */
      resumedFrom?: { checkpointId: string; decisions: Record<string, ApprovalDecision> };
    }
  | { type: "user-message"; runId: string; content: string; followUp: boolean }
  | { type: "turn-start"; runId: string; turn: number }
  /** Answer text, streamed as it arrives. */
  | { type: "text-delta"; runId: string; turn: number; delta: string }
  /** Text the model says in a turn that calls tools ("Let me check…"): shown, but not answer text. */
  | { type: "commentary-delta"; runId: string; turn: number; delta: string }
  | { type: "reasoning-delta"; runId: string; turn: number; delta: string }
  | {
      type: "turn-end";
      runId: string;
      turn: number;
      message: AssistantMessage;
      finishReason: FinishReason;
      usage: Usage;
      toolCalls: number;
    }
  | (ProgressBlock & { runId: string; toolCallId: string })
  | {
      type: "tool-start";
      runId: string;
      step: number;
      toolCallId: string;
      name: string;
      arguments: unknown;
      kind?: string;
      action: "tool_call" | "delegate";
    }
  | { type: "tool-progress"; runId: string; toolCallId: string; name: string; data: unknown }
  | {
      type: "tool-end";
      runId: string;
      step: number;
      toolCallId: string;
      name: string;
      action: "tool_call" | "delegate";
      /** The full, untruncated output. */
      output: string;
      /** The result message sent to the model (truncated if the output was too long). */
      result: ToolResultMessage;
      isError: boolean;
      errorKind?: ToolErrorKind;
      truncated: boolean;
      /** How long the tool itself ran (not the wait for its schema validator or the rest of the wave). */
      durationMs: number;
      structured?: unknown;
    }
  | { type: "tool-error"; runId: string; toolCallId: string; name: string; kind: ToolErrorKind; message: string }
  | { type: "steering"; runId: string; content: string }
  /** A guardrail denied something (or a tool guardrail rewrote a call's arguments: `allowed: true`). */
  | { type: "guardrail"; runId: string; guardrail: "input" | "output" | "tool"; allowed: boolean; reason: string; toolCallId?: string; name?: string }
  /** A call waits for a person's decision (`run.approve` / `run.reject`, or `agent.resume` after an interrupt). */
  | {
      type: "approval-request";
      runId: string;
      toolCallId: string;
      name: string;
      arguments: Record<string, unknown>;
      argumentsHash: string;
      agentPath: string[];
    }
  | { type: "approval-decision"; runId: string; toolCallId: string; name: string; approve: boolean; reason?: string; checkpointId?: string }
  | { type: "loop-warning"; runId: string; pattern: string[]; warnings: number; message: string }
  | { type: "usage"; runId: string; turn: number; usage: Usage; total: Usage }
  /** The model of this turn failed (after its retries) and the next model of `withFallback` takes the same request. */
  | { type: "model-fallback"; runId: string; turn: number; from: string; to: string; reason: string; errorKind: string }
  | { type: "nested"; runId: string; toolCallId: string; agent: string; event: LoopEvent }
  /**
   * The transcript grew to `count` messages (sent before the run's next event). `messages` is the
   * live transcript, for in-process consumers (not serialized: copy what you keep).
   */
  | { type: "messages-updated"; runId: string; count: number; readonly messages: readonly Message[] }
  /**
   * The request of this turn left out older messages to fit the context budget (the transcript
   * keeps them): `removedIndexes` are their positions in the transcript, replaced by one marker
   * (or summary) message. `messages` is the request as sent (not serialized).
   */
  | {
      type: "context-trimmed";
      runId: string;
      turn: number;
      /** `budget`: over `AgentConfig.context.maxTokens`; `context_length`: the provider refused the request. */
      reason: "budget" | "context_length";
      strategy: "trim" | "summarize";
      removedMessages: number;
      /** Whole exchanges (or tool rounds of the current input) removed. */
      removedExchanges: number;
      removedIndexes: number[];
      keptMessages: number;
      tokensBefore: number;
      tokensAfter: number;
      maxTokens: number;
      summary?: string;
      /** The summarizer failed: the plain marker was used. */
      summaryError?: string;
      readonly messages: readonly Message[];
    }
  | { type: "error"; runId: string; error: AgentLoopError; fatal: boolean }
  | { type: "run-end"; runId: string; state: TerminalState; reason: string; result: RunResult };

export type LoopEventType = LoopEvent["type"];
