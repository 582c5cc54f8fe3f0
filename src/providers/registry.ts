/**
 * Model selection by name: `openai:gpt-4.1`, `openai-responses:gpt-5`, `anthropic:claude-sonnet-4-5`, `google:gemini-2.5-flash`,
 * or a base URL + model name for any OpenAI-compatible server. Adapter modules (and their SDKs)
 * are imported only when a model of theirs is resolved, so this module stays light.
 */
import { AgentLoopError } from "../errors.js";
import type { Model } from "../model/model.js";
import { scriptedModelFromEnv } from "../model/scripted.js";
import type { RetryOptions } from "./retry.js";

export type Environment = Record<string, string | undefined>;

/** The providers `resolveModel` knows. `openai` is Chat Completions; `openai-chat` is an alias. */
export const providerNames = ["openai", "openai-chat", "openai-responses", "openai-compatible", "anthropic", "google"] as const;
export type ProviderName = (typeof providerNames)[number];

export interface ModelSpec {
  /** One of `providerNames`. Default: `openai-compatible` when `baseURL` is given, else `openai`. */
  provider?: string;
  model: string;
  baseURL?: string;
  apiKey?: string;
  /** Variable named in errors about the key (default per provider). */
  apiKeyEnvVar?: string;
  retry?: RetryOptions;
  timeoutMs?: number;
  headers?: Record<string, string>;
  /** `false` sends non-streaming requests (the JSON body is mapped into the same events). */
  stream?: boolean;
}

function configurationError(message: string): AgentLoopError {
  return new AgentLoopError("configuration", message, { retryable: false });
}

function isProviderName(name: string): name is ProviderName {
  return (providerNames as readonly string[]).includes(name);
}

/**
 * Splits `provider:model` at the first colon (model names may hold colons: `openai-compatible:llama3.2:3b`).
 * A name without a colon is an OpenAI model.
 */
export function parseModelSpec(spec: string): ModelSpec {
  const text = spec.trim();
  if (!text) throw configurationError('empty model spec: use "provider:model", for example "openai:gpt-4.1" or "anthropic:claude-sonnet-4-5"');
  const colon = text.indexOf(":");
  if (colon < 0) return { provider: "openai", model: text };
  return { provider: text.slice(0, colon), model: text.slice(colon + 1) };
}

/** A KAOS `MODEL_API_URL` is the server root (`http://ollama:11434`); the OpenAI API lives under `/v1`. */
export function compatibleBaseURL(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw configurationError(`not a valid URL: ${JSON.stringify(url)} (MODEL_API_URL / baseURL must look like http://host:port)`);
  }
  if (parsed.pathname === "" || parsed.pathname === "/") return `${url.replace(/\/+$/, "")}/v1`;
  return url.replace(/\/+$/, "");
}

/**
 * A model from a spec string or object. Keys and URLs come from the spec, else from `env`
 * (`OPENAI_API_KEY`, `OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`, `GEMINI_API_KEY` or
 * `GOOGLE_API_KEY`, `GOOGLE_GEMINI_BASE_URL`).
 * Throws an `AgentLoopError` of kind `configuration` (before any request) for an unknown
 * provider or a missing key, naming the variable to set.
 */
export async function resolveModel(spec: string | ModelSpec, env: Environment = process.env): Promise<Model> {
  const parsed: ModelSpec = typeof spec === "string" ? parseModelSpec(spec) : { ...spec };
  if (typeof parsed.model !== "string" || !parsed.model.trim()) {
    throw configurationError('a model spec needs a model name, for example "openai:gpt-4.1"');
  }
  const provider = parsed.provider ?? (parsed.baseURL ? "openai-compatible" : "openai");
  if (!isProviderName(provider)) {
    throw configurationError(
      `unknown provider "${provider}": use one of ${providerNames.join(", ")} (for example "anthropic:claude-sonnet-4-5"), or give a baseURL for an OpenAI-compatible server`,
    );
  }
  const common = { apiKey: parsed.apiKey, retry: parsed.retry, timeoutMs: parsed.timeoutMs, headers: parsed.headers, env };
  switch (provider) {
    case "openai":
    case "openai-chat": {
      const { OpenAIChatModel } = await import("./openai/chat.js");
      return new OpenAIChatModel(parsed.model, { ...common, baseURL: parsed.baseURL, apiKeyEnvVar: parsed.apiKeyEnvVar, stream: parsed.stream });
    }
    case "openai-compatible": {
      const baseURL = parsed.baseURL ?? env.OPENAI_BASE_URL ?? (env.MODEL_API_URL ? compatibleBaseURL(env.MODEL_API_URL) : undefined);
      if (!baseURL) {
        throw configurationError(`openai-compatible:${parsed.model} needs the server's URL: set OPENAI_BASE_URL (or MODEL_API_URL), or pass baseURL`);
      }
      const { OpenAIChatModel } = await import("./openai/chat.js");
      return new OpenAIChatModel(parsed.model, {
        ...common,
        baseURL,
        apiKeyEnvVar: parsed.apiKeyEnvVar ?? "OPENAI_API_KEY",
        providerName: "openai-compatible",
        stream: parsed.stream,
      });
    }
    case "openai-responses": {
      const { OpenAIResponsesModel } = await import("./openai/responses.js");
      return new OpenAIResponsesModel(parsed.model, { ...common, baseURL: parsed.baseURL, apiKeyEnvVar: parsed.apiKeyEnvVar, stream: parsed.stream });
    }
    case "anthropic": {
      const { AnthropicModel } = await import("./anthropic/messages.js");
      return new AnthropicModel(parsed.model, { ...common, baseURL: parsed.baseURL, apiKeyEnvVar: parsed.apiKeyEnvVar, stream: parsed.stream });
    }
    case "google": {
      const { GoogleModel } = await import("./google/gemini.js");
      return new GoogleModel(parsed.model, { ...common, baseURL: parsed.baseURL, apiKeyEnvVar: parsed.apiKeyEnvVar, stream: parsed.stream });
    }
    default: {
      const unreachable: never = provider;
      throw configurationError(`unknown provider ${unreachable}`);
    }
  }
}

export interface ModelFromEnvOptions {
  /** Used when neither `DEBUG_MOCK_RESPONSES` nor `MODEL_API_URL`/`MODEL_NAME` is set. */
  spec?: string | ModelSpec;
  env?: Environment;
}

/**
 * The model a deployment asks for, in this order: `DEBUG_MOCK_RESPONSES` (the scripted model),
 * `MODEL_API_URL` + `MODEL_NAME` (an OpenAI-compatible server, KAOS style; key from `MODEL_API_KEY`
 * or a placeholder), then `spec`. Throws a `configuration` error when nothing is configured.
 */
export async function modelFromEnv(options: ModelFromEnvOptions = {}): Promise<Model> {
  const env = options.env ?? process.env;
  const scripted = scriptedModelFromEnv(env as NodeJS.ProcessEnv);
  if (scripted) return scripted;
  if (env.MODEL_API_URL || env.MODEL_NAME) {
    if (!env.MODEL_API_URL) throw configurationError("MODEL_NAME is set but MODEL_API_URL is not: set MODEL_API_URL to the OpenAI-compatible server's URL");
    if (!env.MODEL_NAME) throw configurationError("MODEL_API_URL is set but MODEL_NAME is not: set MODEL_NAME to the model to use");
    return resolveModel(
      {
        provider: "openai-compatible",
        model: env.MODEL_NAME,
        baseURL: compatibleBaseURL(env.MODEL_API_URL),
        apiKey: env.MODEL_API_KEY,
        apiKeyEnvVar: "MODEL_API_KEY",
      },
      env,
    );
  }
  if (options.spec) return resolveModel(options.spec, env);
  throw configurationError(
    "no model configured: set DEBUG_MOCK_RESPONSES, or MODEL_API_URL and MODEL_NAME, or choose a model such as openai:gpt-4.1 (with OPENAI_API_KEY) or anthropic:claude-sonnet-4-5 (with ANTHROPIC_API_KEY)",
  );
}
