/** Small helpers shared by the adapters: keys, provider options, content text, usage. */
import { AgentLoopError } from "../errors.js";
import type { ImagePart, TextPart } from "../messages.js";
import type { JsonSchema, ModelRequest } from "../model/model.js";
import type { RetryOptions } from "./retry.js";

/** Options every adapter accepts. */
export interface AdapterOptions {
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
  /** Per-request timeout in milliseconds (default: the SDK's, 10 minutes). */
  timeoutMs?: number;
  /** Retry policy (the SDK's own retries are always off). */
  retry?: RetryOptions;
  /** Environment to read keys and URLs from (default `process.env`). */
  env?: Record<string, string | undefined>;
}

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
