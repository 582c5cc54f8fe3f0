// `agentloop/anthropic`: the Anthropic Messages adapter.
export { AnthropicModel, type AnthropicMessageData, type AnthropicOptions, type AnthropicProviderData, anthropic, anthropicMessages, anthropicUsage } from "./messages.js";
