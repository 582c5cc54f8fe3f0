// `agentloop/openai`: the OpenAI adapters (Chat Completions for OpenAI and every compatible server; Responses API).
export { chatMessages, chatUsage, OpenAIChatModel, type OpenAIChatOptions, openaiChat } from "./chat.js";
export {
  OpenAIResponsesModel,
  type OpenAIResponsesOptions,
  openaiResponses,
  type ResponsesProviderData,
  responsesInput,
  responsesUsage,
} from "./responses.js";
