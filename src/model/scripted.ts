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
}

interface ScriptedToolCall {
  id?: string;
  name: string;
  arguments?: unknown;
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
 * A deterministic model that answers from a script, one entry per call. The script restarts
 * for every run (`forRun`). Every request it receives is kept in `requests` for inspection.
 */
export class ScriptedModel implements Model {
  readonly provider = "scripted";
  readonly modelId: string;
  /** The requests received, by this model and by the per-run copies made from it (the last 1000). */
  readonly requests: ModelRequest[];
  private readonly entries: string[];
  private cursor = 0;
  private callCounter = 0;

  constructor(
    script: string | readonly string[],
    private readonly options: ScriptedModelOptions = {},
    requests: ModelRequest[] = [],
  ) {
    this.entries = typeof script === "string" ? parseMockResponses(script) : [...script];
    this.modelId = options.modelId ?? "scripted";
    this.requests = requests;
  }

  /** A copy whose script starts again from the first entry (each run reads the script anew). */
  forRun(): ScriptedModel {
    return new ScriptedModel(this.entries, this.options, this.requests);
  }

  /** How many script entries are left. */
  get remaining(): number {
    return this.entries.length - this.cursor;
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
    this.requests.push(request);
    // Bounded: a long-lived scripted model (a server on DEBUG_MOCK_RESPONSES) must not grow forever.
    if (this.requests.length > MAX_RECORDED_REQUESTS) this.requests.splice(0, this.requests.length - MAX_RECORDED_REQUESTS);
    const signal = request.signal;
    const entry = this.cursor < this.entries.length ? this.entries[this.cursor++] : NO_MORE_MOCK_RESPONSES;
    const { content, toolCalls } = parseScriptEntry(entry);
    const delay = this.options.chunkDelayMs ?? 0;
    const aborted = () => signal?.aborted === true;
    // One abort listener per stream, not one per chunk: it cuts the current pause short.
    let wake: (() => void) | undefined;
    const unlink = delay > 0 ? onAbort(signal, () => wake?.()) : () => undefined;
    const started = performance.now();
    let due = 0;
    // Waits until the next chunk is due (deadlines from the start, so waits never add up drift).
    const pause = () =>
      new Promise<void>((resolve) => {
        due += delay;
        const timer = setTimeout(resolve, Math.max(0, Math.round(started + due - performance.now())));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });

    try {
      yield { type: "response-start", model: this.modelId };
      if (aborted()) return yield { type: "error", error: abortError(signal) };
      let output = "";
      // Tool calls are announced first, as OpenAI-style streams do, so the turn is known to be a
      // tool turn from its first chunk; the entry's content is then commentary.
      const calls = toolCalls.map((call) => ({
        id: call.id ?? `call_${++this.callCounter}_${Math.random().toString(36).slice(2, 8)}`,
        name: call.name,
        args: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments ?? {}),
      }));
      for (const call of calls) yield { type: "tool-call-start", id: call.id, name: call.name };
      if (content) {
        yield { type: "text-start", id: "text-0" };
        for (const chunk of wordChunks(content)) {
          if (delay > 0) await pause();
          if (aborted()) return yield { type: "error", error: abortError(signal) };
          output += chunk;
          yield { type: "text-delta", id: "text-0", delta: chunk };
        }
        yield { type: "text-end", id: "text-0" };
      }
      for (const call of calls) {
        if (delay > 0) await pause();
        if (aborted()) return yield { type: "error", error: abortError(signal) };
        output += call.name + call.args;
        yield { type: "tool-call-delta", id: call.id, delta: call.args };
        yield { type: "tool-call-end", id: call.id, name: call.name, arguments: call.args };
      }
      const usage: Usage = { inputTokens: estimateTokens(requestText(request)), outputTokens: estimateTokens(output), totalTokens: 0 };
      usage.totalTokens = usage.inputTokens + usage.outputTokens;
      yield { type: "usage", usage };
      yield {
        type: "finish",
        reason: toolCalls.length > 0 ? { unified: "tool-calls", raw: "tool_calls" } : { unified: "stop", raw: "stop" },
      };
    } finally {
      unlink();
    }
  }
}

/** The scripted model from `DEBUG_MOCK_RESPONSES`, or undefined when the variable is not set. */
export function scriptedModelFromEnv(env: NodeJS.ProcessEnv = process.env): ScriptedModel | undefined {
  const script = env.DEBUG_MOCK_RESPONSES;
  return script === undefined || script === "" ? undefined : new ScriptedModel(script);
}
