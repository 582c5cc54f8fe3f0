// MCP servers as ordinary tools: `agentloop/mcp`. Loads the MCP SDK; keep it out of the core import.
export {
  exposedToolName,
  type McpCommonConfig,
  type McpElicitation,
  type McpElicitationAnswer,
  type McpElicitationHandler,
  type McpHttpTransportConfig,
  type McpServerConfig,
  type McpStdioTransportConfig,
  type McpToolNaming,
  normalizeMcpUrl,
} from "./config.js";
export { type McpCallResult, mapCallResult } from "./result.js";
export { clientMetadataDocument, defaultTokenDir, type McpAuthConfig, type McpAuthorizationCodeAuth, type McpClientCredentialsAuth } from "./auth.js";
export { connectMcp, type McpCallOptions, McpToolset, McpToolsetGroup, type McpToolsetStatus, mcpToolset } from "./toolset.js";
// The shape an Agent accepts in `tools` besides single tools; McpToolset and McpToolsetGroup satisfy it.
export type { Toolset } from "../loop/types.js";
