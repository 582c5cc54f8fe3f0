/**
 * Maps whatever an SDK or the network throws to one `AgentLoopError`. Duck-typed on the SDK error
 * shapes (status, headers, error body, class name) so this module imports no SDK and both
 * `openai` and `@anthropic-ai/sdk` errors map the same way.
 */
import { AgentLoopError, type ErrorKind } from "../errors.js";

export interface ErrorContext {
  /** Provider name shown in messages (`openai`, `anthropic`, ...). */
  provider: string;
  /** The variable that holds the key, named in authentication errors. */
  apiKeyEnvVar?: string;
  /** The caller's signal: an abort while it is aborted is always `aborted`, whatever was thrown. */
  signal?: AbortSignal;
}

const contextLengthPattern =
  /context[ _-]?length|context window|maximum context|too many tokens|prompt is too long|input is too long|reduce the length|exceeds the (model's )?(maximum|context)/i;

/** Milliseconds to wait from `retry-after-ms` (ms) or `retry-after` (seconds or an HTTP date). */
export function retryAfterMsFromHeaders(headers: unknown): number | undefined {
  const read = (name: string): string | undefined => {
    if (!headers || typeof headers !== "object") return undefined;
    if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
    const value = (headers as Record<string, unknown>)[name];
    return typeof value === "string" ? value : undefined;
  };
  const milliseconds = read("retry-after-ms");
  if (milliseconds !== undefined) {
    const value = Number.parseFloat(milliseconds);
    if (Number.isFinite(value) && value >= 0) return Math.round(value);
  }
  const retryAfter = read("retry-after");
  if (retryAfter === undefined) return undefined;
  const seconds = Number.parseFloat(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(retryAfter);
  if (Number.isFinite(date)) return Math.max(0, date - Date.now());
  return undefined;
}

/**
 * The wait a Google error body asks for: `error.details[]` of type `google.rpc.RetryInfo` with a
 * `retryDelay` such as `"27s"` or `"1.5s"` (sent with Gemini's 429 RESOURCE_EXHAUSTED).
 */
export function retryInfoDelayMs(body: unknown): number | undefined {
  const details = (body as { error?: { details?: unknown } } | undefined)?.error?.details;
  if (!Array.isArray(details)) return undefined;
  for (const detail of details) {
    const record = detail as { "@type"?: unknown; retryDelay?: unknown };
    if (typeof record?.["@type"] !== "string" || !record["@type"].endsWith("google.rpc.RetryInfo")) continue;
    const match = typeof record.retryDelay === "string" ? /^(\d+(?:\.\d+)?)s$/.exec(record.retryDelay.trim()) : null;
    if (match) return Math.round(Number.parseFloat(match[1]) * 1000);
  }
  return undefined;
}

/** True for a Google error body that says the API key is not valid (Gemini answers 400 for it). */
function googleInvalidKey(body: unknown): boolean {
  const details = (body as { error?: { details?: unknown } } | undefined)?.error?.details;
  return Array.isArray(details) && details.some((detail) => (detail as { reason?: unknown })?.reason === "API_KEY_INVALID");
}

/** The provider's own error type/code from an error body (`{error: {type, code, message}}` or flat). */
function errorBodyFields(body: unknown): { type?: string; code?: string; message?: string } {
  if (!body || typeof body !== "object") return {};
  const record = body as Record<string, unknown>;
  const inner = record.error && typeof record.error === "object" ? (record.error as Record<string, unknown>) : record;
  const pick = (value: unknown) => (typeof value === "string" ? value : undefined);
  return { type: pick(inner.type), code: pick(inner.code), message: pick(inner.message) };
}

/** Kind from a provider error type string when there is no HTTP status (errors sent inside a stream). */
function kindFromErrorType(type: string | undefined): ErrorKind | undefined {
  if (!type) return undefined;
  if (/context_length|context_window/.test(type)) return "context_length";
  if (/rate_limit/.test(type)) return "rate_limit";
  if (/overloaded|server_error|api_error|internal/.test(type)) return "server";
  if (/authentication|invalid_api_key/.test(type)) return "authentication";
  if (/permission/.test(type)) return "permission";
  if (/not_found/.test(type)) return "not_found";
  if (/timeout/.test(type)) return "timeout";
  if (/invalid_request|request_too_large|invalid_prompt/.test(type)) return "invalid_request";
  return undefined;
}

function kindFromStatus(status: number): ErrorKind {
  if (status === 400 || status === 413 || status === 422) return "invalid_request";
  if (status === 401) return "authentication";
  if (status === 402 || status === 403) return "permission";
  if (status === 404) return "not_found";
  if (status === 408) return "timeout";
  if (status === 429) return "rate_limit";
  if (status >= 500) return "server";
  return "unknown";
}

function isNetworkFailure(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current && depth < 5; depth++) {
    const record = current as { code?: unknown; message?: unknown; name?: unknown; cause?: unknown };
    const code = typeof record.code === "string" ? record.code : "";
    const message = typeof record.message === "string" ? record.message : "";
    if (/^(ECONNRESET|ECONNREFUSED|EPIPE|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|UND_ERR_SOCKET|UND_ERR_CONNECT_TIMEOUT|ERR_STREAM_PREMATURE_CLOSE)$/.test(code)) {
      return true;
    }
    if (/^(terminated|fetch failed|other side closed|socket hang up)$/i.test(message) || record.name === "SocketError") return true;
    current = record.cause;
  }
  return false;
}

/**
 * Turns anything thrown by an SDK call (or while reading its stream) into an `AgentLoopError`
 * with a kind, a retryable flag, the status and the server's retry-after hint.
 */
export function toAgentLoopError(error: unknown, context: ErrorContext): AgentLoopError {
  if (AgentLoopError.isInstance(error)) return error;
  const { provider } = context;
  const record = (error ?? {}) as { name?: string; status?: unknown; headers?: unknown; error?: unknown; message?: string; constructor?: { name?: string } };
  const className = record.constructor?.name ?? "";
  const name = record.name ?? "";
  const rawMessage = typeof record.message === "string" && record.message ? record.message : String(error);

  if (context.signal?.aborted || className === "APIUserAbortError" || name === "AbortError") {
    const reason = context.signal?.reason;
    const text = reason instanceof Error ? reason.message : typeof reason === "string" ? reason : "the request was aborted";
    return new AgentLoopError("aborted", text, { provider, cause: error, retryable: false });
  }
  if (className === "APIConnectionTimeoutError" || name === "TimeoutError") {
    return new AgentLoopError("timeout", `${provider}: the request timed out`, { provider, cause: error });
  }
  if (className === "APIConnectionError") {
    return new AgentLoopError("network", `${provider}: could not reach the server (${rawMessage})`, { provider, cause: error });
  }

  const status = typeof record.status === "number" ? record.status : undefined;
  const body = errorBodyFields(record.error);
  const detail = body.message ?? rawMessage;
  if (status !== undefined) {
    let kind = kindFromStatus(status);
    const looksLikeContextLength = body.code === "context_length_exceeded" || contextLengthPattern.test(detail);
    if ((kind === "invalid_request" || kind === "unknown") && looksLikeContextLength) kind = "context_length";
    if (kind === "invalid_request" && googleInvalidKey(record.error)) kind = "authentication";
    const retryAfterMs = retryAfterMsFromHeaders(record.headers) ?? retryInfoDelayMs(record.error);
    // A 429 for an exhausted quota never clears by waiting.
    const quotaExhausted = kind === "rate_limit" && (body.code === "insufficient_quota" || body.type === "insufficient_quota");
    let message = `${provider} ${status}: ${detail}`;
    if (kind === "authentication") {
      const variable = context.apiKeyEnvVar;
      message = `${provider} rejected the API key (${status} ${detail})${variable ? `: set ${variable} to a valid key` : ""}`;
    }
    return new AgentLoopError(kind, message, {
      provider,
      status,
      retryAfterMs,
      cause: error,
      retryable: quotaExhausted ? false : undefined,
    });
  }

  // Errors sent inside a stream carry a body but no status.
  const streamKind = kindFromErrorType(body.type) ?? kindFromErrorType(body.code);
  if (streamKind) {
    const kind = streamKind === "invalid_request" && contextLengthPattern.test(detail) ? "context_length" : streamKind;
    return new AgentLoopError(kind, `${provider}: ${detail}`, { provider, cause: error });
  }
  if (isNetworkFailure(error)) {
    return new AgentLoopError("network", `${provider}: the connection failed (${rawMessage})`, { provider, cause: error });
  }
  if (error instanceof SyntaxError || /could not parse|unexpected token|json/i.test(rawMessage)) {
    return new AgentLoopError("server", `${provider}: malformed data in the response stream (${rawMessage})`, {
      provider,
      cause: error,
      retryable: false,
    });
  }
  return new AgentLoopError("unknown", `${provider}: ${detail}`, { provider, cause: error });
}

/** The error for a stream that closed before the provider said it was complete. */
export function incompleteStreamError(provider: string): AgentLoopError {
  return new AgentLoopError("network", `${provider}: the response stream ended before the response was complete`, { provider });
}
