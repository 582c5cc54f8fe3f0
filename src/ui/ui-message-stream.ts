/**
 * The AI SDK UI message stream (version 1, what `useChat` reads): a pure encoder from the loop's
 * events to the stream's chunks. One encoder per stream; `event` for each loop event as it comes,
 * `closing` once the run's result is known (the server calls it after the run's events are stored).
 */
import type { LoopEvent, RunResult } from "../loop/events.js";
import { parseToolArguments } from "../tools/parse-arguments.js";
import { LIMIT_STATES, UI_SSE_HEADERS } from "./stream-common.js";

/** One chunk of the UI message stream (the `ai` package's `UIMessageChunk`, the parts we send). */
export type UiMessageChunk =
  | { type: "start"; messageId?: string; messageMetadata?: unknown }
  | { type: "finish"; finishReason?: "stop" | "length" | "content-filter" | "tool-calls" | "error" | "other"; messageMetadata?: unknown }
  | { type: "start-step" }
  | { type: "finish-step" }
  | { type: "text-start" | "text-end" | "reasoning-start" | "reasoning-end"; id: string }
  | { type: "text-delta" | "reasoning-delta"; id: string; delta: string }
  | { type: "tool-input-start"; toolCallId: string; toolName: string }
  | { type: "tool-input-delta"; toolCallId: string; inputTextDelta: string }
  | { type: "tool-input-available"; toolCallId: string; toolName: string; input: unknown }
  | { type: "tool-input-error"; toolCallId: string; toolName: string; input: unknown; errorText: string }
  | { type: "tool-approval-request"; approvalId: string; toolCallId: string }
  | { type: "tool-output-available"; toolCallId: string; output: unknown }
  | { type: "tool-output-error"; toolCallId: string; errorText: string }
  | { type: "tool-output-denied"; toolCallId: string }
  | { type: `data-${string}`; id?: string; data: unknown; transient?: boolean }
  | { type: "error"; errorText: string }
  | { type: "abort"; reason?: string };

/** The response header that names the protocol version. */
export const UI_MESSAGE_STREAM_HEADERS = { ...UI_SSE_HEADERS, "x-vercel-ai-ui-message-stream": "v1", "x-accel-buffering": "no" } as const;

/** One SSE event of the stream. */
export const uiChunkSse = (chunk: UiMessageChunk): string =>
  // A text delta, the most frequent part, without serializing an object (the same bytes, key order kept).
  chunk.type === "text-delta" && Object.keys(chunk).length === 3
    ? `data: {"type":"text-delta","id":${JSON.stringify(chunk.id)},"delta":${JSON.stringify(chunk.delta)}}\n\n`
    : `data: ${JSON.stringify(chunk)}\n\n`;
export const UI_STREAM_DONE = "data: [DONE]\n\n";

/** The SSE text of a list of chunks ("" for none). */
export function uiChunksSse(chunks: readonly UiMessageChunk[]): string {
  if (chunks.length === 1) return uiChunkSse(chunks[0]);
  let text = "";
  for (const chunk of chunks) text += uiChunkSse(chunk);
  return text;
}

export interface UiMessageStreamOptions {
  /** The assistant message's id (`start.messageId`); a resumed run continues the message it names. */
  messageId?: string;
  /** Tool calls the client has a part for already (a resumed run's message): not announced again. */
  knownToolCallIds?: Iterable<string>;
  /** The client's own tools: their calls wait for `addToolOutput`, not for an approval. */
  clientToolNames?: Iterable<string>;
}

/** A tool call's input as the UI shows it: the parsed arguments, or the raw text when they are not JSON. */
function inputOf(text: string): unknown {
  const parsed = parseToolArguments(text);
  return parsed.ok ? parsed.value : text;
}

export class UiMessageStreamEncoder {
  private text?: string;
  /** The open text part's `text-delta` SSE text up to its delta (`data: {"type":"text-delta","id":…,"delta":`). */
  private textDeltaHead?: string;
  private reasoning?: string;
  private stepOpen = false;
  /** Calls of the current wave not finished yet; the wave's `data-wave` end goes out when it empties. */
  private readonly waveCalls = new Set<string>();
  private wave = 0;
  /** Tool calls the UI has a part for (a sub-agent's call gets one when it asks for approval). */
  private readonly known: Set<string>;
  private readonly clientTools: Set<string>;
  private started = false;

  constructor(private readonly options: UiMessageStreamOptions = {}) {
    this.known = new Set(options.knownToolCallIds ?? []);
    this.clientTools = new Set(options.clientToolNames ?? []);
  }

  /** The first chunk. */
  start(): UiMessageChunk[] {
    if (this.started) return [];
    this.started = true;
    return [this.options.messageId ? { type: "start", messageId: this.options.messageId } : { type: "start" }];
  }

  /**
   * The SSE text of one loop event: its chunks (`event`), "" for none. A text delta inside the open
   * text part, most of a stream's events, is written without building its chunk (the same bytes).
   */
  eventSse(event: LoopEvent): string {
    switch (event.type) {
      case "text-delta":
      case "commentary-delta":
        if (this.textDeltaHead !== undefined && this.reasoning === undefined && event.delta !== "") return `${this.textDeltaHead}${JSON.stringify(event.delta)}}\n\n`;
        break;
      // The events the stream has no part for (`event`), answered without going through it.
      case "approval-decision":
      case "progress":
      case "tool-error":
      case "user-message":
      case "messages-updated":
      case "run-end":
        return "";
    }
    return uiChunksSse(this.event(event));
  }

  /** The chunks of one loop event (none for the events the UI does not show). `run-end` is `closing`'s. */
  event(event: LoopEvent): UiMessageChunk[] {
    switch (event.type) {
      case "run-start":
        return this.start();
      case "turn-start": {
        const out = this.closeStep();
        this.stepOpen = true;
        out.push({ type: "start-step" });
        return out;
      }
      case "text-delta":
      case "commentary-delta":
        if (event.delta === "") return [];
        return this.textDelta(event.runId, event.turn, event.delta);
      case "reasoning-delta": {
        if (event.delta === "") return [];
        const out: UiMessageChunk[] = [];
        if (this.reasoning === undefined) {
          this.reasoning = `reasoning-${event.runId}-${event.turn}`;
          out.push({ type: "reasoning-start", id: this.reasoning });
        }
        out.push({ type: "reasoning-delta", id: this.reasoning, delta: event.delta });
        return out;
      }
      case "turn-end": {
        const out = this.closeText();
        const calls = event.message.content.filter((part) => part.type === "tool-call");
        if (calls.length === 0) return out;
        this.wave++;
        this.waveCalls.clear();
        for (const call of calls) {
          this.waveCalls.add(call.id);
          out.push(...this.toolInput(call.id, call.name, call.arguments));
        }
        out.push({ type: "data-wave", id: `wave-${event.runId}-${this.wave}`, data: { status: "started", turn: event.turn, toolCallIds: calls.map((call) => call.id) } });
        return out;
      }
      case "tool-progress":
        return [{ type: "data-tool-progress", data: { toolCallId: event.toolCallId, name: event.name, data: event.data }, transient: true }];
      case "tool-end": {
        const out: UiMessageChunk[] = [];
        if (event.errorKind === "guardrail" || event.errorKind === "rejected") out.push({ type: "tool-output-denied", toolCallId: event.toolCallId });
        else if (event.isError) out.push({ type: "tool-output-error", toolCallId: event.toolCallId, errorText: event.output });
        else out.push({ type: "tool-output-available", toolCallId: event.toolCallId, output: event.structured ?? event.output });
        if (this.waveCalls.delete(event.toolCallId) && this.waveCalls.size === 0) {
          out.push({ type: "data-wave", id: `wave-${event.runId}-${this.wave}`, data: { status: "finished", turn: this.wave } });
        }
        return out;
      }
      case "approval-request":
        return this.approvalRequest(event);
      case "approval-decision":
        // The UI recorded the decision itself (`addToolApprovalResponse`); a denied call's output says the rest.
        return [];
      case "guardrail":
        // A tool call's deny shows as its `tool-output-denied`; an input or output deny is named here.
        if (event.guardrail === "tool") return [];
        return [{ type: "data-guardrail", data: { guardrail: event.guardrail, allowed: event.allowed, reason: event.reason } }];
      case "nested": {
        const inner = innermost(event);
        if (inner.type === "approval-request") return this.approvalRequest(inner);
        const summary = nestedSummary(event);
        return summary === undefined ? [] : [{ type: "data-subagent", data: summary }];
      }
      case "loop-warning":
        return [{ type: "data-loop-warning", data: { pattern: event.pattern, warnings: event.warnings, message: event.message } }];
      case "context-trimmed":
        return [{ type: "data-context-trimmed", data: { turn: event.turn, reason: event.reason, removedMessages: event.removedMessages, tokensBefore: event.tokensBefore, tokensAfter: event.tokensAfter } }];
      case "steering":
        return [{ type: "data-steering", data: { content: event.content } }];
      case "model-fallback":
        return [{ type: "data-model-fallback", data: { turn: event.turn, from: event.from, to: event.to, reason: event.reason, errorKind: event.errorKind } }];
      case "usage":
        return [{ type: "data-usage", data: { turn: event.turn, usage: event.usage, total: event.total }, transient: true }];
      case "error":
        // A fatal error ends the run: `closing` reports it once. A non-fatal one (a memory write) is named.
        return event.fatal ? [] : [{ type: "data-error", data: { kind: event.error.kind, message: event.error.message } }];
      case "tool-start":
        // A resumed wave's calls have no turn here: their part, unless the client has it already.
        return this.known.has(event.toolCallId) ? [] : this.toolInput(event.toolCallId, event.name, JSON.stringify(event.arguments ?? {}));
      case "progress":
      case "tool-error":
      case "user-message":
      case "messages-updated":
      case "run-end":
        return [];
      default: {
        const exhaustive: never = event;
        return exhaustive;
      }
    }
  }

  /**
   * The last chunks of a run that ended: `finish` (after a `data-limit` for a limit, a
   * `data-guardrail` outcome for a deny), `error` for a failed run, `abort` for an aborted one.
   */
  closing(result: Pick<RunResult, "state" | "reason" | "text" | "error">): UiMessageChunk[] {
    const out: UiMessageChunk[] = [...this.start(), ...this.closeText(), ...this.closeStep()];
    switch (result.state) {
      case "FAILED":
        out.push({ type: "error", errorText: result.error?.message ?? result.reason });
        return out;
      case "ABORTED":
        out.push({ type: "abort", reason: result.reason });
        return out;
      case "COMPLETED":
        out.push({ type: "finish", finishReason: "stop" });
        return out;
      case "INTERRUPTED":
        out.push({ type: "finish", finishReason: "tool-calls" });
        return out;
      case "GUARDRAIL":
        out.push({ type: "data-outcome", data: { state: result.state, reason: result.reason } }, { type: "finish", finishReason: "content-filter" });
        return out;
      default:
        if (LIMIT_STATES.has(result.state)) out.push({ type: "data-limit", data: { state: result.state, reason: result.reason } });
        out.push({ type: "finish", finishReason: "length" });
        return out;
    }
  }

  /** The closing of a request that failed outside the run (a refused resume, a store failure). */
  failure(message: string): UiMessageChunk[] {
    return [...this.start(), ...this.closeText(), ...this.closeStep(), { type: "error", errorText: message }];
  }

  private textDelta(runId: string, turn: number, delta: string): UiMessageChunk[] {
    const out: UiMessageChunk[] = [];
    if (this.reasoning !== undefined) {
      out.push({ type: "reasoning-end", id: this.reasoning });
      this.reasoning = undefined;
    }
    if (this.text === undefined) {
      this.text = `text-${runId}-${turn}`;
      this.textDeltaHead = `data: {"type":"text-delta","id":${JSON.stringify(this.text)},"delta":`;
      out.push({ type: "text-start", id: this.text });
    }
    out.push({ type: "text-delta", id: this.text, delta });
    return out;
  }

  private closeText(): UiMessageChunk[] {
    const out: UiMessageChunk[] = [];
    if (this.reasoning !== undefined) out.push({ type: "reasoning-end", id: this.reasoning });
    if (this.text !== undefined) out.push({ type: "text-end", id: this.text });
    this.reasoning = undefined;
    this.text = undefined;
    this.textDeltaHead = undefined;
    return out;
  }

  private closeStep(): UiMessageChunk[] {
    const out = this.closeText();
    if (this.stepOpen) out.push({ type: "finish-step" });
    this.stepOpen = false;
    return out;
  }

  private toolInput(toolCallId: string, toolName: string, argumentsText: string): UiMessageChunk[] {
    this.known.add(toolCallId);
    return [
      { type: "tool-input-start", toolCallId, toolName },
      { type: "tool-input-delta", toolCallId, inputTextDelta: argumentsText },
      { type: "tool-input-available", toolCallId, toolName, input: inputOf(argumentsText) },
    ];
  }

  private approvalRequest(event: Extract<LoopEvent, { type: "approval-request" }>): UiMessageChunk[] {
    // A client tool's call: its part is input-available already, the client runs it (`addToolOutput`).
    if (this.clientTools.has(event.name) && event.agentPath.length <= 1) return [];
    const out: UiMessageChunk[] = [];
    // A sub-agent's call has no part yet: it gets one, so the person sees what they approve.
    if (!this.known.has(event.toolCallId)) {
      this.known.add(event.toolCallId);
      out.push({ type: "tool-input-start", toolCallId: event.toolCallId, toolName: event.name }, { type: "tool-input-available", toolCallId: event.toolCallId, toolName: event.name, input: event.arguments });
    }
    out.push({ type: "tool-approval-request", approvalId: event.toolCallId, toolCallId: event.toolCallId });
    return out;
  }
}

/** The innermost event of a (possibly nested) sub-agent event. */
export function innermost(event: LoopEvent): LoopEvent {
  let current = event;
  while (current.type === "nested") current = current.event;
  return current;
}

/** What a `data-subagent` part says of a sub-agent's event: its text, its calls, its end (the rest stays inside). */
export function nestedSummary(event: Extract<LoopEvent, { type: "nested" }>): Record<string, unknown> | undefined {
  const agents: string[] = [];
  let current: LoopEvent = event;
  const toolCallId = event.toolCallId;
  while (current.type === "nested") {
    agents.push(current.agent);
    current = current.event;
  }
  const base = { toolCallId, agentPath: agents };
  switch (current.type) {
    case "run-start":
      return { ...base, event: "started" };
    case "text-delta":
      return current.delta === "" ? undefined : { ...base, event: "text-delta", delta: current.delta };
    case "tool-start":
      return { ...base, event: "tool-start", toolCallId: current.toolCallId, name: current.name, arguments: current.arguments, parentToolCallId: toolCallId };
    case "tool-end":
      return { ...base, event: "tool-end", toolCallId: current.toolCallId, name: current.name, output: current.output, isError: current.isError, parentToolCallId: toolCallId };
    case "run-end":
      return { ...base, event: "finished", state: current.state, reason: current.reason };
    default:
      return undefined;
  }
}
