// agentloop/agents: sub-agents as tools (local delegation, agent as a tool, KAOS-style remote agents).
// The A2A client lives in agentloop/a2a so its SDK loads only when used.
export { type AgentToolMode, type AgentToolOptions, agentTool } from "./agent-tool.js";
export { type ChatMessage, type KaosAgentToolOptions, kaosAgentTool, TASK_DELEGATION_ROLE } from "./kaos.js";
export { DEFAULT_MAX_DELEGATION_DEPTH, type DelegateToolOptions, delegateTool } from "./local.js";
export { delegationFailed, type TraceHeadersService, traceHeadersOf } from "./remote.js";
