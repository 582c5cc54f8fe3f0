// agentloop/text-tools: tool calling for models without native tools. Each protocol wraps a
// plain-text Model and emits native-looking tool-call events, so the loop keeps a single path.
export {
  DELEGATE_PREFIX,
  AGENT_INSTRUCTIONS,
  type ActionToolCallingOptions,
  actionModeInstructions,
  actionToolCalling,
  FINAL_RESPONSE_PROMPT as ACTION_FINAL_RESPONSE_PROMPT,
  maxStepsMessage,
  NO_ACTION_INSTRUCTIONS,
  type ParsedAction,
  parseAction,
  TOOLS_INSTRUCTIONS,
} from "./action-mode.js";
export {
  codeFenceBodies,
  type ExtractedObjects,
  extractJsonObjects,
  type FoundObject,
  parseLenientJson,
  stripCodeFence,
} from "./json-extract.js";
export {
  FENCED_AGENT_INSTRUCTIONS,
  FENCED_TOOLS_INSTRUCTIONS,
  type FencedBlock,
  type FencedToolCallingOptions,
  fencedSystemPrompt,
  fencedToolCalling,
  parseFencedBlocks,
} from "./fenced-mode.js";
export {
  FINAL_RESPONSE_PROMPT as PLAN_FINAL_RESPONSE_PROMPT,
  PLAN_SCHEMA,
  type Plan,
  type PlannedTool,
  type PlanParseResult,
  type PlanToolCallingOptions,
  parsePlan,
  planModeInstructions,
  planToolCalling,
} from "./plan-mode.js";
export {
  type ParsedTextToolCall,
  parseStringToolCalls,
  type StringParseResult,
  type StringToolCallingOptions,
  stringModeInstructions,
  stringToolCalling,
} from "./string-mode.js";
export {
  isToolsUnsupportedError,
  parseToolCallMode,
  TOOL_CALL_MODES,
  type ToolCallMode,
  type ToolCallModeOptions,
  toolCallModeFromEnv,
  withToolCallMode,
} from "./tool-call-mode.js";
