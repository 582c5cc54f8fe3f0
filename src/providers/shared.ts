/**
 * What the adapters share: the connection (options, base URL, key, SDK client), the streaming
 * skeleton around each call (retry, abort, error mapping) and small wire helpers. Each adapter
 * keeps only its own wire mapping.
 */
import { createHash } from "node:crypto";
import { onAbort } from "../abort.js";
import { AgentLoopError, abortError } from "../errors.js";
import type { ImagePart, TextPart } from "../messages.js";
import type { JsonSchema, Model, ModelEvent, ModelRequest, ToolChoice, ToolDefinition } from "../model/model.js";
import type { Usage } from "../usage.js";
import { type PriceTarget, priceIdentity, priceUsage } from "./cost.js";
import { incompleteStreamError, toAgentLoopError } from "./errors.js";
import { type RetryOptions, backOff, maxRetriesOf, retryFor } from "./retry.js";
import { ToolNameMap } from "./tool-names.js";
import { CallWatchdog, type CallLimits, callLimits } from "./watchdog.js";

export type { CallLimits };

/** Options every adapter accepts. */
export interface AdapterOptions extends CallLimits {
  /** The API key. Default: the adapter's environment variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`). */
  apiKey?: string;
  /** Base URL of the API (any OpenAI-compatible server for the OpenAI adapters). */
  baseURL?: string;
  /** The variable named in configuration and authentication errors. */
  apiKeyEnvVar?: string;
  /** The name this model reports as `provider` and in error messages. */
  providerName?: string;
  /** Extra HTTP headers on every request. */
  headers?: Record<string, string>;
  /**
   * Per-request timeout in milliseconds (default 10 minutes): until a stream's response headers,
   * until the whole body of a non-streaming request (the SDKs: until the response headers).
   */
  timeoutMs?: number;
  /**
   * Milliseconds a streamed call may take until the first chunk of the answer arrives (connect,
   * response headers and the first chunk; default 60 s, 0 turns it off). A call that outlives it
   * ends with a `timeout` error, retried by `retry`. A request's `options.firstByteTimeoutMs` wins.
   */
  firstByteTimeoutMs?: number;
  /**
   * Milliseconds of silence allowed between the chunks of a streamed answer (default 30 s, 0 turns
   * it off); a stream that stalls longer ends with a `timeout` error (retried while nothing of the
   * answer reached the caller). A request's `options.idleTimeoutMs` wins.
   */
  idleTimeoutMs?: number;
  /** Retry policy (the SDK's own retries are always off). */
  retry?: RetryOptions;
  /** Environment to read keys and URLs from (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** `false` sends non-streaming requests and maps the JSON body into the same events (default `true`). */
  stream?: boolean;
  /**
   * Price the calls as this provider of the price table (`"anthropic"`, `"openai"`, `"google"`, …),
   * for a gateway or proxy in front of it; `false` prices nothing (no `usage.cost`). Default: the
   * official API's provider, or the provider whose API the base URL names, else `"unknown"`.
   */
  priceAs?: string | false;
}

/** What differs between the adapters' connections. */
export interface ConnectionDefaults {
  /** The default provider name (`providerName` overrides it in events and errors). */
  provider: string;
  /** The variable the key is read from, unless `apiKeyEnvVar` names another. */
  apiKeyEnvVar: string;
  /** The variable the base URL is read from when `baseURL` is not given. */
  baseUrlEnvVar: string;
  /** Host of the official API: only there is a missing key an error. */
  officialHost: string;
  /** Path of the API on the official host, appended to `https://<officialHost>` (`/v1`, or `""`). */
  defaultPath: string;
}

/** The settings every SDK client gets (both SDKs take these names). */
export interface ClientSettings {
  apiKey: string;
  baseURL: string;
  /** Always 0: `retryingStream` is the only retry policy. */
  maxRetries: 0;
  timeout: number | undefined;
  defaultHeaders: Record<string, string> | undefined;
}

/** An adapter's resolved connection. */
export interface AdapterConnection<Client> {
  provider: string;
  apiKeyEnvVar: string;
  /** True when requests go to the official API (no base URL, or one on the official host). */
  official: boolean;
  /** The base URL given (option or variable), if any. */
  baseURL?: string;
  client: Client;
}

/**
 * Resolves an adapter's options into a connection, or throws a `configuration` error before any
 * request: no model name, a base URL that is not http(s), no key for the official API. The key is
 * resolved only when the adapter builds its own client (`options.client` wins).
 */
export function adapterConnection<Client>(
  modelId: string,
  options: AdapterOptions & { client?: Client },
  defaults: ConnectionDefaults,
  createClient: (settings: ClientSettings) => Client,
): AdapterConnection<Client> {
  if (!modelId) throw new AgentLoopError("configuration", `${defaults.provider}: a model name is required`, { retryable: false });
  const provider = options.providerName ?? defaults.provider;
  const apiKeyEnvVar = options.apiKeyEnvVar ?? defaults.apiKeyEnvVar;
  const env = options.env ?? process.env;
  const baseURL = checkBaseURL(options.baseURL ?? env[defaults.baseUrlEnvVar] ?? undefined, provider, defaults.baseUrlEnvVar);
  const { officialHost } = defaults;
  const client =
    options.client ??
    createClient({
      apiKey: resolveApiKey({ apiKey: options.apiKey, envVar: apiKeyEnvVar, env, baseURL, officialHost, provider }),
      // Explicit, so the SDK never falls back to process.env when `options.env` is given.
      baseURL: baseURL ?? `https://${officialHost}${defaults.defaultPath}`,
      maxRetries: 0,
      timeout: options.timeoutMs,
      defaultHeaders: options.headers,
    });
  return { provider, apiKeyEnvVar, official: !baseURL || baseURL.includes(officialHost), baseURL, client };
}

/** What one call (one attempt) of an adapter gets. */
export interface CallContext {
  /** Tool names for this request, both ways. */
  names: ToolNameMap;
  /** This call's own signal: it aborts with the request's (or a time limit), and is unlinked when the call ends. */
  signal: AbortSignal;
  /**
   * Marks activity for the time limits: call it for each piece of the answer read (a body chunk,
   * an SDK event), so a stream that only sends keep-alives or slow pieces is measured right.
   * Every event the call yields counts too.
   */
  alive: () => void;
}

/** The limits of one streamed call, resolved (`undefined`: no time limits, as for non-streamed calls). */
export type ResolvedCallLimits = { firstByteMs: number; idleMs: number } | undefined;

const isTerminal = (event: ModelEvent) => event.type === "finish" || event.type === "error";

/**
 * What one call of an adapter returns: its events as they come, or (a whole answer read at once,
 * as a non-streamed JSON body) all of them, handed over without a generator.
 */
export type CallEvents = AsyncIterable<ModelEvent> | Promise<readonly ModelEvent[]>;

/**
 * The stream every adapter returns: the retry policy around calls, in one layer. Each call ends
 * at once if the request is already aborted; forwards the events of `call` up to the first
 * `finish` or `error` (and stops reading there); maps anything thrown to an `AgentLoopError`; and
 * when `call` ends without either, ends with `aborted` (the SDK may end a stream quietly on abort)
 * or a `network` error for a stream cut short. While nothing of the answer reached the caller (a
 * `response-start` is held back), a retryable error starts a new call after a backoff
 * (`retry.ts`: the same policy as `retryingStream`).
 */
export function adapterStream(
  connection: CallConnection,
  request: ModelRequest,
  retry: RetryOptions | undefined,
  call: (context: CallContext) => CallEvents,
  ownSignal = true,
  limits: ResolvedCallLimits = callLimits(request.options, undefined),
): AsyncIterable<ModelEvent> {
  return adapterEvents(connection, request, retry ?? {}, call, ownSignal, limits);
}

/** What a call needs of its adapter's connection; `price` prices each call's usage (`usage.cost`). */
export interface CallConnection {
  provider: string;
  apiKeyEnvVar: string;
  price?: PriceTarget;
}

/** The signal of a request that has none: it never aborts. */
const neverAborted = new AbortController().signal;

/**
 * The base of the built-in adapters: it resolves the connection at construction (configuration
 * errors throw there) and wraps each `call` in `adapterStream`. A subclass maps the wire only.
 */
export abstract class AdapterModel<Client, Options extends AdapterOptions & { client?: Client }> implements Model {
  readonly provider: string;
  readonly modelId: string;
  /** Every built-in adapter sends `request.responseFormat` in its provider's native form. */
  readonly supportsStructuredOutput = true;
  protected readonly connection: AdapterConnection<Client>;
  private readonly callConnection: CallConnection;

  constructor(
    modelId: string,
    protected readonly options: Options,
    defaults: ConnectionDefaults,
    createClient: (settings: ClientSettings) => Client,
  ) {
    this.connection = adapterConnection(modelId, options, defaults, createClient);
    this.modelId = modelId;
    this.provider = this.connection.provider;
    const { provider, apiKeyEnvVar, official, baseURL } = this.connection;
    const priceAs = options.priceAs;
    this.callConnection = {
      provider,
      apiKeyEnvVar,
      price: priceAs === false ? undefined : { modelId, identities: priceIdentity(provider, official, baseURL, priceAs) },
    };
  }

  stream(request: ModelRequest): AsyncIterable<ModelEvent> {
    const limits = this.options.stream === false ? undefined : callLimits(request.options, this.options);
    return adapterStream(this.callConnection, request, this.options.retry, (context) => this.call(request, context), this.needsOwnSignal(), limits);
  }

  /**
   * Whether each call needs a signal of its own (true by default): the SDKs never remove the abort
   * listener they add, so the run's signal must not reach them. A client that removes its
   * listeners (node:http does) gets the request's signal as it is.
   */
  protected needsOwnSignal(): boolean {
    return true;
  }

  /** One call to the provider: its events, up to a `finish` or an `error`. May throw (or reject). */
  protected abstract call(request: ModelRequest, context: CallContext): CallEvents;
}

async function* adapterEvents(
  connection: CallConnection,
  request: ModelRequest,
  retry: RetryOptions,
  call: (context: CallContext) => CallEvents,
  ownSignal: boolean,
  limits: ResolvedCallLimits,
): AsyncGenerator<ModelEvent> {
  const signal = request.signal;
  const maxRetries = maxRetriesOf(retry);
  const timed = limits !== undefined && (limits.firstByteMs > 0 || limits.idleMs > 0);
  for (let attemptNumber = 0; ; attemptNumber++) {
    if (signal?.aborted) {
      yield { type: "error", error: abortError(signal) };
      return;
    }
    // The SDKs add an abort listener to the signal they are given and never remove it. The loop
    // hands one run-long signal to every turn, so each call gets its own signal, unlinked when it
    // ends: no listener pile-up (and no MaxListenersExceededWarning) over long runs. A timed call
    // always gets one: the time limits abort it.
    let callSignal = signal ?? neverAborted;
    let unlink: () => void = noActivity;
    let watchdog: CallWatchdog | undefined;
    if (ownSignal || timed) {
      const callAbort = new AbortController();
      unlink = onAbort(signal, () => callAbort.abort(signal?.reason));
      callSignal = callAbort.signal;
      if (timed) watchdog = new CallWatchdog(connection.provider, limits.firstByteMs, limits.idleMs, (error) => callAbort.abort(error));
    }
    const alive = watchdog ? () => watchdog.alive() : noActivity;
    // The call's events come from a list (a whole answer) or an async iterator (a stream).
    let list: readonly ModelEvent[] | undefined;
    let iterator: AsyncIterator<ModelEvent> | undefined;
    let position = 0;
    let open = false;
    let delivered = false;
    let retryError: AgentLoopError | undefined;
    // `response-start` carries no answer yet: it is held back until something else comes, so an
    // error right after it (Anthropic's overloaded_error after message_start) can still be retried.
    let held: ModelEvent | undefined;
    try {
      for (;;) {
        let event: ModelEvent;
        try {
          if (list === undefined && iterator === undefined) {
            const events = call({ names: ToolNameMap.forRequest(request.tools, request.messages), signal: callSignal, alive });
            if (events instanceof Promise) list = await events;
            else {
              iterator = events[Symbol.asyncIterator]();
              open = true;
            }
          }
          let next: ModelEvent | undefined;
          if (list !== undefined) next = position < list.length ? list[position++] : undefined;
          else {
            const step = await iterator!.next();
            if (step.done) open = false;
            else next = step.value;
          }
          if (next === undefined || watchdog?.expired) {
            event = { type: "error", error: watchdog?.expired ?? (signal?.aborted ? abortError(signal) : incompleteStreamError(connection.provider)) };
          } else {
            event = next;
            alive();
            if (connection.price) {
              const usage = event.type === "usage" || event.type === "finish" ? event.usage : undefined;
              const pending = usage && usage.cost === undefined ? priceUsage(usage, connection.price) : undefined;
              if (pending) await pending;
            }
          }
        } catch (error) {
          open = false;
          // A call aborted by a time limit fails with whatever its client says about the abort.
          const failure = watchdog?.expired && !signal?.aborted ? watchdog.expired : toAgentLoopError(error, { provider: connection.provider, apiKeyEnvVar: connection.apiKeyEnvVar, signal });
          event = { type: "error", error: failure };
        }
        if (!delivered) {
          if (event.type === "response-start") {
            held = event;
            continue;
          }
          retryError = retryFor(event, attemptNumber, maxRetries, signal);
          if (retryError) break;
          delivered = true;
          if (held) yield held;
        }
        yield event;
        if (isTerminal(event)) return;
      }
    } finally {
      // Stops reading the call (as a `for await` that leaves early does); the call ended already.
      if (open) await Promise.resolve(iterator!.return?.()).catch(noActivity);
      watchdog?.stop();
      unlink();
    }
    const end = await backOff(attemptNumber, retryError, retry, signal);
    if (end) {
      yield end;
      return;
    }
  }
}

const noActivity = () => undefined;

/** Key used for servers that need none (Ollama, vLLM, llama.cpp): the SDKs insist on one. */
export const placeholderApiKey = "not-needed";

/**
 * The key to use. A missing key is a configuration error when the official API is the target;
 * a custom base URL (a local compatible server) gets a placeholder.
 */
export function resolveApiKey(options: {
  apiKey?: string;
  envVar: string;
  env: Record<string, string | undefined>;
  baseURL?: string;
  officialHost: string;
  provider: string;
}): string {
  const key = options.apiKey ?? options.env[options.envVar];
  if (key) return key;
  const isOfficial = !options.baseURL || safeHost(options.baseURL) === options.officialHost;
  if (!isOfficial) return placeholderApiKey;
  throw new AgentLoopError("configuration", `${options.provider}: no API key: set ${options.envVar} (or pass apiKey)`, {
    provider: options.provider,
    retryable: false,
  });
}

/** Checks a base URL up front: a typo should fail at construction, not as a network error later. */
export function checkBaseURL(baseURL: string | undefined, provider: string, variable: string): string | undefined {
  if (baseURL === undefined || baseURL === "") return undefined;
  let protocol = "";
  try {
    protocol = new URL(baseURL).protocol;
  } catch {
    // reported below
  }
  if (protocol !== "http:" && protocol !== "https:") {
    throw new AgentLoopError("configuration", `${provider}: base URL ${JSON.stringify(baseURL)} is not an http(s) URL (check baseURL or ${variable})`, {
      provider,
      retryable: false,
    });
  }
  return baseURL;
}

function safeHost(url: string): string | undefined {
  try {
    return new URL(url).host;
  } catch {
    return undefined;
  }
}

/** Options passed through to one provider: `providerOptions[key]` for each key, merged in order. */
export function providerOptionsFor(request: ModelRequest, keys: readonly string[]): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  for (const key of keys) Object.assign(merged, request.options?.providerOptions?.[key] ?? {});
  return merged;
}

/** Tool-result or message content as plain text (images dropped). */
export function contentText(content: string | Array<TextPart | ImagePart>): string {
  if (typeof content === "string") return content;
  return content
    .filter((part): part is TextPart => part.type === "text")
    .map((part) => part.text)
    .join("");
}

/** Parses tool arguments; anything but a JSON object becomes `{}` (the loop reports bad arguments). */
export function parseArgumentsObject(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text || "{}");
    return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** A data URL for an image part given as base64. */
export function imageUrl(part: ImagePart): string | undefined {
  if (part.url) return part.url;
  if (part.data) return `data:${part.mediaType ?? "image/png"};base64,${part.data}`;
  return undefined;
}

export const numberOr = (value: unknown, fallback = 0): number => (typeof value === "number" && Number.isFinite(value) ? value : fallback);

/** Providers insist on an object schema for tool arguments; a schema without a type (`{}`) becomes one. */
export function objectSchema(parameters: JsonSchema | undefined): JsonSchema {
  if (parameters && typeof parameters === "object" && parameters.type !== undefined) return parameters;
  return { type: "object", properties: {}, ...(parameters ?? {}) };
}

/** The default of `timeoutMs`, as in the SDKs. */
export const defaultTimeoutMs = 600_000;

/** The connection defaults of both OpenAI adapters. */
export function openaiConnection(provider: string): ConnectionDefaults {
  return { provider, apiKeyEnvVar: "OPENAI_API_KEY", baseUrlEnvVar: "OPENAI_BASE_URL", officialHost: "api.openai.com", defaultPath: "/v1" };
}

/** Usage from a provider's counts: a missing count is 0, a missing total is input + output. */
export function tokenUsage(counts: { input?: unknown; output?: unknown; total?: unknown; cached?: unknown; reasoning?: unknown }): Usage {
  const inputTokens = numberOr(counts.input);
  const outputTokens = numberOr(counts.output);
  return {
    inputTokens,
    outputTokens,
    totalTokens: numberOr(counts.total, inputTokens + outputTokens),
    cachedInputTokens: numberOr(counts.cached),
    reasoningTokens: numberOr(counts.reasoning),
  };
}

/** The error that ends a turn the model refused to answer (never retried). */
export function refusalError(provider: string, detail: string): AgentLoopError {
  return new AgentLoopError("refusal", `${provider} refused to answer${detail}`, { provider });
}

/**
 * The request fields all three wires name alike: `tools` and `tool_choice` (only when there are
 * tools; each wire maps a tool and the choice its own way, or the whole list with `wireTools`),
 * `temperature` and `top_p`.
 */
export function commonRequestFields(
  request: ModelRequest,
  wireTool: (tool: ToolDefinition) => unknown,
  wireToolChoice: (choice: Exclude<ToolChoice, undefined>) => unknown,
  wireTools?: (tools: readonly ToolDefinition[]) => unknown,
): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (request.tools && request.tools.length > 0) {
    fields.tools = wireTools ? wireTools(request.tools) : request.tools.map(wireTool);
    if (request.toolChoice !== undefined) fields.tool_choice = wireToolChoice(request.toolChoice);
  }
  if (request.options?.temperature !== undefined) fields.temperature = request.options.temperature;
  if (request.options?.topP !== undefined) fields.top_p = request.options.topP;
  return fields;
}

/**
 * OpenAI's `prompt_cache_key` for a request: its session, so every call of one conversation is
 * routed to the same prompt cache (a long id is hashed to 64 characters). None without a session.
 */
export function promptCacheKey(request: ModelRequest): string | undefined {
  const session = request.sessionId;
  if (!session || request.options?.promptCaching === false) return undefined;
  return session.length <= 64 ? session : createHash("sha256").update(session).digest("hex");
}

/**
 * Appends `items` to the conversation as a turn of `role`, merged into the last turn when it has
 * the same role (Anthropic and Gemini want the roles to alternate); no turn for no items.
 */
export function appendTurn<K extends string, Role, Item>(turns: Array<{ role: Role } & Record<K, Item[]>>, key: K, role: Role, items: Item[]): void {
  if (items.length === 0) return;
  const last = turns[turns.length - 1];
  if (last && last.role === role) last[key].push(...items);
  else turns.push({ role, [key]: [...items] } as { role: Role } & Record<K, Item[]>);
}

/** The events a mapper collected so far, emptying the list (the adapters' per-chunk buffer). */
export function* drain(out: ModelEvent[]): Generator<ModelEvent> {
  for (let index = 0; index < out.length; index++) yield out[index];
  out.length = 0;
}
