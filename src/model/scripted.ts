import { onAbort } from "../abort.js";
import { abortError } from "../errors.js";
import type { Usage } from "../usage.js";
import type { Model, ModelEvent, ModelRequest } from "./model.js";

/** How many requests a scripted model (with its per-run copies) keeps in `requests`: the most recent. */
export const MAX_RECORDED_REQUESTS = 1000;

/** The answer a scripted model gives once its script is used up. */
export const NO_MORE_MOCK_RESPONSES = "[no more mock responses]";

export interface ScriptedModelOptions {
  /**
   * Pacing of the streamed chunks, to make streaming (and aborting it) observable: chunk k (from 1)
   * is due `k × chunkDelayMs` after the stream started, like a model that produces tokens at its own
   * rate whether or not the reader keeps up. A reader that falls behind gets the chunks that are
   * already due at once (one timer turn apart, so an abort still lands between them); time spent
   * handling a chunk does not push the later ones back.
   */
  chunkDelayMs?: number;
  modelId?: string;
  /**
   * One script for a whole chat: each new input goes on after the entries the earlier inputs used
   * (`agentloop chat`, whose runs need not see the earlier turns). Default false: each input starts
   * the script again.
   */
  continueAcrossRuns?: boolean;
}

interface ScriptedToolCall {
  id?: string;
  name: string;
  arguments?: unknown;
}

/** One script entry, read: its text, its tool calls and the text's streamed chunks. */
interface ParsedEntry {
  content: string;
  toolCalls: ScriptedToolCall[];
  chunks: string[];
}

/**
 * Parses a script the way `DEBUG_MOCK_RESPONSES` is read: a JSON array of strings; a non-array
 * JSON value is wrapped in a list; text that is not JSON becomes a one-entry list of itself.
 */
export function parseMockResponses(script: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(script);
  } catch {
    return [script];
  }
  const list = Array.isArray(value) ? value : [value];
  return list.map((entry) => (typeof entry === "string" ? entry : JSON.stringify(entry)));
}

/** Reads one entry: `{"tool_calls":[...], "content"?}` becomes tool calls; anything else is text. */
export function parseScriptEntry(entry: string): { content: string; toolCalls: ScriptedToolCall[] } {
  const trimmed = entry.trim();
  if (trimmed.startsWith("{")) {
    try {
      const parsed = JSON.parse(trimmed) as { tool_calls?: unknown; content?: unknown };
      if (parsed && Array.isArray(parsed.tool_calls)) {
        const toolCalls = parsed.tool_calls.filter(
          (call): call is ScriptedToolCall => typeof call === "object" && call !== null && typeof (call as ScriptedToolCall).name === "string",
        );
        return { content: typeof parsed.content === "string" ? parsed.content : "", toolCalls };
      }
    } catch {
      // not JSON: plain text
    }
  }
  return { content: entry, toolCalls: [] };
}

/** Word-sized chunks that join back to the original text. */
export function wordChunks(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);
}

function estimateTokens(text: string): number {
  return text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4));
}

function requestText(request: ModelRequest): string {
  let text = "";
  for (const message of request.messages) {
    if (typeof message.content === "string") text += message.content;
    else for (const part of message.content) if ("text" in part && typeof part.text === "string") text += part.text;
    if (message.role === "assistant") for (const part of message.content) if (part.type === "tool-call") text += part.arguments;
  }
  return text;
}

/**
 * The turns the model already took for the current input: the assistant messages after the user
 * message that started it (`request.inputStart`, else the last user message). Steering and loop
 * warnings are user messages too, but not new inputs.
 */
export function turnsOfInput(request: Pick<ModelRequest, "messages" | "inputStart">): number {
  const { messages, inputStart } = request;
  let from = inputStart !== undefined && messages[inputStart]?.role === "user" ? inputStart : -1;
  if (from === -1) for (let index = messages.length - 1; index >= 0 && from === -1; index--) if (messages[index]!.role === "user") from = index;
  let turns = 0;
  for (let index = from + 1; index < messages.length; index++) if (messages[index]!.role === "assistant") turns++;
  return turns;
}

/**
 * A deterministic model that answers from a script. It answers from the conversation it is given,
 * as a real model does: the entry for a request is the one after the assistant turns the current
 * input already has (`turnsOfInput`), so each input starts the script again, and a resumed,
 * recovered, retried or replicated run gets the same answer to the same conversation. With
 * `continueAcrossRuns`, each new input goes on where the previous one stopped. Every request it
 * receives is kept in `requests` for inspection.
 */
export class ScriptedModel implements Model {
  readonly provider = "scripted";
  readonly modelId: string;
  /** The requests received (the last 1000). */
  readonly requests: ModelRequest[] = [];
  private readonly entries: string[];
  /** Each entry read once (`parseScriptEntry` and its word chunks). */
  private readonly parsed: Array<ParsedEntry | undefined> = [];
  /** How many entries were answered (the highest position answered, plus one). */
  private used = 0;
  /** With `continueAcrossRuns`: the entry the current input started at. */
  private inputBase?: number;
  private callCounter = 0;

  constructor(
    script: string | readonly string[],
    private readonly options: ScriptedModelOptions = {},
  ) {
    this.entries = typeof script === "string" ? parseMockResponses(script) : [...script];
    this.modelId = options.modelId ?? "scripted";
  }

  /** The script position of a request (see the class comment). */
  private position(request: ModelRequest): number {
    const turns = turnsOfInput(request);
    if (!this.options.continueAcrossRuns) return turns;
    // A new input (no turns yet) starts after what the earlier inputs used; a model that first sees
    // an input with turns (a resumed or recovered chat in a new process) places it from the start.
    if (turns === 0 || this.inputBase === undefined) this.inputBase = Math.max(0, this.used - turns);
    return this.inputBase + turns;
  }

  private entry(index: number): ParsedEntry {
    let parsed = this.parsed[index];
    if (!parsed) {
      const { content, toolCalls } = parseScriptEntry(index < this.entries.length ? this.entries[index] : NO_MORE_MOCK_RESPONSES);
      parsed = { content, toolCalls, chunks: content ? wordChunks(content) : [] };
      this.parsed[index] = parsed;
    }
    return parsed;
  }

  /** How many script entries are left after the furthest one answered. */
  get remaining(): number {
    return Math.max(0, this.entries.length - this.used);
  }

  stream(request: ModelRequest): AsyncIterableIterator<ModelEvent> {
    return new ScriptedStream(this, request);
  }

  /** The next script entry as the events of one response (the stream's first `next()` takes it). */
  takeResponse(request: ModelRequest): Array<ScriptedStep | ScriptedChunks> {
    this.requests.push(request);
    // Bounded: a long-lived scripted model (a server on DEBUG_MOCK_RESPONSES) must not grow forever.
    // shift(), not splice(0, n): V8 moves the start of the array for a shift (~0.05 µs) but
    // copies all 1000 entries for a splice (~4 µs per request on a busy server).
    while (this.requests.length > MAX_RECORDED_REQUESTS) this.requests.shift();
    const position = this.position(request);
    this.used = Math.max(this.used, position + 1);
    const { content, toolCalls, chunks } = this.entry(Math.min(position, this.entries.length));
    const paced = (this.options.chunkDelayMs ?? 0) > 0;
    const steps: Array<ScriptedStep | ScriptedChunks> = [{ event: { type: "response-start", model: this.modelId }, paced: false, checkAbort: false }];
    let output = "";
    // Tool calls are announced first, as OpenAI-style streams do, so the turn is known to be a
    // tool turn from its first chunk; the entry's content is then commentary.
    const calls = toolCalls.map((call) => ({
      id: call.id ?? `call_${++this.callCounter}_${Math.random().toString(36).slice(2, 8)}`,
      name: call.name,
      args: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {}),
    }));
    for (const call of calls) steps.push({ event: { type: "tool-call-start", id: call.id, name: call.name }, paced: false, checkAbort: false });
    if (content) {
      steps.push({ event: { type: "text-start", id: "text-0" }, paced: false, checkAbort: false });
      // The deltas are made as they are reached: a long answer keeps no event per chunk alive.
      output += content;
      if (chunks.length > 0) steps.push({ chunks, paced });
      steps.push({ event: { type: "text-end", id: "text-0" }, paced: false, checkAbort: false });
    }
    for (const call of calls) {
      output += call.name + call.args;
      steps.push({ event: { type: "tool-call-delta", id: call.id, delta: call.args }, paced, checkAbort: true });
      steps.push({ event: { type: "tool-call-end", id: call.id, name: call.name, arguments: call.args }, paced: false, checkAbort: false });
    }
    const usage: Usage = { inputTokens: estimateTokens(requestText(request)), outputTokens: estimateTokens(output), totalTokens: 0 };
    usage.totalTokens = usage.inputTokens + usage.outputTokens;
    steps.push({ event: { type: "usage", usage }, paced: false, checkAbort: false });
    steps.push({
      event: { type: "finish", reason: toolCalls.length > 0 ? { unified: "tool-calls", raw: "tool_calls" } : { unified: "stop", raw: "stop" } },
      paced: false,
      checkAbort: false,
    });
    // The stream checks the signal once after response-start, before anything else.
    // (Never a chunks step: text-start, a tool-call-start or usage comes first.)
    if (steps.length > 1) (steps[1] as ScriptedStep).checkAbort = true;
    return steps;
  }

  /** Milliseconds between paced chunks. */
  get chunkDelayMs(): number {
    return this.options.chunkDelayMs ?? 0;
  }
}

/** One event of a scripted response: `paced` waits for its deadline first; `checkAbort` ends the stream there if the signal fired. */
interface ScriptedStep {
  event: ModelEvent;
  paced: boolean;
  checkAbort: boolean;
}

/** The text deltas of a response, one `text-delta` step per chunk (each checks the abort). */
interface ScriptedChunks {
  chunks: readonly string[];
  paced: boolean;
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * One scripted response as an async iterator, written by hand rather than as an async generator:
 * a paced chunk costs one timer and one promise, and an unpaced event a resolved promise. Paced
 * chunk k (from 1) is due `k × chunkDelayMs` after the first `next()`. An abort cuts the current
 * wait short and ends the stream with an `aborted` error event; `return()` ends it at once.
 */
class ScriptedStream implements AsyncIterableIterator<ModelEvent> {
  private steps?: Array<ScriptedStep | ScriptedChunks>;
  private index = 0;
  /** The next chunk of the `ScriptedChunks` step at `index`. */
  private chunk = 0;
  private finished = false;
  private started = 0;
  private due = 0;
  private timer?: ReturnType<typeof setTimeout>;
  /** The pending paced `next()`: its step and how to settle it. */
  private waiting?: { step: ScriptedStep; resolve: (result: IteratorResult<ModelEvent>) => void; settled: Promise<IteratorResult<ModelEvent>> };
  private unlink: () => void = () => undefined;

  constructor(
    private readonly model: ScriptedModel,
    private readonly request: ModelRequest,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<ModelEvent>> {
    // A `next()` while one is pending waits its turn, as an async generator's would.
    if (this.waiting) return this.waiting.settled.then(() => this.next());
    if (this.finished) return Promise.resolve(DONE);
    if (!this.steps) {
      this.steps = this.model.takeResponse(this.request);
      this.started = performance.now();
      // One abort listener per stream, not one per chunk: it cuts the current wait short.
      if (this.model.chunkDelayMs > 0) this.unlink = onAbort(this.request.signal, () => this.wake());
    }
    const step = this.nextStep();
    if (step.paced) this.due += this.model.chunkDelayMs;
    // Already aborted: no wait for the deadline.
    if (!step.paced || this.request.signal?.aborted) return Promise.resolve(this.result(step));
    let resolve!: (result: IteratorResult<ModelEvent>) => void;
    const settled = new Promise<IteratorResult<ModelEvent>>((settle) => {
      resolve = settle;
    });
    this.waiting = { step, resolve, settled };
    this.timer = setTimeout(this.onDue, Math.max(0, Math.round(this.started + this.due - performance.now())));
    return settled;
  }

  return(): Promise<IteratorResult<ModelEvent>> {
    this.end();
    return Promise.resolve(DONE);
  }

  private nextStep(): ScriptedStep {
    const step = this.steps![this.index];
    if (!("chunks" in step)) {
      this.index++;
      return step;
    }
    const delta = step.chunks[this.chunk++];
    if (this.chunk === step.chunks.length) {
      this.index++;
      this.chunk = 0;
    }
    return { event: { type: "text-delta", id: "text-0", delta }, paced: step.paced, checkAbort: true };
  }

  private readonly onDue = (): void => {
    const waiting = this.waiting;
    this.waiting = undefined;
    this.timer = undefined;
    waiting?.resolve(this.result(waiting.step));
  };

  /** The signal fired: a pending wait ends now (its step then reports the abort). */
  private wake(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.onDue();
  }

  private result(step: ScriptedStep): IteratorResult<ModelEvent> {
    const signal = this.request.signal;
    if (step.checkAbort && signal?.aborted) {
      this.end();
      return { done: false, value: { type: "error", error: abortError(signal) } };
    }
    if (step.event.type === "finish") this.end();
    return { done: false, value: step.event };
  }

  private end(): void {
    this.finished = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.resolve(DONE);
    this.unlink();
  }
}

/** The scripted model from `DEBUG_MOCK_RESPONSES`, or undefined when the variable is not set. */
export function scriptedModelFromEnv(env: NodeJS.ProcessEnv = process.env): ScriptedModel | undefined {
  const script = env.DEBUG_MOCK_RESPONSES;
  return script === undefined || script === "" ? undefined : new ScriptedModel(script);
}
