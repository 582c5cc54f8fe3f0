// agentloop/prompty: .prompty files (YAML frontmatter + a nunjucks template with role markers) run as agents.
export {
  DEFAULT_MAX_ITERATIONS,
  type InvokeAgentOptions,
  invokeAgent,
  iterationsExceeded,
  modelOptionsOf,
  PromptyRunError,
  type PromptyRuntimeTools,
  resolvePromptyModel,
  resumeAgent,
  runPrompty,
  type StartedPrompty,
  Steering,
  startAgent,
} from "./invoke.js";
export { estimateChars, promptyContextBudget, summarizeDropped } from "./context.js";
export { type PromptyEventData, type PromptyEventHandler, type PromptyEventType, type PromptyToolResult, promptyEventBridge } from "./events.js";
export { type LoadPromptyOptions, loadPrompty, parsePrompty, resolveEnvReferences } from "./loader.js";
export {
  getTool,
  getToolHandler,
  type PromptyKindCall,
  type PromptyKindHandler,
  type PromptyToolHandler,
  registerTool,
  registerToolHandler,
} from "./registry.js";
export { parseRoleMessages, prepare, propertiesSchema, renderTemplate, resolveInputs } from "./template.js";
export type { PromptyAgent, PromptyModel, PromptyProperty, PromptyToolSpec } from "./types.js";
