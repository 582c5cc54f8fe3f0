/**
 * Google Gemini adapter, native (`generateContent` / `streamGenerateContent?alt=sse`). It speaks the
 * wire directly on the same path as Chat Completions (`../http.ts`: node:http keep-alive sockets,
 * SSE through `eventsource-parser`): no SDK is loaded.
 *
 * Wire format: system text goes to `systemInstruction`; the model's turn is `role: "model"` with
 * its parts in order (`text`, `thought` summaries, `functionCall`), each part sent back with its
 * `thoughtSignature` unchanged (Gemini 3 rejects a tool turn without them); all tool results of one
 * wave go in ONE `role: "user"` content of `functionResponse` parts; consecutive contents of the
 * same role are merged.
 */
import type { ImagePart, Message, ProviderData, TextPart } from "../../messages.js";
import type { FinishReason, ModelEvent, ModelRequest, ToolChoice, UnifiedFinishReason } from "../../model/model.js";
import type { Usage } from "../../usage.js";
import { incompleteStreamError } from "../errors.js";
import { HttpStatusError, type PostTarget, ServerSentEvents, isJsonResponse, post, postTarget, readText } from "../http.js";
import { reasoningBudget, reasoningSetting } from "../reasoning.js";
import {
  type AdapterOptions,
  AdapterModel,
  appendTurn,
  type CallContext,
  type ClientSettings,
  contentText,
  defaultTimeoutMs,
  drain,
  numberOr,
  objectSchema,
  parseArgumentsObject,
  providerOptionsFor,
  tokenUsage,
} from "../shared.js";
import type { ToolNameMap } from "../tool-names.js";

export interface GoogleOptions extends AdapterOptions {
  /** A WHATWG `fetch` instead of node:http (a proxy agent, another runtime). */
  fetch?: typeof globalThis.fetch;
}

/** What a Gemini part keeps for the round trip (under `providerData.google`). */
export interface GoogleProviderData {
  /** The part's `thoughtSignature`, sent back unchanged with the part. */
  thoughtSignature?: string;
  /** The `functionCall.id` the server gave (sent back on the call and its `functionResponse`). */
  callId?: string;
}

const dataKey = "google";

export const googleConnection = {
  provider: "google",
  apiKeyEnvVar: "GEMINI_API_KEY",
  baseUrlEnvVar: "GOOGLE_GEMINI_BASE_URL",
  officialHost: "generativelanguage.googleapis.com",
  defaultPath: "/v1beta",
};

type Part = Record<string, unknown>;
interface Content {
  role: "user" | "model";
  parts: Part[];
}

/** Where to POST and with which headers. */
class GeminiEndpoint {
  readonly stream: PostTarget;
  readonly generate: PostTarget;
  readonly headers: Record<string, string>;
  readonly streamHeaders: Record<string, string>;
  constructor(
    settings: ClientSettings,
    modelId: string,
    readonly fetch: typeof globalThis.fetch | undefined,
  ) {
    const base = `${settings.baseURL.replace(/\/+$/, "")}/models/${encodeURIComponent(modelId)}`;
    this.stream = postTarget(`${base}:streamGenerateContent?alt=sse`);
    this.generate = postTarget(`${base}:generateContent`);
    const headers: Record<string, string> = { "content-type": "application/json", "x-goog-api-key": settings.apiKey, "user-agent": "agentloop" };
    for (const [name, value] of Object.entries(settings.defaultHeaders ?? {})) headers[name.toLowerCase()] = value;
    this.headers = headers;
    this.streamHeaders = { ...headers, accept: "text/event-stream" };
  }
}

function googleData(providerData: ProviderData | undefined): GoogleProviderData | undefined {
  const value = providerData?.[dataKey];
  return value && typeof value === "object" ? (value as GoogleProviderData) : undefined;
}

function withSignature(part: Part, providerData: ProviderData | undefined): Part {
  const signature = googleData(providerData)?.thoughtSignature;
  return signature ? { ...part, thoughtSignature: signature } : part;
}

function userParts(content: string | Array<TextPart | ImagePart>): Part[] {
  if (typeof content === "string") return content ? [{ text: content }] : [];
  return content.flatMap((part): Part[] => {
    if (part.type === "text") return part.text ? [{ text: part.text }] : [];
    if (part.data) return [{ inlineData: { mimeType: part.mediaType ?? "image/png", data: part.data } }];
    return part.url ? [{ fileData: { mimeType: part.mediaType ?? "image/png", fileUri: part.url } }] : [];
  });
}

/** The unified conversation as Gemini `systemInstruction` + `contents`. */
export function geminiContents(messages: readonly Message[], names: ToolNameMap): { systemInstruction?: { parts: Part[] }; contents: Content[] } {
  const system: string[] = [];
  const contents: Content[] = [];
  // Server-given call ids, for the functionResponse that answers each call.
  const callIds = new Map<string, string>();
  const append = (role: Content["role"], parts: Part[]) => appendTurn(contents, "parts", role, parts);
  for (const message of messages) {
    switch (message.role) {
      case "system":
        system.push(message.content);
        break;
      case "user":
        append("user", userParts(message.content));
        break;
      case "assistant": {
        const parts: Part[] = [];
        for (const part of message.content) {
          if (part.type === "text") {
            // An empty text part may carry the turn's signature (Gemini 3 sends one at the end).
            if (part.text || googleData(part.providerData)?.thoughtSignature) parts.push(withSignature({ text: part.text }, part.providerData));
          } else if (part.type === "reasoning") {
            // Only Gemini's own thoughts go back (another provider's reasoning means nothing here).
            if (googleData(part.providerData)) parts.push(withSignature({ text: part.text, thought: true }, part.providerData));
          } else {
            const callId = googleData(part.providerData)?.callId;
            if (callId) callIds.set(part.id, callId);
            const call: Part = { name: names.toProviderName(part.name), args: parseArgumentsObject(part.arguments) };
            if (callId) call.id = callId;
            parts.push(withSignature({ functionCall: call }, part.providerData));
          }
        }
        append("model", parts);
        break;
      }
      case "tool": {
        const text = contentText(message.content);
        const response: Part = { name: names.toProviderName(message.toolName), response: message.isError ? { error: text } : { result: text } };
        const callId = callIds.get(message.toolCallId);
        if (callId) response.id = callId;
        append("user", [{ functionResponse: response }]);
        break;
      }
      default: {
        const unreachable: never = message;
        throw new TypeError(`unknown message role in ${JSON.stringify(unreachable)}`);
      }
    }
  }
  return { systemInstruction: system.length > 0 ? { parts: [{ text: system.join("\n\n") }] } : undefined, contents };
}

function toolConfig(choice: ToolChoice, names: ToolNameMap): Record<string, unknown> {
  if (choice === "auto") return { functionCallingConfig: { mode: "AUTO" } };
  if (choice === "none") return { functionCallingConfig: { mode: "NONE" } };
  if (choice === "required") return { functionCallingConfig: { mode: "ANY" } };
  return { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [names.toProviderName(choice.name)] } };
}

/** Reads Gemini's `usageMetadata`. Output counts the thoughts too (Gemini bills them as output). */
export function geminiUsage(raw: unknown): Usage | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const usage = raw as Record<string, unknown>;
  const thoughts = numberOr(usage.thoughtsTokenCount);
  const input = numberOr(usage.promptTokenCount) + numberOr(usage.toolUsePromptTokenCount);
  const output = numberOr(usage.candidatesTokenCount) + thoughts;
  return tokenUsage({ input, output, total: usage.totalTokenCount ?? input + output, cached: usage.cachedContentTokenCount, reasoning: thoughts });
}

/** Gemini's finish reasons: the safety family is `content-filter`. */
function unifiedFinish(raw: string | undefined, hasToolCalls: boolean): UnifiedFinishReason {
  switch (raw) {
    case "STOP":
      return hasToolCalls ? "tool-calls" : "stop";
    case "MAX_TOKENS":
      return "length";
    case "SAFETY":
    case "RECITATION":
    case "BLOCKLIST":
    case "PROHIBITED_CONTENT":
    case "SPII":
    case "IMAGE_SAFETY":
    case "IMAGE_PROHIBITED_CONTENT":
    case "IMAGE_RECITATION":
      return "content-filter";
    default:
      return hasToolCalls ? "tool-calls" : "other";
  }
}

interface ChunkLike {
  candidates?: Array<{ content?: { parts?: Part[] }; finishReason?: string; index?: number }>;
  usageMetadata?: unknown;
  promptFeedback?: { blockReason?: string };
  modelVersion?: string;
  responseId?: string;
  error?: unknown;
}

/** Folds Gemini response chunks into model events, appended to `out`. A JSON body is one chunk. */
class GeminiStreamMapper {
  private started = false;
  private open?: { kind: "text" | "reasoning"; id: string; signature?: string };
  private blocks = 0;
  private calls = 0;
  private finishRaw?: string;
  private usage?: Usage;

  constructor(private readonly names: ToolNameMap) {}

  chunk(chunk: ChunkLike, out: ModelEvent[]): void {
    if (!this.started) {
      this.started = true;
      out.push({ type: "response-start", id: chunk.responseId, model: chunk.modelVersion });
    }
    const usage = geminiUsage(chunk.usageMetadata);
    if (usage) this.usage = usage;
    // A blocked prompt comes without candidates.
    if (chunk.promptFeedback?.blockReason) this.finishRaw ??= chunk.promptFeedback.blockReason;
    const candidate = chunk.candidates?.find((entry) => (entry.index ?? 0) === 0);
    if (!candidate) return;
    for (const part of candidate.content?.parts ?? []) this.part(part, out);
    if (candidate.finishReason) this.finishRaw = candidate.finishReason;
  }

  private part(part: Part, out: ModelEvent[]): void {
    const signature = typeof part.thoughtSignature === "string" ? part.thoughtSignature : undefined;
    if (part.functionCall && typeof part.functionCall === "object") {
      this.close(out);
      const call = part.functionCall as { name?: string; args?: unknown; id?: string };
      const id = call.id || `call_${this.calls}_${Math.random().toString(36).slice(2, 10)}`;
      this.calls++;
      const name = this.names.fromProviderName(String(call.name ?? ""));
      const argumentsText = JSON.stringify(call.args ?? {});
      const data: GoogleProviderData = {};
      if (signature) data.thoughtSignature = signature;
      if (call.id) data.callId = call.id;
      out.push({ type: "tool-call-start", id, name });
      out.push({ type: "tool-call-delta", id, delta: argumentsText });
      out.push({ type: "tool-call-end", id, name, arguments: argumentsText, providerData: { [dataKey]: data } });
      return;
    }
    if (typeof part.text !== "string") return;
    const kind = part.thought === true ? "reasoning" : "text";
    if (this.open?.kind !== kind) {
      // A signature-only empty text part after a call or thought belongs to the turn: keep it on a text part.
      if (!part.text && !signature) return;
      this.close(out);
      this.open = { kind, id: `${kind}-${this.blocks++}` };
      out.push({ type: kind === "text" ? "text-start" : "reasoning-start", id: this.open.id });
    }
    if (part.text) out.push({ type: kind === "text" ? "text-delta" : "reasoning-delta", id: this.open.id, delta: part.text });
    if (signature) this.open.signature = signature;
  }

  private close(out: ModelEvent[]): void {
    const open = this.open;
    if (!open) return;
    this.open = undefined;
    const providerData = { [dataKey]: (open.signature ? { thoughtSignature: open.signature } : {}) satisfies GoogleProviderData };
    out.push({ type: open.kind === "text" ? "text-end" : "reasoning-end", id: open.id, providerData });
  }

  end(out: ModelEvent[]): void {
    this.close(out);
    if (this.finishRaw === undefined) {
      out.push({ type: "error", error: incompleteStreamError("google") });
      return;
    }
    const reason: FinishReason = { unified: unifiedFinish(this.finishRaw, this.calls > 0), raw: this.finishRaw };
    if (this.usage) out.push({ type: "usage", usage: this.usage });
    out.push({ type: "finish", reason, usage: this.usage });
  }
}

/** A Gemini error object sent inside a stream, thrown as the HTTP error its `code` names. */
function streamedError(error: unknown): Error {
  const record = (error ?? {}) as { code?: unknown; message?: unknown };
  const status = typeof record.code === "number" ? record.code : 500;
  return new HttpStatusError(status, {}, { error }, typeof record.message === "string" ? record.message : JSON.stringify(error));
}

export class GoogleModel extends AdapterModel<GeminiEndpoint, GoogleOptions & { client?: GeminiEndpoint }> {
  constructor(modelId: string, options: GoogleOptions = {}) {
    const env = options.env ?? process.env;
    // GEMINI_API_KEY, else GOOGLE_API_KEY (the names Google's own clients read).
    const apiKey = options.apiKey ?? (options.apiKeyEnvVar ? undefined : (env.GEMINI_API_KEY ?? env.GOOGLE_API_KEY));
    super(modelId, { ...options, apiKey }, googleConnection, (settings) => new GeminiEndpoint(settings, modelId, options.fetch));
  }

  protected override needsOwnSignal(): boolean {
    // node:http removes its abort listener when a request ends; fetch links it into AbortSignal.any.
    return this.connection.client.fetch !== undefined;
  }

  private body(request: ModelRequest, names: ToolNameMap): Record<string, unknown> {
    const options = request.options ?? {};
    const { systemInstruction, contents } = geminiContents(request.messages, names);
    const body: Record<string, unknown> = { contents };
    if (systemInstruction) body.systemInstruction = systemInstruction;
    if (request.tools && request.tools.length > 0) {
      body.tools = [
        {
          functionDeclarations: request.tools.map((tool) => ({
            name: names.toProviderName(tool.name),
            description: tool.description,
            parametersJsonSchema: objectSchema(tool.parameters),
          })),
        },
      ];
      if (request.toolChoice !== undefined) body.toolConfig = toolConfig(request.toolChoice, names);
    }
    const generationConfig: Record<string, unknown> = {};
    if (options.temperature !== undefined) generationConfig.temperature = options.temperature;
    if (options.topP !== undefined) generationConfig.topP = options.topP;
    if (options.maxOutputTokens !== undefined) generationConfig.maxOutputTokens = options.maxOutputTokens;
    if (options.stopSequences?.length) generationConfig.stopSequences = options.stopSequences;
    if (options.seed !== undefined) generationConfig.seed = options.seed;
    if (request.responseFormat) {
      generationConfig.responseMimeType = "application/json";
      generationConfig.responseJsonSchema = request.responseFormat.schema;
    }
    const reasoning = reasoningSetting(request);
    if (reasoning) {
      // Gemini 2.x takes a budget only; Gemini 3 takes a level (or a budget).
      const budgetOnly = /^gemini-(1|2)\b/.test(this.modelId) || "budgetTokens" in reasoning;
      generationConfig.thinkingConfig = budgetOnly
        ? { includeThoughts: true, thinkingBudget: reasoningBudget(reasoning) }
        : { includeThoughts: true, thinkingLevel: reasoning.effort };
    }
    if (Object.keys(generationConfig).length > 0) body.generationConfig = generationConfig;
    const extra = providerOptionsFor(request, ["google", this.provider]);
    // generationConfig given in providerOptions is merged into ours, not swapped for it.
    if (extra.generationConfig && typeof extra.generationConfig === "object") {
      extra.generationConfig = { ...generationConfig, ...(extra.generationConfig as object) };
    }
    return Object.assign(body, extra);
  }

  protected async *call(request: ModelRequest, { names, signal, alive }: CallContext): AsyncGenerator<ModelEvent> {
    const mapper = new GeminiStreamMapper(names);
    const client = this.connection.client;
    const streaming = this.options.stream !== false;
    const common = {
      headers: streaming ? client.streamHeaders : client.headers,
      body: JSON.stringify(this.body(request, names)),
      signal,
      timeoutMs: this.options.timeoutMs ?? defaultTimeoutMs,
      fetch: client.fetch,
    };
    const out: ModelEvent[] = [];
    if (!streaming) {
      mapper.chunk((await post({ ...common, url: client.generate, json: true })).value as ChunkLike, out);
    } else {
      const { response } = await post({ ...common, url: client.stream });
      if (isJsonResponse(response)) {
        const value = JSON.parse(await readText(response.body)) as ChunkLike | ChunkLike[];
        for (const chunk of Array.isArray(value) ? value : [value]) {
          if (chunk.error) throw streamedError(chunk.error);
          mapper.chunk(chunk, out);
        }
      } else {
        const events = new ServerSentEvents();
        const feed = (messages: ReturnType<ServerSentEvents["feed"]>) => {
          for (const { data } of messages) {
            const chunk = JSON.parse(data) as ChunkLike | null;
            if (!chunk || typeof chunk !== "object") throw new SyntaxError(`not a response chunk: ${data.slice(0, 80)}`);
            if (chunk.error) throw streamedError(chunk.error);
            mapper.chunk(chunk, out);
          }
        };
        try {
          for await (const bytes of response.body) {
            alive();
            feed(events.feed(bytes));
            if (out.length > 0) yield* drain(out);
          }
          feed(events.end());
        } catch (error) {
          // What came before a bad event still reaches the caller, then the failure.
          yield* drain(out);
          throw error;
        }
      }
    }
    yield* drain(out);
    if (signal.aborted) return;
    mapper.end(out);
    yield* drain(out);
  }
}

/** A Gemini model: `google("gemini-2.5-flash")`. */
export function google(modelId: string, options: GoogleOptions = {}): GoogleModel {
  return new GoogleModel(modelId, options);
}
