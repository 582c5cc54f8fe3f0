// agentloop/a2a: delegate to remote agents over the A2A protocol (official @a2a-js/sdk client).
export { type A2AAgentToolOptions, type A2AProgress, a2aAgentTool } from "./client.js";
