/**
 * AG-UI (protocol 1.0): a pure encoder from the loop's events to AG-UI events. One encoder per
 * run request; `event` for each loop event as it comes, `closing` once the run's result is known.
 * A sub-agent's events (the loop's `nested`) are attributed to a `subagentRunId` between
 * `SUBAGENT_STARTED` and `SUBAGENT_FINISHED`/`SUBAGENT_ERROR`.
 */
import type { LoopEvent, RunResult } from "../loop/events.js";
import { type Message, textOf } from "../messages.js";
import { LIMIT_STATES, UI_SSE_HEADERS } from "./stream-common.js";

/** One AG-UI event as sent (`@ag-ui/core`'s `BaseEvent` union, the events we send). */
export type AgUiEvent = { type: string } & Record<string, unknown>;

export const AG_UI_PROTOCOL_VERSION = "1.0";

export const AG_UI_HEADERS = { ...UI_SSE_HEADERS, "x-accel-buffering": "no" } as const;

/** One SSE event of the stream. */
export const agUiSse = (event: AgUiEvent): string =>
  // A text delta of the run's own answer, the most frequent event, without serializing an object (the same bytes, key order kept).
  event.type === "TEXT_MESSAGE_CONTENT" && Object.keys(event).length === 3
    ? `data: {"type":"TEXT_MESSAGE_CONTENT","messageId":${JSON.stringify(event.messageId)},"delta":${JSON.stringify(event.delta)}}\n\n`
    : `data: ${JSON.stringify(event)}\n\n`;

/** The SSE text of a list of events ("" for none). */
export function agUiEventsSse(events: readonly AgUiEvent[]): string {
  if (events.length === 1) return agUiSse(events[0]);
  let text = "";
  for (const event of events) text += agUiSse(event);
  return text;
}

export interface AgUiEncoderOptions {
  threadId: string;
  /** The client's `RunAgentInput.runId`. */
  runId: string;
  /** Echoed in `RUN_STARTED.input`. */
  input?: unknown;
  /** The model, for `RUN_FINISHED.usage`. */
  model?: string;
  /** The client's own tools: their pending calls end the run as `pendingToolCallIds`, not interrupts. */
  clientToolNames?: Iterable<string>;
  /**
   * The messages the client sent (`RunAgentInput.messages`): `MESSAGES_SNAPSHOT` is them and what
   * this run added. Without them, the snapshot is the run's whole conversation (the history memory
   * loaded included, which a context limit may have cut).
   */
  inputMessages?: ReadonlyArray<Record<string, unknown>>;
}

/** The run's own events carry no `subagentRunId`. */
const NO_ATTRIBUTION: Readonly<Record<string, string>> = Object.freeze({});

/** What one scope (the run itself, or one sub-agent run inside it) has open. */
interface Scope {
  subagentRunId?: string;
  text?: string;
  /** The open text message's `TEXT_MESSAGE_CONTENT` SSE text up to its delta (the run's own scope). */
  textContentHead?: string;
  reasoning?: string;
  /** Calls of the scope's current wave not finished yet, and the wave's step name. */
  waveCalls: Set<string>;
  step?: string;
  waves: number;
}

export class AgUiEncoder {
  private readonly root: Scope = { waveCalls: new Set(), waves: 0 };
  /** Sub-agent scopes by the delegating call's id (nested ones by the path of ids). */
  private readonly scopes = new Map<string, Scope>();
  private started = false;
  private readonly clientTools: Set<string>;

  constructor(private readonly options: AgUiEncoderOptions) {
    this.clientTools = new Set(options.clientToolNames ?? []);
  }

  start(): AgUiEvent[] {
    if (this.started) return [];
    this.started = true;
    const { threadId, runId, input } = this.options;
    return [{ type: "RUN_STARTED", threadId, runId, protocolVersion: AG_UI_PROTOCOL_VERSION, ...(input !== undefined ? { input } : {}) }];
  }

  /**
   * The SSE text of one loop event: its AG-UI events (`event`), "" for none. A text delta of the
   * run's own open message, most of a stream's events, is written without building its event (the
   * same bytes).
   */
  eventSse(event: LoopEvent): string {
    switch (event.type) {
      case "text-delta":
      case "commentary-delta": {
        const root = this.root;
        if (root.textContentHead !== undefined && root.reasoning === undefined && event.delta !== "") return `${root.textContentHead}${JSON.stringify(event.delta)}}\n\n`;
        break;
      }
      // The run's own events AG-UI has nothing for (`inScope`), answered without going through it.
      case "turn-start":
      case "usage":
      case "progress":
      case "tool-error":
      case "user-message":
      case "messages-updated":
      case "run-end":
        return "";
    }
    return agUiEventsSse(this.event(event));
  }

  event(event: LoopEvent): AgUiEvent[] {
    if (event.type === "run-start") return this.start();
    return this.inScope(this.root, event, []);
  }

  /**
   * The last events: `MESSAGES_SNAPSHOT` of the conversation, then `RUN_FINISHED` (outcome
   * `interrupt` with one interrupt per call waiting for approval, `cancelled` for an aborted run)
   * or `RUN_ERROR` for a failed one.
   */
  closing(result: Pick<RunResult, "runId" | "state" | "reason" | "text" | "error" | "messages" | "newMessages" | "usage" | "checkpoint">): AgUiEvent[] {
    const out = this.start();
    for (const event of this.closeScope(this.root)) out.push(event);
    for (const [key, scope] of this.scopes) {
      out.push(...this.closeScope(scope), { type: "SUBAGENT_ERROR", subagentRunId: scope.subagentRunId!, message: "the run ended before the sub-agent did" });
      this.scopes.delete(key);
    }
    const { threadId, runId, model } = this.options;
    if (result.state === "FAILED") {
      out.push({ type: "RUN_ERROR", message: result.error?.message ?? result.reason, code: result.error?.kind ?? "failed" });
      return out;
    }
    const snapshot = this.snapshot(result);
    if (snapshot.length > 0) out.push({ type: "MESSAGES_SNAPSHOT", messages: snapshot });
    if (LIMIT_STATES.has(result.state) || result.state === "GUARDRAIL") out.push({ type: "CUSTOM", name: "agentloop.outcome", value: { state: result.state, reason: result.reason } });
    // The objects are written out field by field (no spreads): this runs once per request on the server.
    const { inputTokens, outputTokens, totalTokens } = result.usage;
    const usage = [model ? { model, inputTokens, outputTokens, totalTokens } : { inputTokens, outputTokens, totalTokens }];
    if (result.state === "ABORTED") {
      out.push({ type: "RUN_FINISHED", threadId, runId, usage, outcome: { type: "cancelled" } });
      return out;
    }
    const pending = result.state === "INTERRUPTED" ? (result.checkpoint?.pending ?? []) : [];
    const approvals = pending.filter((entry) => !this.clientTools.has(entry.toolName));
    if (approvals.length > 0) {
      const interrupts = approvals.map((entry) => ({
        id: entry.toolCallId,
        reason: "tool_approval",
        message: `Approve the call of ${entry.toolName}${entry.agentPath.length > 1 ? ` (by ${entry.agentPath.join(" > ")})` : ""}?`,
        toolCallId: entry.toolCallId,
        responseSchema: APPROVAL_RESPONSE_SCHEMA,
        metadata: { toolName: entry.toolName, arguments: entry.arguments, argumentsHash: entry.argumentsHash, agentPath: entry.agentPath },
      }));
      out.push({ type: "RUN_FINISHED", threadId, runId, usage, outcome: { type: "interrupt", interrupts } });
      return out;
    }
    // Calls of the client's tools: the run completed its part; the client answers them in the next input's messages.
    if (pending.length > 0) {
      out.push({ type: "RUN_FINISHED", threadId, runId, usage, outcome: { type: "success", pendingToolCallIds: pending.map((entry) => entry.toolCallId) } });
      return out;
    }
    out.push({ type: "RUN_FINISHED", threadId, runId, usage, result: result.text !== "" ? result.text : result.reason, outcome: { type: "success" } });
    return out;
  }

  /** The conversation after the run: the client's messages and the ones this run added that it does not have. */
  private snapshot(result: Pick<RunResult, "runId" | "messages" | "newMessages">): Array<Record<string, unknown>> {
    const input = this.options.inputMessages;
    if (!input) return agUiMessagesOf(result.messages, result.runId);
    const knownCalls = new Set<string>();
    const knownResults = new Set<string>();
    for (const message of input) {
      if (message.role === "tool" && typeof message.toolCallId === "string") knownResults.add(message.toolCallId);
      if (message.role === "assistant" && Array.isArray(message.toolCalls)) for (const call of message.toolCalls as Array<{ id?: unknown }>) if (typeof call?.id === "string") knownCalls.add(call.id);
    }
    const added = agUiMessagesOf(result.newMessages, result.runId).filter((message) => {
      if (message.role === "user") return false; // the client sent it
      if (message.role === "tool") return !knownResults.has(message.toolCallId as string);
      const calls = (message.toolCalls as Array<{ id: string }> | undefined) ?? [];
      return calls.length === 0 || !calls.every((call) => knownCalls.has(call.id));
    });
    return [...input, ...added];
  }

  /** The closing of a request that failed outside the run. */
  failure(message: string, code: string): AgUiEvent[] {
    const out = [...this.start(), ...this.closeScope(this.root)];
    out.push({ type: "RUN_ERROR", message, code });
    return out;
  }

  private inScope(scope: Scope, event: LoopEvent, path: string[]): AgUiEvent[] {
    const attribution: Readonly<Record<string, string>> = scope.subagentRunId ? { subagentRunId: scope.subagentRunId } : NO_ATTRIBUTION;
    switch (event.type) {
      case "text-delta":
      case "commentary-delta": {
        if (event.delta === "") return [];
        const out = this.endReasoning(scope);
        if (scope.text === undefined) {
          scope.text = `msg-${event.runId}-${event.turn}`;
          if (scope === this.root) scope.textContentHead = `data: {"type":"TEXT_MESSAGE_CONTENT","messageId":${JSON.stringify(scope.text)},"delta":`;
          out.push({ type: "TEXT_MESSAGE_START", messageId: scope.text, role: "assistant", ...attribution });
        }
        out.push({ type: "TEXT_MESSAGE_CONTENT", messageId: scope.text, delta: event.delta, ...attribution });
        return out;
      }
      case "reasoning-delta": {
        if (event.delta === "") return [];
        const out: AgUiEvent[] = [];
        if (scope.reasoning === undefined) {
          scope.reasoning = `reasoning-${event.runId}-${event.turn}`;
          out.push({ type: "REASONING_START", messageId: scope.reasoning, ...attribution }, { type: "REASONING_MESSAGE_START", messageId: scope.reasoning, role: "reasoning", ...attribution });
        }
        out.push({ type: "REASONING_MESSAGE_CONTENT", messageId: scope.reasoning, delta: event.delta, ...attribution });
        return out;
      }
      case "turn-end": {
        const parentMessageId = scope.text;
        const out = this.closeText(scope);
        const calls = event.message.content.filter((part) => part.type === "tool-call");
        if (calls.length === 0) return out;
        scope.waves++;
        scope.step = `wave ${scope.waves}`;
        scope.waveCalls = new Set(calls.map((call) => call.id));
        out.push({ type: "STEP_STARTED", stepName: scope.step, ...attribution });
        for (const call of calls) out.push(...toolCall(call.id, call.name, call.arguments, parentMessageId, attribution));
        return out;
      }
      case "tool-start":
        // A resumed wave's calls were announced by the run that stopped: only their results follow.
        return [];
      case "tool-end": {
        const out: AgUiEvent[] = [{ type: "TOOL_CALL_RESULT", messageId: `result-${event.toolCallId}`, toolCallId: event.toolCallId, content: event.output, role: "tool", ...attribution }];
        if (scope.waveCalls.delete(event.toolCallId) && scope.waveCalls.size === 0 && scope.step) {
          out.push({ type: "STEP_FINISHED", stepName: scope.step, ...attribution });
          scope.step = undefined;
        }
        return out;
      }
      case "nested":
        return this.nested(event, path);
      case "tool-progress":
        return [{ type: "CUSTOM", name: "agentloop.tool-progress", value: { toolCallId: event.toolCallId, name: event.name, data: event.data }, ...attribution }];
      case "guardrail":
        return [{ type: "CUSTOM", name: "agentloop.guardrail", value: { guardrail: event.guardrail, allowed: event.allowed, reason: event.reason, toolCallId: event.toolCallId, name: event.name }, ...attribution }];
      case "approval-request":
        if (this.clientTools.has(event.name)) return [];
        return [{ type: "CUSTOM", name: "agentloop.approval-request", value: { toolCallId: event.toolCallId, name: event.name, arguments: event.arguments, agentPath: event.agentPath }, ...attribution }];
      case "approval-decision":
        return [{ type: "CUSTOM", name: "agentloop.approval-decision", value: { toolCallId: event.toolCallId, name: event.name, approve: event.approve, reason: event.reason }, ...attribution }];
      case "loop-warning":
        return [{ type: "CUSTOM", name: "agentloop.loop-warning", value: { pattern: event.pattern, warnings: event.warnings, message: event.message }, ...attribution }];
      case "context-trimmed":
        return [{ type: "CUSTOM", name: "agentloop.context-trimmed", value: { turn: event.turn, reason: event.reason, removedMessages: event.removedMessages }, ...attribution }];
      case "steering":
        return [{ type: "CUSTOM", name: "agentloop.steering", value: { content: event.content }, ...attribution }];
      case "model-fallback":
        return [{ type: "CUSTOM", name: "agentloop.model-fallback", value: { turn: event.turn, from: event.from, to: event.to, reason: event.reason, errorKind: event.errorKind }, ...attribution }];
      case "error":
        return event.fatal ? [] : [{ type: "CUSTOM", name: "agentloop.error", value: { kind: event.error.kind, message: event.error.message }, ...attribution }];
      case "run-start":
      case "turn-start":
      case "usage":
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

  /** A sub-agent's event: opens its scope on its start, closes it on its end. */
  private nested(event: Extract<LoopEvent, { type: "nested" }>, path: string[]): AgUiEvent[] {
    const key = [...path, event.toolCallId].join("/");
    const inner = event.event;
    let scope = this.scopes.get(key);
    const out: AgUiEvent[] = [];
    if (!scope) {
      const parent = path.length > 0 ? this.scopes.get(path.join("/")) : undefined;
      scope = { subagentRunId: `sub-${inner.runId}`, waveCalls: new Set(), waves: 0 };
      this.scopes.set(key, scope);
      out.push({
        type: "SUBAGENT_STARTED",
        subagentRunId: scope.subagentRunId!,
        name: event.agent,
        parentToolCallId: event.toolCallId,
        ...(parent?.subagentRunId ? { parentSubagentRunId: parent.subagentRunId } : {}),
      });
    }
    if (inner.type === "nested") {
      out.push(...this.nested(inner, [...path, event.toolCallId]));
      return out;
    }
    if (inner.type === "run-end") {
      out.push(...this.closeScope(scope));
      this.scopes.delete(key);
      if (inner.state === "FAILED") out.push({ type: "SUBAGENT_ERROR", subagentRunId: scope.subagentRunId!, message: inner.reason, code: inner.result.error?.kind ?? "failed" });
      else if (inner.state === "INTERRUPTED") {
        out.push({ type: "SUBAGENT_FINISHED", subagentRunId: scope.subagentRunId!, outcome: { type: "suspended", interruptIds: (inner.result.checkpoint?.pending ?? []).map((entry) => entry.toolCallId) } });
      } else out.push({ type: "SUBAGENT_FINISHED", subagentRunId: scope.subagentRunId!, result: inner.result.text, outcome: { type: "success" } });
      return out;
    }
    out.push(...this.inScope(scope, inner, [...path, event.toolCallId]));
    return out;
  }

  private endReasoning(scope: Scope): AgUiEvent[] {
    if (scope.reasoning === undefined) return [];
    const attribution = scope.subagentRunId ? { subagentRunId: scope.subagentRunId } : {};
    const out = [
      { type: "REASONING_MESSAGE_END", messageId: scope.reasoning, ...attribution },
      { type: "REASONING_END", messageId: scope.reasoning, ...attribution },
    ];
    scope.reasoning = undefined;
    return out;
  }

  private closeText(scope: Scope): AgUiEvent[] {
    const out = this.endReasoning(scope);
    if (scope.text !== undefined) out.push({ type: "TEXT_MESSAGE_END", messageId: scope.text, ...(scope.subagentRunId ? { subagentRunId: scope.subagentRunId } : {}) });
    scope.text = undefined;
    scope.textContentHead = undefined;
    return out;
  }

  private closeScope(scope: Scope): AgUiEvent[] {
    const out = this.closeText(scope);
    if (scope.step) out.push({ type: "STEP_FINISHED", stepName: scope.step, ...(scope.subagentRunId ? { subagentRunId: scope.subagentRunId } : {}) });
    scope.step = undefined;
    scope.waveCalls.clear();
    return out;
  }
}

/** What an approval interrupt expects as its resume payload (the decisions of `POST /v1/approvals`). */
export const APPROVAL_RESPONSE_SCHEMA = {
  type: "object",
  properties: { approve: { type: "boolean" }, reason: { type: "string" } },
  required: ["approve"],
} as const;

function toolCall(toolCallId: string, toolCallName: string, argumentsText: string, parentMessageId: string | undefined, attribution: Readonly<Record<string, string>>): AgUiEvent[] {
  return [
    { type: "TOOL_CALL_START", toolCallId, toolCallName, ...(parentMessageId ? { parentMessageId } : {}), ...attribution },
    { type: "TOOL_CALL_ARGS", toolCallId, delta: argumentsText, ...attribution },
    { type: "TOOL_CALL_END", toolCallId, ...attribution },
  ];
}

/** The loop's conversation as AG-UI messages (system messages left out): `MESSAGES_SNAPSHOT`'s. */
export function agUiMessagesOf(messages: readonly Message[], runId: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  messages.forEach((message, index) => {
    const id = `${runId}-${index}`;
    if (message.role === "user") out.push({ id, role: "user", content: textOf(message) });
    else if (message.role === "assistant") {
      const calls = message.content.filter((part) => part.type === "tool-call");
      const text = textOf(message);
      out.push({
        id,
        role: "assistant",
        ...(text !== "" ? { content: text } : {}),
        ...(calls.length > 0 ? { toolCalls: calls.map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } })) } : {}),
      });
    } else if (message.role === "tool") {
      out.push({ id, role: "tool", toolCallId: message.toolCallId, content: textOf(message), ...(message.isError ? { error: textOf(message) } : {}) });
    }
  });
  return out;
}
