// `agentloop/server`: a KAOS-compatible agent server (OpenAI chat completions, A2A, memory routes).
export { type AgentServer, type AgentServerOptions, createAgentServer, type ReadyStatus, startAgentServer } from "./server.js";
export { buildAgentCard, A2A_PATH } from "./agent-card.js";
export { type ChatRequest, parseChatRequest } from "./chat-request.js";
export { HttpError, type OpenAIErrorBody } from "./http-errors.js";
export { type MemoryEventView, eventView } from "./memory.js";
export { SessionQueue } from "./session-queue.js";
export {
  type AgentFile,
  type AgentSettings,
  agentCardUrl,
  loadAgentFile,
  type McpServerSetting,
  parseAgentFile,
  resolveAgentSettings,
  settingsFrom,
  type SubAgentSetting,
  type ToolCallMode,
} from "../config/settings.js";
export { type AgentRuntime, type BuildAgentOptions, buildAgentRuntime, modelOfSettings, prepareAgentRuntime, type UnavailableDependency } from "../config/build-agent.js";
