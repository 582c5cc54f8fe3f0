/**
 * The SSE text of one streamed chat completion, from a run's events: the role chunk, progress
 * blocks and answer deltas as they come, then the closing chunks and `[DONE]`. One encoder for the
 * plain server and the durable one (which keeps the same text in the run's journal), so both send
 * the same bytes.
 */
import { AgentLoopError } from "../errors.js";
import type { LoopEvent, RunResult } from "../loop/events.js";
import { answerOf, approvalRequiredOf, ChatChunkEncoder, clientToolCallsOf, finishReasonOf, wireUsage } from "./chat-stream.js";
import { HttpError, httpErrorOfRun } from "./http-errors.js";

export interface ChatStreamSpec {
  /** The chunks' `id` (`chatcmpl-…`). */
  id: string;
  /** Unix seconds. */
  created: number;
  model: string;
  sessionId: string;
  includeUsage?: boolean;
  /** A `response_format` answer: sent whole at the end, once validated. */
  structured?: boolean;
  /** The server's agent: first in the `agent_path` of a sub-agent's progress block. */
  agent?: string;
  /** False: no KAOS progress blocks, only the answer (default true). */
  progress?: boolean;
  /** The request's client tools: a run stopped at their calls ends with `tool_calls`. */
  clientToolNames?: string[];
}

export class ChatStreamEncoder {
  private readonly chunks: ChatChunkEncoder;

  constructor(private readonly spec: ChatStreamSpec) {
    this.chunks = new ChatChunkEncoder(spec.id, spec.created, spec.model);
  }

  /** The first chunk: the assistant role. */
  start(): string {
    return this.chunks.role();
  }

  /** The chunk of one event: an answer delta or a progress block (nothing for the others). */
  event(event: LoopEvent): string | undefined {
    if (event.type === "text-delta") {
      if (event.delta !== "" && !this.spec.structured) return this.chunks.content(event.delta);
    } else if (event.type === "progress" && this.spec.progress !== false && !this.spec.clientToolNames?.includes(event.target)) {
      // (A client tool's call ran in the client: no progress block for its result coming back.)
      const block = { type: "progress", step: event.step, max_steps: event.max_steps, action: event.action, target: event.target };
      return this.chunks.content(JSON.stringify(block));
    } else if (event.type === "nested" && this.spec.progress !== false) {
      return this.nestedProgress(event);
    }
    return undefined;
  }

  /**
   * A sub-agent's progress block (local, or a remote worker's streamed to this server), live, with
   * the agents it went through: `agent_path` from this server's agent down to the one whose call it is.
   */
  private nestedProgress(event: Extract<LoopEvent, { type: "nested" }>): string | undefined {
    const path = this.spec.agent ? [this.spec.agent] : [];
    let current: LoopEvent = event;
    while (current.type === "nested") {
      path.push(current.agent);
      current = current.event;
    }
    if (current.type !== "progress") return undefined;
    const block = { type: "progress", step: current.step, max_steps: current.max_steps, action: current.action, target: current.target, agent_path: path };
    return this.chunks.content(JSON.stringify(block));
  }

  /** The closing chunks of a run that ended (its events stored), `[DONE]` included. */
  closing(result: Pick<RunResult, "state" | "reason" | "text" | "usage" | "checkpoint" | "error">): string[] {
    // The answer did not finish: an error event instead of a finish chunk.
    if (result.state === "FAILED" || result.state === "ABORTED") {
      return ChatStreamEncoder.failure(httpErrorOfRun(result.error ?? new AgentLoopError("aborted", result.reason)));
    }
    const { chunks, spec } = this;
    const closing: string[] = [];
    // A structured answer goes out whole, once validated (an answer asked again is never sent).
    if (spec.structured && result.text !== "") closing.push(chunks.content(result.text));
    // A limit ended the run: say so when the model gave no answer text.
    const clientCalls = spec.clientToolNames?.length ? clientToolCallsOf(result as RunResult, new Set(spec.clientToolNames)) : undefined;
    if (result.state !== "COMPLETED" && !clientCalls && result.text === "") closing.push(chunks.content(answerOf(result)));
    const approvals = clientCalls ? undefined : approvalRequiredOf(result as RunResult, spec.sessionId);
    closing.push(clientCalls ? chunks.toolCalls(clientCalls) : approvals ? chunks.approvalRequired(approvals) : chunks.finish(finishReasonOf(result as RunResult)));
    if (spec.includeUsage) closing.push(chunks.usage(wireUsage(result.usage)));
    closing.push(ChatChunkEncoder.done);
    return closing;
  }

  /** The closing of a request that failed: one error event and `[DONE]`. */
  static failure(error: unknown): string[] {
    return [ChatChunkEncoder.error((error instanceof HttpError ? error : httpErrorOfRun(error)).body()), ChatChunkEncoder.done];
  }
}
