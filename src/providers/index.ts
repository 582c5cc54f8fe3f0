// `agentloop/providers`: model selection by name, the error mapping and the retry policy.
// Light on purpose: the adapters (and their SDKs) load only when a model of theirs is resolved.
export { type ErrorContext, incompleteStreamError, retryAfterMsFromHeaders, toAgentLoopError } from "./errors.js";
export {
  compatibleBaseURL,
  type Environment,
  type ModelFromEnvOptions,
  type ModelSpec,
  modelFromEnv,
  type ProviderName,
  parseModelSpec,
  providerNames,
  resolveModel,
} from "./registry.js";
export { defaultRetryOptions, type RetryOptions, retryDelayMs, retryingStream, withRetry } from "./retry.js";
export { type AdapterOptions, placeholderApiKey } from "./shared.js";
export { sanitizeToolName, ToolNameMap } from "./tool-names.js";
