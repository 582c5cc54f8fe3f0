/**
 * OpenAI Chat Completions adapter, for OpenAI and every OpenAI-compatible server (Ollama, vLLM,
 * llama.cpp, LM Studio, Groq, ...). It speaks the wire directly (`../http.ts`: node:http on
 * keep-alive sockets, SSE through `eventsource-parser`), the hot path of every agent loop; pass an
 * official `openai` SDK client as `client` to send the same requests through the SDK instead.
 *
 * Wire format of a tool round (Prompty §9.4): one assistant message with
 * `tool_calls: [{id, type: "function", function: {name, arguments}}]`, then one
 * `{role: "tool", tool_call_id, content}` message per result.
 */
import type OpenAI from "openai";
import type { AssistantPart, Message } from "../../messages.js";
import type { FinishReason, ModelEvent, ModelRequest, ToolChoice, ToolDefinition, UnifiedFinishReason } from "../../model/model.js";
import type { Usage } from "../../usage.js";
import { incompleteStreamError } from "../errors.js";
import type { EventSourceMessage } from "eventsource-parser";
import { reasoningEffort, reasoningSetting } from "../reasoning.js";
import { type PostTarget, ServerSentEvents, StreamedError, isJsonResponse, post, postTarget, readText } from "../http.js";
import {
  type AdapterOptions,
  AdapterModel,
  commonRequestFields,
  refusalError,
  tokenUsage,
  type CallContext,
  type CallEvents,
  type ClientSettings,
  contentText,
  defaultTimeoutMs,
  drain,
  imageUrl,
  objectSchema,
  openaiConnection,
  promptCacheKey,
  providerOptionsFor,
} from "../shared.js";
import { HistoryMemo } from "../history-memo.js";
import { keepShape } from "../../shapes.js";
import { ToolNameMap } from "../tool-names.js";

export interface OpenAIChatOptions extends AdapterOptions {
  /** Role used for system messages (`developer` for OpenAI reasoning models). Default `system`. */
  systemRole?: "system" | "developer";
  /** Ask for usage in a last chunk (`stream_options.include_usage`). Default `true`. */
  includeUsage?: boolean;
  /** Field for the output token limit. Default `max_completion_tokens` on api.openai.com, `max_tokens` elsewhere. */
  maxTokensField?: "max_tokens" | "max_completion_tokens";
  /**
   * An official `openai` SDK client to send the requests through (Azure, a custom auth setup).
   * Its retries should be off (`maxRetries: 0`): the adapter's `retry` is the policy. Default:
   * none; the adapter speaks HTTP itself, which costs a third of the SDK's CPU per call.
   */
  client?: OpenAI;
  /** A WHATWG `fetch` for the direct path instead of node:http (a proxy agent, another runtime). */
  fetch?: typeof globalThis.fetch;
}

/** The direct path's settings: where to POST and with which headers. */
class ChatEndpoint {
  readonly target: PostTarget;
  readonly headers: Record<string, string>;
  readonly streamHeaders: Record<string, string>;
  constructor(
    settings: ClientSettings,
    env: Record<string, string | undefined>,
    readonly fetch: typeof globalThis.fetch | undefined,
  ) {
    this.target = postTarget(`${settings.baseURL.replace(/\/+$/, "")}/chat/completions`);
    const headers: Record<string, string> = {
      "content-type": "application/json",
      authorization: `Bearer ${settings.apiKey}`,
      "user-agent": "agentloop",
    };
    // The SDK's environment conventions for OpenAI organizations and projects.
    if (env.OPENAI_ORG_ID) headers["openai-organization"] = env.OPENAI_ORG_ID;
    if (env.OPENAI_PROJECT_ID) headers["openai-project"] = env.OPENAI_PROJECT_ID;
    for (const [name, value] of Object.entries(settings.defaultHeaders ?? {})) headers[name.toLowerCase()] = value;
    this.headers = headers;
    this.streamHeaders = { ...headers, accept: "text/event-stream" };
  }
}

/** Where a reasoning part of a Chat Completions answer came from (under `providerData.openaiChat`). */
export interface ChatReasoningData {
  field: "reasoning_content" | "reasoning";
}

const chatDataKey = "openaiChat";

/**
 * The reasoning a tool round sends back: DeepSeek's thinking mode wants the `reasoning_content` of
 * an assistant message with tool calls back within the same question (its final answers' reasoning
 * is not needed). Only reasoning that came from this wire's own field is sent, in that field.
 */
function reasoningBack(parts: readonly AssistantPart[]): { field: string; text: string } | undefined {
  let field: string | undefined;
  let text = "";
  for (const part of parts) {
    if (part.type !== "reasoning") continue;
    const data = part.providerData?.[chatDataKey] as ChatReasoningData | undefined;
    if (!data?.field) continue;
    field = data.field;
    text += part.text;
  }
  return field ? { field, text } : undefined;
}

/** Reads a Chat Completions usage object, including cached and reasoning tokens. */
export function chatUsage(raw: unknown): Usage | undefined {
  if (!raw || typeof raw !== "object") return undefined;
  const usage = raw as Record<string, any>;
  return tokenUsage({
    input: usage.prompt_tokens,
    output: usage.completion_tokens,
    total: usage.total_tokens,
    cached: usage.prompt_tokens_details?.cached_tokens,
    reasoning: usage.completion_tokens_details?.reasoning_tokens,
  });
}

function unifiedFinish(raw: string | undefined, hasToolCalls: boolean): UnifiedFinishReason {
  if (hasToolCalls && (raw === "stop" || raw === "tool_calls" || raw === "function_call")) return "tool-calls";
  switch (raw) {
    case "stop":
      return "stop";
    case "length":
      return "length";
    case "tool_calls":
    case "function_call":
      return "tool-calls";
    case "content_filter":
      return "content-filter";
    default:
      return "other";
  }
}

interface ToolCallDeltaLike {
  index?: number;
  id?: string | null;
  function?: { name?: string | null; arguments?: string | null };
}

interface ChunkLike {
  id?: string;
  model?: string;
  usage?: unknown;
  choices?: Array<{
    index?: number;
    finish_reason?: string | null;
    delta?: ChunkDelta;
  }>;
}

interface ChunkDelta {
  content?: string | null;
  refusal?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  tool_calls?: ToolCallDeltaLike[] | null;
}

interface PendingCall {
  id: string;
  name: string;
  arguments: string;
  started: boolean;
}

/**
 * Folds Chat Completions chunks into model events, appended to `out` (no generator per chunk). A
 * non-streaming body goes through it as one chunk.
 */
class ChatStreamMapper {
  private started = false;
  private textOpen = false;
  private reasoningOpen = false;
  /** The delta field the reasoning came in (`reasoning_content` for DeepSeek, `reasoning` for some servers). */
  private reasoningField: "reasoning_content" | "reasoning" = "reasoning_content";
  private readonly calls = new Map<number, PendingCall>();
  private finishRaw?: string;
  private usage?: Usage;
  private refusal = "";

  constructor(
    private readonly provider: string,
    private readonly names: ToolNameMap,
  ) {}

  /**
   * One chunk's events; with `whole`, `chunk` is a non-streaming completion:
   * each choice's `message` is read as its delta, its tool calls by position.
   */
  chunk(chunk: ChunkLike, out: ModelEvent[], whole = false): void {
    if (!this.started) {
      this.started = true;
      out.push({ type: "response-start", id: chunk.id || undefined, model: chunk.model || undefined });
    }
    const usage = chatUsage(chunk.usage);
    if (usage) this.usage = usage;
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = (whole ? (choice as CompletionChoice).message : choice.delta) ?? {};
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === "string" && reasoning.length > 0) {
        if (!this.reasoningOpen) {
          this.reasoningOpen = true;
          this.reasoningField = typeof delta.reasoning_content === "string" ? "reasoning_content" : "reasoning";
          out.push({ type: "reasoning-start", id: "reasoning-0" });
        }
        out.push({ type: "reasoning-delta", id: "reasoning-0", delta: reasoning });
      }
      if (typeof delta.content === "string" && delta.content.length > 0) {
        this.closeReasoning(out);
        if (!this.textOpen) {
          this.textOpen = true;
          out.push({ type: "text-start", id: "text-0" });
        }
        out.push({ type: "text-delta", id: "text-0", delta: delta.content });
      }
      if (typeof delta.refusal === "string") this.refusal += delta.refusal;
      const calls = delta.tool_calls;
      if (calls) for (let position = 0; position < calls.length; position++) this.toolCallDelta(calls[position]!, whole ? position : (calls[position]!.index ?? position), out);
      if (choice.finish_reason) this.finishRaw = choice.finish_reason;
    }
  }

  /** Deltas accumulate by index: id and name come with the first chunk, arguments are appended. */
  private toolCallDelta(call: ToolCallDeltaLike, index: number, out: ModelEvent[]): void {
    let pending = this.calls.get(index);
    if (!pending) {
      pending = { id: call.id || `call_${index}_${Math.random().toString(36).slice(2, 10)}`, name: "", arguments: "", started: false };
      this.calls.set(index, pending);
    }
    if (!pending.name && call.function?.name) pending.name = call.function.name;
    const argumentsDelta = call.function?.arguments ?? "";
    pending.arguments += argumentsDelta;
    if (!pending.started && pending.name) {
      this.closeReasoning(out);
      pending.started = true;
      out.push({ type: "tool-call-start", id: pending.id, name: this.names.fromProviderName(pending.name) });
      if (pending.arguments) out.push({ type: "tool-call-delta", id: pending.id, delta: pending.arguments });
    } else if (pending.started && argumentsDelta) {
      out.push({ type: "tool-call-delta", id: pending.id, delta: argumentsDelta });
    }
  }

  private closeReasoning(out: ModelEvent[]): void {
    if (this.reasoningOpen) {
      this.reasoningOpen = false;
      out.push({ type: "reasoning-end", id: "reasoning-0", providerData: { [chatDataKey]: { field: this.reasoningField } satisfies ChatReasoningData } });
    }
  }

  end(out: ModelEvent[]): void {
    this.closeReasoning(out);
    if (this.textOpen) {
      this.textOpen = false;
      out.push({ type: "text-end", id: "text-0" });
    }
    const calls = [...this.calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
    for (const call of calls) {
      const name = this.names.fromProviderName(call.name);
      if (!call.started) out.push({ type: "tool-call-start", id: call.id, name });
      out.push({ type: "tool-call-end", id: call.id, name, arguments: call.arguments || "{}" });
    }
    if (this.refusal) {
      out.push({ type: "error", error: refusalError(this.provider, `: ${this.refusal}`) });
      return;
    }
    if (this.finishRaw === undefined) {
      out.push({ type: "error", error: incompleteStreamError(this.provider) });
      return;
    }
    const reason: FinishReason = { unified: unifiedFinish(this.finishRaw, calls.length > 0), raw: this.finishRaw };
    if (this.usage) out.push({ type: "usage", usage: this.usage });
    out.push({ type: "finish", reason, usage: this.usage });
  }
}
keepShape(new ChatStreamMapper("", new ToolNameMap([]))); // see src/shapes.ts

function toolChoiceParam(choice: ToolChoice, names: ToolNameMap): unknown {
  if (typeof choice === "string") return choice;
  return { type: "function", function: { name: names.toProviderName(choice.name) } };
}

/**
 * Wire forms of assistant and tool messages, by message object (the SDK path, which wants the
 * objects): a message in a transcript is never changed in place (the loop builds a new one), so
 * each is converted once instead of once per turn. Read-only for the caller.
 */
const wireMessages = new WeakMap<Message, unknown>();

/**
 * One message in Chat Completions wire format. `renamed` collects the tool names the request's map
 * changed (a legal name is its own provider name in every request's map, an illegal one may not be).
 */
function wireMessage(message: Message, names: ToolNameMap, systemRole: "system" | "developer", renamed?: Map<string, string>): unknown {
  switch (message.role) {
    case "system":
      return { role: systemRole, content: message.content };
    case "user":
      if (typeof message.content === "string") return { role: "user", content: message.content };
      return {
        role: "user",
        content: message.content.map((part) => (part.type === "text" ? { type: "text", text: part.text } : { type: "image_url", image_url: { url: imageUrl(part) ?? "" } })),
      };
    case "assistant": {
      // One pass over the parts.
      let text = "";
      let calls: unknown[] | undefined;
      for (const part of message.content) {
        if (part.type === "text") text += part.text;
        else if (part.type === "tool-call") {
          const name = names.toProviderName(part.name);
          if (name !== part.name) (renamed ??= new Map()).set(part.name, name);
          (calls ??= []).push({ id: part.id, type: "function", function: { name, arguments: part.arguments } });
        }
      }
      const wire: Record<string, unknown> = { role: "assistant" };
      if (text || !calls) wire.content = text;
      if (calls) {
        const reasoning = reasoningBack(message.content);
        if (reasoning) wire[reasoning.field] = reasoning.text;
        wire.tool_calls = calls;
      }
      return wire;
    }
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: contentText(message.content) };
    default: {
      const unreachable: never = message;
      throw new TypeError(`unknown message role in ${JSON.stringify(unreachable)}`);
    }
  }
}

/** The unified conversation in Chat Completions wire format. */
export function chatMessages(messages: readonly Message[], names: ToolNameMap, systemRole: "system" | "developer" = "system"): unknown[] {
  const out: unknown[] = [];
  for (const message of messages) {
    if (message.role !== "assistant" && message.role !== "tool") {
      out.push(wireMessage(message, names, systemRole));
      continue;
    }
    let wire = wireMessages.get(message);
    if (wire === undefined) {
      const renamed = new Map<string, string>();
      wire = wireMessage(message, names, systemRole, renamed);
      // A message whose names all kept their form cannot change with a later request's map.
      if (renamed.size === 0) wireMessages.set(message, wire);
    }
    out.push(wire);
  }
  return out;
}

/** A conversation's messages as last sent: each one's JSON, and the names renamed in them. */
interface SentMessages {
  json: string[];
  renamed: Map<string, string>;
}

/**
 * The `messages` array of the direct path's body as JSON text (byte for byte `JSON.stringify` of
 * `chatMessages`), per conversation: only the messages the conversation's last request did not
 * have are converted and serialized (see `HistoryMemo`). What is left per turn is joining the
 * texts, a copy, where every client serializes the whole history again.
 */
class MessagesJson {
  private readonly memo = new HistoryMemo<SentMessages>();

  constructor(private readonly systemRole: "system" | "developer") {}

  /** Each message's JSON text, in order (kept: read-only for the caller). */
  texts(messages: readonly Message[], names: ToolNameMap): readonly string[] {
    const match = this.memo.match(messages);
    let sent: SentMessages;
    if (match !== undefined && keepsNames(match.state.renamed, names)) {
      sent = match.state;
      // Messages after the shared part were another request's (a retry, a trimmed context).
      if (sent.json.length > match.shared) sent.json.length = match.shared;
    } else sent = { json: [], renamed: new Map() };
    for (let index = sent.json.length; index < messages.length; index++) {
      sent.json.push(JSON.stringify(wireMessage(messages[index]!, names, this.systemRole, sent.renamed)));
    }
    this.memo.keep(messages, sent);
    return sent.json;
  }
}

/** True when `names` gives every renamed tool name of a sent text the same provider name. */
function keepsNames(renamed: ReadonlyMap<string, string>, names: ToolNameMap): boolean {
  for (const [name, providerName] of renamed) if (names.toProviderName(name) !== providerName) return false;
  return true;
}

/** One tool in Chat Completions wire format. */
function wireTool(tool: ToolDefinition, names: ToolNameMap): unknown {
  return { type: "function", function: { name: names.toProviderName(tool.name), description: tool.description, parameters: objectSchema(tool.parameters) } };
}

/** Stands for `tools` in `fields` until `bodyText` puts the cached text there. */
const toolsMarker = {};

/**
 * The `tools` array of the direct path's body as JSON text (byte for byte `JSON.stringify` of the
 * wire tools), kept for the last tool list: an agent sends the same definitions on every call
 * (a request's tool definitions are read-only, as its messages are), so a call compares them and
 * their provider names instead of mapping and serializing every schema again.
 */
class ToolsJson {
  private tools: readonly ToolDefinition[] = [];
  private providerNames: string[] = [];
  private json = "";

  text(tools: readonly ToolDefinition[], names: ToolNameMap): string {
    if (!this.keeps(tools, names)) {
      this.tools = tools.slice();
      this.providerNames = tools.map((tool) => names.toProviderName(tool.name));
      this.json = JSON.stringify(tools.map((tool) => wireTool(tool, names)));
    }
    return this.json;
  }

  private keeps(tools: readonly ToolDefinition[], names: ToolNameMap): boolean {
    if (tools.length !== this.tools.length) return false;
    for (let index = 0; index < tools.length; index++) {
      const tool = tools[index]!;
      if (tool !== this.tools[index] || names.toProviderName(tool.name) !== this.providerNames[index]) return false;
    }
    return true;
  }
}

export class OpenAIChatModel extends AdapterModel<OpenAI | ChatEndpoint, OpenAIChatOptions> {
  /** The direct path's messages as JSON, per conversation (made on the first call). */
  private messagesJson?: MessagesJson;
  /** The direct path's last tool list as JSON. */
  private readonly toolsJson = new ToolsJson();

  constructor(modelId: string, options: OpenAIChatOptions = {}) {
    super(modelId, options, openaiConnection("openai"), (settings) => new ChatEndpoint(settings, options.env ?? process.env, options.fetch));
  }

  /**
   * The request's fields other than `model` and `messages`, in the order they are sent. With
   * `toolsText`, `tools` (first when there are tools) is `toolsText` itself, for `bodyText` to
   * replace with the tool list's cached JSON.
   */
  private fields(request: ModelRequest, names: ToolNameMap, toolsText?: object): Record<string, unknown> {
    const options = request.options ?? {};
    const body = commonRequestFields(
      request,
      (tool) => wireTool(tool, names),
      (choice) => toolChoiceParam(choice, names),
      toolsText && (() => toolsText),
    );
    if (options.maxOutputTokens !== undefined) {
      body[this.options.maxTokensField ?? (this.connection.official ? "max_completion_tokens" : "max_tokens")] = options.maxOutputTokens;
    }
    if (options.stopSequences?.length) body.stop = options.stopSequences;
    if (options.seed !== undefined) body.seed = options.seed;
    const format = request.responseFormat;
    if (format) body.response_format = { type: "json_schema", json_schema: { name: format.name, schema: format.schema, strict: format.strict ?? false } };
    const reasoning = reasoningSetting(request);
    if (reasoning) body.reasoning_effort = reasoningEffort(reasoning);
    // Only OpenAI's own API knows the field (a compatible server might refuse it).
    const cacheKey = this.connection.official ? promptCacheKey(request) : undefined;
    if (cacheKey) body.prompt_cache_key = cacheKey;
    Object.assign(body, providerOptionsFor(request, ["openai", this.provider]));
    const streaming = this.options.stream !== false;
    body.stream = streaming;
    if (streaming && this.options.includeUsage !== false) body.stream_options = { include_usage: true };
    return body;
  }

  /** The whole body as an object (for an SDK client). */
  private body(request: ModelRequest, names: ToolNameMap): Record<string, unknown> {
    return { model: this.modelId, messages: chatMessages(request.messages, names, this.options.systemRole), ...this.fields(request, names) };
  }

  /** The whole body as JSON (the direct path): the messages' text comes from `MessagesJson`. */
  private bodyText(request: ModelRequest, names: ToolNameMap): string {
    const fields = this.fields(request, names, toolsMarker);
    // Provider options that name `model` or `messages` replace them: the plain way then.
    if (Object.hasOwn(fields, "model") || Object.hasOwn(fields, "messages")) return JSON.stringify(this.body(request, names));
    let rest: string;
    if (fields.tools === toolsMarker) {
      // `tools` is the first field: its cached text, then the others' (`undefined` leaves it out).
      fields.tools = undefined;
      const others = JSON.stringify(fields);
      rest = `{"tools":${this.toolsJson.text(request.tools!, names)}${others === "{}" ? "}" : `,${others.slice(1)}`}`;
    } else {
      // No tools, or provider options that replaced them (sent as they are).
      rest = JSON.stringify(fields);
    }
    this.messagesJson ??= new MessagesJson(this.options.systemRole ?? "system");
    const texts = this.messagesJson.texts(request.messages, names);
    const head = `{"model":${JSON.stringify(this.modelId)},"messages":[`;
    const tail = rest === "{}" ? "]}" : `],${rest.slice(1)}`;
    if (texts.length === 0) return `${head}${tail}`;
    // One join: the body is made as one flat string (a long history's body is a large object;
    // concatenating around a joined text would copy it once more when it is written).
    const parts = texts.slice();
    parts[0] = head + parts[0];
    parts[parts.length - 1] += tail;
    return parts.join(",");
  }

  protected override needsOwnSignal(): boolean {
    // node:http removes its abort listener when a request ends. The SDK does not, and the fetch
    // path links the signal into `AbortSignal.any` (whose dependants Node 20 never prunes): both
    // get a signal per call, never the run-long one.
    const client = this.connection.client;
    return !(client instanceof ChatEndpoint) || client.fetch !== undefined;
  }

  protected call(request: ModelRequest, context: CallContext): CallEvents {
    const client = this.connection.client;
    if (client instanceof ChatEndpoint && this.options.stream === false) return this.jsonCall(request, context, client);
    return this.streamCall(request, context);
  }

  /** The direct path without streaming: one JSON body, mapped into the whole list of events. */
  private async jsonCall(request: ModelRequest, { names, signal }: CallContext, client: ChatEndpoint): Promise<ModelEvent[]> {
    const mapper = new ChatStreamMapper(this.provider, names);
    const { value } = await post({
      url: client.target,
      headers: client.headers,
      body: this.bodyText(request, names),
      signal,
      timeoutMs: this.options.timeoutMs ?? defaultTimeoutMs,
      fetch: client.fetch,
      json: true,
    });
    const out: ModelEvent[] = [];
    mapper.chunk(value as ChunkLike, out, true);
    // Aborted while the body was read: `adapterStream` ends the events with `aborted`.
    if (!signal.aborted) mapper.end(out);
    return out;
  }

  private async *streamCall(request: ModelRequest, { names, signal, alive }: CallContext): AsyncGenerator<ModelEvent> {
    const mapper = new ChatStreamMapper(this.provider, names);
    const streaming = this.options.stream !== false;
    const client = this.connection.client;
    const out: ModelEvent[] = [];
    if (!(client instanceof ChatEndpoint)) {
      for await (const chunk of sdkChunks(client, this.body(request, names), streaming, signal)) {
        alive();
        mapper.chunk(chunk, out, !streaming);
        yield* drain(out);
      }
    } else {
      // The direct path, in this one generator: each piece of the body is parsed and mapped here.
      const { response } = await post({
        url: client.target,
        headers: client.streamHeaders,
        body: this.bodyText(request, names),
        signal,
        timeoutMs: this.options.timeoutMs ?? defaultTimeoutMs,
        fetch: client.fetch,
      });
      if (isJsonResponse(response)) mapper.chunk(JSON.parse(await readText(response.body)) as ChunkLike, out, true);
      else {
        const events = new ServerSentEvents();
        for await (const bytes of response.body) {
          alive();
          const failure = mapSse(events.feed(bytes), mapper, out);
          // What came before a bad event still reaches the caller, then the failure.
          if (out.length > 0) yield* drain(out);
          if (failure) throw failure.error;
        }
        const failure = mapSse(events.end(), mapper, out);
        if (failure) {
          yield* drain(out);
          throw failure.error;
        }
      }
      yield* drain(out);
    }
    // A stream may end quietly on abort: `adapterStream` then ends it with `aborted`.
    if (signal.aborted) return;
    mapper.end(out);
    yield* drain(out);
  }
}

/**
 * Maps SSE events of a Chat Completions stream into `out` (`[DONE]` is skipped), up to the first
 * that fails: malformed JSON, or an error object the server sent. Returns that failure.
 */
function mapSse(events: readonly EventSourceMessage[], mapper: ChatStreamMapper, out: ModelEvent[]): { error: unknown } | undefined {
  try {
    for (const { data } of events) {
      if (data === "[DONE]") continue;
      const chunk = JSON.parse(data) as ChunkLike & { error?: unknown };
      if (chunk.error) return { error: new StreamedError(chunk.error) };
      mapper.chunk(chunk, out);
    }
  } catch (error) {
    return { error };
  }
  return undefined;
}

/** The chunks of one call through an official SDK client; without streaming, the one completion (read `whole`). */
async function* sdkChunks(client: OpenAI, body: Record<string, unknown>, streaming: boolean, signal: AbortSignal): AsyncGenerator<ChunkLike> {
  if (!streaming) {
    yield (await client.chat.completions.create(body as unknown as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, { signal })) as unknown as ChunkLike;
    return;
  }
  const stream = await client.chat.completions.create(body as unknown as OpenAI.Chat.ChatCompletionCreateParamsStreaming, { signal });
  yield* stream as AsyncIterable<ChunkLike>;
}

/** A choice of a non-streaming completion: its `message` is read as the whole delta. */
type CompletionChoice = NonNullable<ChunkLike["choices"]>[number] & { message?: ChunkDelta | null };

/** A Chat Completions model: `openaiChat("gpt-4.1")`, or any compatible server with `baseURL`. */
export function openaiChat(modelId: string, options: OpenAIChatOptions = {}): OpenAIChatModel {
  return new OpenAIChatModel(modelId, options);
}
