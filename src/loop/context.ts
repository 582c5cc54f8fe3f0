/**
 * The context budget (`AgentConfig.context`): before each model call the request is measured and,
 * when over budget, the oldest exchanges are left out of the request (never out of the transcript).
 *
 * A request is measured as the provider's last reported input tokens plus an estimate of what was
 * added since (minus what is no longer sent); before any report, as an estimate of everything.
 * What can be removed, oldest first, in whole units:
 * - before the current input: exchanges (a user message and everything up to the next user message);
 * - within the current input: tool rounds (an assistant message with its tool results);
 * never a system message (each stays where it is, as it is), never the current input, never the
 * current wave (the last assistant message and what follows it). A tool call is thus never
 * separated from its result. The removed part is replaced by one message (a user message unless
 * `markerRole` says otherwise): a marker saying
 * what was removed, or with `summarize`, a summary made by one model call.
 */
import { AgentLoopError } from "../errors.js";
import type { Message } from "../messages.js";
import { generate, type Model, type ModelRequest } from "../model/model.js";
import { keepShape } from "../shapes.js";
import type { Usage } from "../usage.js";
import type { LoopEvent } from "./events.js";

export interface ContextBudget {
  /** Most input tokens a request may have (as measured; see `estimator`). */
  maxTokens: number;
  /** `trim` (default) replaces what was removed by a marker; `summarize` by a summary (one model call). */
  strategy?: "trim" | "summarize";
  /**
   * With `summarize`: the model that writes the summary (default: the agent's model), or a function
   * that returns the summary of the removed messages.
   */
  summarizer?: Model | ((removed: readonly Message[]) => string | Promise<string>);
  /** Estimated tokens of one message (default: characters / 4, 4 per message, 500 per image). */
  estimator?: (message: Message) => number;
  /**
   * `false`: measure with the estimator alone, never the provider's reported input tokens (for a
   * budget in other units, such as characters). Default `true`.
   */
  useReportedUsage?: boolean;
  /** Room kept for the marker or summary when trimming (default 40 for `trim`; for `summarize` a tenth of the budget, at most 1000). */
  reserveTokens?: number;
  /** The text of the message that stands for the removed part (default: an `[agentloop]` note). */
  marker?: (removal: { messages: readonly Message[]; summary?: string }) => string;
  /** The role of that message (default `user`; `system` where the system messages stay in place, as Prompty's vectors have it). */
  markerRole?: "user" | "system";
}

/** What the loop hands over to shape one request. */
export interface WindowRequest {
  /** The whole transcript. */
  messages: Message[];
  /** Index of the current input's user message in `messages`. */
  inputIndex: number;
  turn: number;
  runId: string;
  model: Model;
  signal: AbortSignal;
  emit(event: LoopEvent): void;
}

/** Default estimate: about four characters a token. */
export function estimateTokens(message: Message): number {
  let chars = 0;
  let images = 0;
  const content = message.content;
  if (typeof content === "string") chars += content.length;
  else {
    for (const part of content) {
      if (part.type === "image") images++;
      else if (part.type === "tool-call") chars += part.name.length + part.arguments.length + 16;
      else chars += part.text.length;
    }
  }
  if (message.role === "tool") chars += message.toolName.length;
  return 4 + Math.ceil(chars / 4) + images * 500;
}

export function checkContextBudget(budget: unknown): void {
  if (budget === undefined) return;
  const value = budget as ContextBudget;
  if (typeof value !== "object" || value === null) throw new TypeError(`Agent config: context must be an object like { maxTokens: 100000 }, got ${JSON.stringify(budget)}`);
  if (typeof value.maxTokens !== "number" || !Number.isInteger(value.maxTokens) || value.maxTokens < 1) {
    throw new TypeError(`Agent config: context.maxTokens must be a positive integer, got ${JSON.stringify(value.maxTokens)}`);
  }
  if (value.strategy !== undefined && value.strategy !== "trim" && value.strategy !== "summarize") {
    throw new TypeError(`Agent config: context.strategy must be "trim" or "summarize", got ${JSON.stringify(value.strategy)}`);
  }
  const summarizer = value.summarizer as unknown;
  if (summarizer !== undefined && typeof summarizer !== "function" && typeof (summarizer as Model | null)?.stream !== "function") {
    throw new TypeError("Agent config: context.summarizer must be a Model or a function (removed messages) => summary");
  }
  if (value.markerRole !== undefined && value.markerRole !== "user" && value.markerRole !== "system") {
    throw new TypeError(`Agent config: context.markerRole must be "user" or "system", got ${JSON.stringify(value.markerRole)}`);
  }
  if (value.estimator !== undefined && typeof value.estimator !== "function") throw new TypeError("Agent config: context.estimator must be a function (message) => tokens");
}

interface Removal {
  removed: Message[];
  marker: Message;
  summary?: string;
}

/** Rough size of the tool definitions, counted before the provider reports anything. */
function definitionsTokens(request: ModelRequest): number {
  return request.tools ? Math.ceil(JSON.stringify(request.tools).length / 4) : 0;
}

/**
 * The context window of one run: measures requests, trims them, remembers the provider's reports
 * and the last removal (so a summary is made again only when more was removed).
 */
export class ContextWindow {
  /** Made on first use: a run without a budget never measures (a WeakMap per run costs the collector). */
  private sizes?: WeakMap<Message, number>;
  private base?: { tokens: number; messages: Set<Message> };
  private last?: Removal;

  constructor(private readonly budget: ContextBudget | undefined) {}

  private size(message: Message): number {
    this.sizes ??= new WeakMap();
    let size = this.sizes.get(message);
    if (size === undefined) {
      size = (this.budget?.estimator ?? estimateTokens)(message);
      this.sizes.set(message, size);
    }
    return size;
  }

  /** The measured input tokens of a request's messages. */
  measure(messages: readonly Message[], request?: ModelRequest): number {
    const base = this.budget?.useReportedUsage === false ? undefined : this.base;
    if (!base) {
      let total = request ? definitionsTokens(request) : 0;
      for (const message of messages) total += this.size(message);
      return total;
    }
    let total = base.tokens;
    const sent = new Set<Message>();
    for (const message of messages) {
      sent.add(message);
      if (!base.messages.has(message)) total += this.size(message);
    }
    for (const message of base.messages) if (!sent.has(message)) total -= this.size(message);
    return Math.max(0, total);
  }

  /** Records the provider's report for a request that was sent (only when there is a budget to measure against). */
  reported(request: ModelRequest, usage: Usage): void {
    if (this.budget && this.budget.useReportedUsage !== false && usage.inputTokens > 0) this.base = { tokens: usage.inputTokens, messages: new Set(request.messages) };
  }

  /** The request to send: as given when it fits the budget, else trimmed (and a `context-trimmed` event). */
  async fit(request: ModelRequest, window: WindowRequest): Promise<ModelRequest> {
    if (!this.budget) return request;
    return this.trim(request, window, this.budget.maxTokens, "budget");
  }

  /**
   * After the provider said the request is too long: a request a quarter smaller than measured (and
   * within the budget, if any), or undefined when nothing more can be removed.
   */
  async shrink(request: ModelRequest, window: WindowRequest): Promise<ModelRequest | undefined> {
    const measured = this.measure(request.messages, request);
    const target = Math.min(this.budget?.maxTokens ?? Number.POSITIVE_INFINITY, Math.floor(measured * 0.75));
    // The provider's count was wrong for this request: estimates only from here on.
    this.base = undefined;
    const trimmed = await this.trim({ ...request, messages: window.messages.slice() }, window, target, "context_length");
    return trimmed.messages.length < request.messages.length || trimmed.messages.some((message, index) => message !== request.messages[index]) ? trimmed : undefined;
  }

  private async trim(request: ModelRequest, window: WindowRequest, target: number, reason: "budget" | "context_length"): Promise<ModelRequest> {
    const messages = request.messages;
    const before = this.measure(messages, request);
    if (before <= target) return request;
    const units = removableUnits(messages, window.inputIndex);
    const strategy = this.budget?.strategy ?? "trim";
    // Room for the marker or the summary.
    const reserve = this.budget?.reserveTokens ?? (strategy === "summarize" ? Math.min(1000, Math.floor(target * 0.1)) : 40);
    let total = before;
    let count = 0;
    while (count < units.length && total > target - reserve) {
      for (const index of units[count]!) total -= this.size(messages[index]!);
      count++;
    }
    if (count === 0) return request;
    const removedIndexes = units
      .slice(0, count)
      .flat()
      .sort((a, b) => a - b);
    const removed = removedIndexes.map((index) => messages[index]!);
    const removal = await this.removal(removed, window, strategy);
    const dropped = new Set(removedIndexes);
    const kept: Message[] = [];
    for (let index = 0; index < messages.length; index++) {
      if (index === removedIndexes[0]) kept.push(removal.marker);
      if (!dropped.has(index)) kept.push(messages[index]!);
    }
    const after = this.measure(kept, request);
    const event = {
      type: "context-trimmed" as const,
      runId: window.runId,
      turn: window.turn,
      reason,
      strategy,
      removedMessages: removed.length,
      removedExchanges: count,
      removedIndexes,
      keptMessages: kept.length - 1,
      tokensBefore: before,
      tokensAfter: after,
      maxTokens: target,
      ...(removal.summary !== undefined ? { summary: removal.summary } : {}),
      ...(summaryFailure.get(removal) ? { summaryError: summaryFailure.get(removal) } : {}),
    };
    // The request as sent, for consumers that show it (not serialized with the event).
    Object.defineProperty(event, "messages", { value: kept, enumerable: false });
    window.emit(event as LoopEvent);
    // The input's position in the request moved with what was removed (text protocols count from it).
    const input = messages[window.inputIndex];
    return { ...request, messages: kept, ...(request.inputStart !== undefined && input ? { inputStart: kept.indexOf(input) } : {}) };
  }

  /** The marker (or summary) for a removal: the last one again when the same messages were removed. */
  private async removal(removed: Message[], window: WindowRequest, strategy: "trim" | "summarize"): Promise<Removal> {
    const last = this.last;
    if (last && last.removed.length === removed.length && last.removed.every((message, index) => message === removed[index])) return last;
    const budget = this.budget;
    let summary: string | undefined;
    let failure: string | undefined;
    if (strategy === "summarize") {
      // Only what was not summarized yet goes to the summarizer, with the previous summary.
      const grew = last?.summary !== undefined && last.removed.every((message, index) => message === removed[index]);
      const fresh = grew ? removed.slice(last!.removed.length) : removed;
      try {
        summary = await summarize(budget?.summarizer ?? window.model, fresh, grew ? last!.summary : undefined, window.signal);
      } catch (error) {
        failure = AgentLoopError.from(error).message;
      }
    }
    const text = budget?.marker
      ? budget.marker({ messages: removed, summary })
      : summary !== undefined
        ? `[agentloop] ${removed.length} earlier messages were left out to fit the context budget. Summary of them:\n${summary}`
        : `[agentloop] ${removed.length} earlier messages were left out to fit the context budget.`;
    const removal: Removal = { removed, marker: { role: budget?.markerRole ?? "user", content: text }, summary };
    if (failure) summaryFailure.set(removal, failure);
    this.last = removal;
    return removal;
  }
}
keepShape(new ContextWindow(undefined)); // see src/shapes.ts

const summaryFailure = new WeakMap<Removal, string>();

/**
 * The indexes of the messages that may be removed, in units, oldest first: exchanges before the
 * current input, tool rounds within it; never a system message, the input or the current wave.
 * A tool result and the assistant message that asked for it are never apart: a result goes in its
 * call's unit wherever it stands (a history may put a message between them), and the current wave
 * reaches back to the call of every result it holds.
 */
export function removableUnits(messages: readonly Message[], inputIndex: number): number[][] {
  // Where each tool call was asked.
  const askedAt = new Map<string, number>();
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index]!;
    if (message.role === "assistant") for (const part of message.content) if (part.type === "tool-call") askedAt.set(part.id, index);
  }
  let waveStart = messages.length;
  for (let index = messages.length - 1; index > inputIndex; index--) {
    if (messages[index]!.role === "assistant") {
      waveStart = index;
      break;
    }
  }
  // Scanning back, a result of the kept tail keeps its call (and what lies between) too.
  for (let index = messages.length - 1; index >= waveStart; index--) {
    const message = messages[index]!;
    if (message.role === "tool") waveStart = Math.min(waveStart, askedAt.get(message.toolCallId) ?? waveStart);
  }
  const units: number[][] = [];
  const unitOf = new Map<number, number[]>();
  let unit: number[] | undefined;
  for (let index = 0; index < waveStart; index++) {
    const message = messages[index]!;
    if (index === inputIndex) {
      unit = undefined;
      continue;
    }
    if (message.role === "system") continue;
    const asked = message.role === "tool" ? unitOf.get(askedAt.get(message.toolCallId) ?? -1) : undefined;
    if (asked && asked !== unit) {
      asked.push(index); // goes with its call, out of the unit it stands in
      continue;
    }
    const starts = index < inputIndex ? message.role === "user" : message.role === "assistant";
    if (starts || !unit) {
      unit = [];
      units.push(unit);
    }
    unit.push(index);
    unitOf.set(index, unit);
  }
  return units;
}

/** Removed messages as plain text for a summarizer. */
export function transcriptText(messages: readonly Message[]): string {
  const lines: string[] = [];
  const clip = (text: string) => (text.length > 2000 ? `${text.slice(0, 2000)}…` : text);
  for (const message of messages) {
    if (message.role === "tool") {
      const content = typeof message.content === "string" ? message.content : message.content.map((part) => (part.type === "text" ? part.text : "[image]")).join("");
      lines.push(`Tool ${message.toolName} returned: ${clip(content)}`);
    } else if (message.role === "assistant") {
      for (const part of message.content) {
        if (part.type === "text" && part.text) lines.push(`Assistant: ${clip(part.text)}`);
        else if (part.type === "tool-call") lines.push(`Assistant called ${part.name}(${clip(part.arguments)})`);
      }
    } else {
      const content = typeof message.content === "string" ? message.content : message.content.map((part) => (part.type === "text" ? part.text : "[image]")).join("");
      lines.push(`${message.role === "user" ? "User" : "System"}: ${clip(content)}`);
    }
  }
  return lines.join("\n");
}

async function summarize(summarizer: NonNullable<ContextBudget["summarizer"]>, removed: Message[], previous: string | undefined, signal: AbortSignal): Promise<string> {
  if (typeof summarizer === "function") return String(await summarizer(removed));
  const model = summarizer.forRun?.() ?? summarizer;
  const text = transcriptText(removed);
  const response = await generate(model, {
    messages: [
      {
        role: "system",
        content:
          "Summarize the conversation below for an assistant that will continue it without seeing it: keep facts, decisions, tool results and open questions. Answer with the summary only.",
      },
      { role: "user", content: previous ? `Summary so far:\n${previous}\n\nMore of the conversation:\n${text}` : text },
    ],
    options: { maxOutputTokens: 1000 },
    signal,
  });
  if (response.error) throw response.error;
  const summary = response.message.content.map((part) => (part.type === "text" ? part.text : "")).join("").trim();
  if (!summary) throw new AgentLoopError("unknown", "the summarizer returned an empty summary");
  return summary;
}
