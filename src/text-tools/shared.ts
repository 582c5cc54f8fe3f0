/**
 * What the three text protocols share: running the inner plain-text model, rendering a
 * conversation with tool calls and results as plain text, describing tools, making call ids.
 */
import { randomUUID } from "node:crypto";
import { AgentLoopError, abortError } from "../errors.js";
import type { AssistantMessage, AssistantPart, Message, TextPart, ToolCallPart, ToolResultMessage, UserMessage } from "../messages.js";
import { type FinishReason, type Model, type ModelEvent, type ModelRequest, type RunStart, STEP_LIMIT_FINISH, type ToolDefinition } from "../model/model.js";
import { addUsage, type Usage } from "../usage.js";
import { isJsonObject } from "./json-extract.js";

/**
 * The frame every text protocol shares: provider and model id of the wrapped model, a per-run
 * copy when the wrapped model makes one, and `stream` kept to the Model contract by `guardStream`.
 */
export abstract class TextProtocolModel implements Model {
  readonly provider: string;
  readonly modelId: string;

  constructor(
    protected readonly inner: Model,
    private readonly label: string,
  ) {
    if (typeof inner?.stream !== "function") throw new TypeError(`${label}: the wrapped model must implement Model (a stream(request) method)`);
    this.provider = inner.provider;
    this.modelId = inner.modelId;
  }

  /** The same protocol (same options and shared state) around another inner model. */
  protected abstract around(inner: Model): Model;

  /** The protocol's events for one request; may throw (the guard turns that into an `error` event). */
  protected abstract run(request: ModelRequest): AsyncGenerator<ModelEvent>;

  forRun(run?: RunStart): Model {
    return this.inner.forRun ? this.around(this.inner.forRun(run)) : this;
  }

  stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    return guardStream(this.run(request), this.label);
  }
}

/** Arguments as the JSON text of a tool call: `{}` when missing, a string kept as it is. */
export function argumentsText(value: unknown): string {
  if (value === undefined || value === null) return "{}";
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** The arguments as a JSON value when they parse, so the history shows objects, not escaped strings. */
export function argumentsValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The task of a `delegate_to_<agent>` call's arguments, when they carry one as a string. */
export function delegationTask(argumentsText: string): string | undefined {
  const value = argumentsValue(argumentsText);
  return isJsonObject(value) && typeof value.task === "string" ? value.task : undefined;
}

/** A fresh tool-call id in OpenAI's style (`call_` + 24 hex characters). */
export function newCallId(): string {
  return `call_${randomUUID().replaceAll("-", "").slice(0, 24)}`;
}

/** One line per tool: name, description and the JSON Schema of its arguments. */
export function describeTools(tools: readonly ToolDefinition[]): string {
  return tools
    .map((tool) => {
      const description = tool.description ? `: ${tool.description.trim()}` : "";
      return `- ${tool.name}${description}\n  arguments (JSON Schema): ${JSON.stringify(tool.parameters ?? { type: "object" })}`;
    })
    .join("\n");
}

/** The text of a tool result (images become `[image]`). */
export function toolResultText(result: ToolResultMessage): string {
  if (typeof result.content === "string") return result.content;
  return result.content.map((part) => (part.type === "text" ? part.text : "[image]")).join("");
}

/** How one protocol writes tool calls and tool results as text. */
export interface ConversationFormat {
  /** The text that replaces the tool calls of one assistant message. */
  toolCalls(calls: ToolCallPart[], message: AssistantMessage): string;
  /** The text of the user message that carries a run of consecutive tool results. */
  toolResults(results: ToolResultMessage[], callsById: ReadonlyMap<string, ToolCallPart>): string;
}

function appendUserContent(target: UserMessage, text: string): UserMessage {
  if (typeof target.content === "string") return { role: "user", content: `${target.content}\n\n${text}` };
  return { role: "user", content: [...target.content, { type: "text", text: `\n\n${text}` }] };
}

/**
 * Rewrites a conversation for a plain-text model: `systemAddition` is appended to the first
 * system message (or becomes one), assistant tool calls become text, each run of tool results
 * becomes one user message, and consecutive user messages are merged (chat templates of small
 * models often insist on alternating roles).
 */
export function renderConversation(messages: readonly Message[], format: ConversationFormat, systemAddition = ""): Message[] {
  const output: Message[] = [];
  const callsById = new Map<string, ToolCallPart>();
  let systemDone = systemAddition === "";
  let pendingResults: ToolResultMessage[] = [];

  const pushUser = (message: UserMessage) => {
    const last = output[output.length - 1];
    if (last?.role === "user") output[output.length - 1] = appendUserContent(last, typeof message.content === "string" ? message.content : contentText(message.content));
    else output.push(message);
  };
  const flushResults = () => {
    if (pendingResults.length === 0) return;
    pushUser({ role: "user", content: format.toolResults(pendingResults, callsById) });
    pendingResults = [];
  };

  for (const message of messages) {
    if (message.role === "tool") {
      pendingResults.push(message);
      continue;
    }
    flushResults();
    if (message.role === "system") {
      if (!systemDone) {
        output.push({ role: "system", content: `${message.content}\n\n${systemAddition}` });
        systemDone = true;
      } else output.push(message);
    } else if (message.role === "user") {
      pushUser(message);
    } else {
      const calls = message.content.filter((part): part is ToolCallPart => part.type === "tool-call");
      if (calls.length === 0) {
        output.push(message);
        continue;
      }
      for (const call of calls) callsById.set(call.id, call);
      const content: AssistantPart[] = message.content.filter((part) => part.type !== "tool-call");
      content.push({ type: "text", text: format.toolCalls(calls, message) });
      output.push({ role: "assistant", content });
    }
  }
  flushResults();
  if (!systemDone) output.unshift({ role: "system", content: systemAddition });
  return output;
}

/** Appends a user message, merged into the last message when that is a user message too. */
export function withUserText(messages: readonly Message[], text: string): Message[] {
  const output = [...messages];
  const last = output[output.length - 1];
  if (last?.role === "user") output[output.length - 1] = appendUserContent(last, text);
  else output.push({ role: "user", content: text });
  return output;
}

function contentText(content: Array<TextPart | { type: "image" }>): string {
  return content.map((part) => (part.type === "text" ? part.text : "[image]")).join("");
}

/**
 * The tool turns of the current input: assistant messages with tool calls since the user message
 * at `request.inputStart` (steering and loop-detection warnings are user messages too, but not
 * new inputs), or since the last user message when the caller does not say where the input began.
 */
export function toolTurnsOfInput(request: Pick<ModelRequest, "messages" | "inputStart">): AssistantMessage[] {
  const { messages, inputStart } = request;
  const turns: AssistantMessage[] = [];
  const from = inputStart !== undefined && messages[inputStart]?.role === "user" ? inputStart : undefined;
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (from === undefined ? message.role === "user" : index <= from) break;
    if (message.role === "assistant" && message.content.some((part) => part.type === "tool-call")) turns.unshift(message);
  }
  return turns;
}

/** What one inner model call said, after its events were relayed. */
export interface InnerCallSummary {
  text: string;
  /** Native tool calls the inner model made (already relayed). */
  nativeToolCalls: number;
  finishReason?: FinishReason;
  error?: AgentLoopError;
}

export interface RelayOptions {
  /** Relay the inner `response-start` (only the first inner call of a stream should). */
  forwardStart?: boolean;
  /** Called with each text delta; the events it returns are relayed. Default: keep the text back. */
  onText?(delta: string): ModelEvent[];
}

/**
 * Runs one inner call: reasoning and native tool-call events are relayed as they come, text goes
 * to `onText`, and the call's usage is relayed once, as one `usage` event at its end, so several
 * inner calls inside one stream add up (the inner `finish` is not relayed). Never throws.
 */
export async function* relayInnerCall(model: Model, request: ModelRequest, options: RelayOptions = {}): AsyncGenerator<ModelEvent, InnerCallSummary> {
  const summary: InnerCallSummary = { text: "", nativeToolCalls: 0 };
  let usage: Usage | undefined;
  if (request.signal?.aborted) {
    summary.error = abortError(request.signal);
    return summary;
  }
  try {
    for await (const event of model.stream(request)) {
      switch (event.type) {
        case "response-start":
          if (options.forwardStart) yield event;
          break;
        case "text-start":
        case "text-end":
          break;
        case "text-delta":
          summary.text += event.delta;
          if (options.onText) yield* options.onText(event.delta);
          break;
        case "reasoning-start":
        case "reasoning-delta":
        case "reasoning-end":
        case "tool-call-start":
        case "tool-call-delta":
          yield event;
          break;
        case "tool-call-end":
          summary.nativeToolCalls++;
          yield event;
          break;
        case "usage":
          usage = usage ? addUsage(usage, event.usage) : event.usage;
          break;
        case "finish":
          summary.finishReason = event.reason;
          if (event.usage) usage = event.usage;
          break;
        case "error":
          summary.error = event.error;
          break;
        default: {
          const unreachable: never = event;
          throw new Error(`unknown model event ${JSON.stringify(unreachable)}`);
        }
      }
      if (summary.error || summary.finishReason) break;
    }
  } catch (error) {
    summary.error = AgentLoopError.from(error);
  }
  if (!summary.error && !summary.finishReason) {
    summary.error = new AgentLoopError("unknown", `${model.provider} model stream ended without a finish event`, { provider: model.provider });
  }
  if (usage) yield { type: "usage", usage };
  return summary;
}

/** Emits the streamed text of a wrapper under one text id, opening it on the first delta. */
export class TextEmitter {
  private open = false;
  private used = false;
  constructor(private readonly id = "text-0") {}

  delta(text: string): ModelEvent[] {
    if (text === "") return [];
    const events: ModelEvent[] = [];
    if (!this.open) {
      events.push({ type: "text-start", id: this.id });
      this.open = true;
      this.used = true;
    }
    events.push({ type: "text-delta", id: this.id, delta: text });
    return events;
  }

  end(): ModelEvent[] {
    if (!this.open) return [];
    this.open = false;
    return [{ type: "text-end", id: this.id }];
  }

  get emitted(): boolean {
    return this.used;
  }
}

/** The `finish` of a wrapper's last inner call: `tool-calls` when it made native calls, else its own reason. */
export function closingFinish(summary: InnerCallSummary): ModelEvent {
  return summary.nativeToolCalls > 0 ? finishEvent("tool-calls", summary.finishReason) : { type: "finish", reason: summary.finishReason ?? { unified: "stop" } };
}

/** The final-response call of the action and plan protocols: one inner call whose text streams to the caller. */
export async function* streamFinalResponse(inner: Model, request: ModelRequest, messages: Message[], forwardStart: boolean): AsyncGenerator<ModelEvent> {
  const emitter = new TextEmitter();
  const summary = yield* relayInnerCall(inner, innerRequest(request, messages), { forwardStart, onText: (delta) => emitter.delta(delta) });
  if (summary.error) return yield { type: "error", error: summary.error };
  yield* emitter.end();
  yield closingFinish(summary);
}

/** The events of one complete tool call. */
export function toolCallEvents(call: { id: string; name: string; arguments: string; providerData?: Record<string, unknown> }): ModelEvent[] {
  return [
    { type: "tool-call-start", id: call.id, name: call.name },
    { type: "tool-call-delta", id: call.id, delta: call.arguments },
    { type: "tool-call-end", id: call.id, name: call.name, arguments: call.arguments, ...(call.providerData ? { providerData: call.providerData } : {}) },
  ];
}

/**
 * Enforces the Model contract around a wrapper's generator: anything thrown becomes an `error`
 * event, and a stream that ends without `finish` or `error` gets an error naming the wrapper.
 */
export async function* guardStream(source: AsyncIterable<ModelEvent>, label: string): AsyncGenerator<ModelEvent> {
  let ended = false;
  try {
    for await (const event of source) {
      yield event;
      if (event.type === "finish" || event.type === "error") {
        ended = true;
        return;
      }
    }
  } catch (error) {
    ended = true;
    yield { type: "error", error: AgentLoopError.from(error) };
    return;
  }
  if (!ended) yield { type: "error", error: new AgentLoopError("unknown", `${label}: stream ended without a finish event`) };
}

/**
 * The request for the inner model: same options and signal, no native tools and no native output
 * format (the protocol's replies are text; the loop asks for structured output in the instructions).
 */
export function innerRequest(request: ModelRequest, messages: Message[]): ModelRequest {
  // inputStart indexes the caller's messages, not these.
  const { tools: _tools, toolChoice: _toolChoice, inputStart: _inputStart, responseFormat: _format, ...rest } = request;
  return { ...rest, messages };
}

/** A `finish` event with the given unified reason, keeping the inner raw reason. */
export function finishEvent(unified: FinishReason["unified"], inner?: FinishReason): ModelEvent {
  return { type: "finish", reason: { unified, raw: inner?.raw ?? unified } };
}

/** A text-only Model answer (used for fixed answers such as the action protocol's step limit). */
export function* fixedTextAnswer(text: string, raw = "stop"): Generator<ModelEvent> {
  const emitter = new TextEmitter();
  yield* emitter.delta(text);
  yield* emitter.end();
  yield { type: "finish", reason: { unified: raw === "stop" ? "stop" : "other", raw } };
}

/** The events of `stream` with its finish marked as the protocol's step limit (STEP_LIMIT_FINISH). */
export async function* asStepLimit(stream: AsyncIterable<ModelEvent>): AsyncGenerator<ModelEvent> {
  for await (const event of stream) yield event.type === "finish" ? { ...event, reason: { unified: "other", raw: STEP_LIMIT_FINISH } } : event;
}

/** A protocol's step limit (`maxSteps`, `maxWaves`): a positive integer, 5 when unset. */
export function stepLimit(value: number | undefined, label: string): number {
  const limit = value ?? 5;
  if (!Number.isInteger(limit) || limit < 1) throw new TypeError(`${label} must be a positive integer, got ${String(value)}`);
  return limit;
}
