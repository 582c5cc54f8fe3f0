// The core entry point: the loop, the model and tool contracts, the scripted model.
// Providers, MCP, agents, memory, tracing and the server live in their own subpath exports.
export { AgentLoopError, type ErrorKind, abortError } from "./errors.js";
export type {
  AssistantMessage,
  AssistantPart,
  ImagePart,
  Message,
  ProviderData,
  ReasoningPart,
  SystemMessage,
  TextPart,
  ToolCallPart,
  ToolResultMessage,
  UserContent,
  UserMessage,
} from "./messages.js";
export { textOf, toolCallsOf } from "./messages.js";
export { type Usage, addUsage, emptyUsage } from "./usage.js";
export {
  type FinishReason,
  generate,
  type JsonSchema,
  type Model,
  type ModelEvent,
  type ModelOptions,
  type ModelRequest,
  type ModelResponse,
  ResponseAccumulator,
  STEP_LIMIT_FINISH,
  type ResponseFormat,
  type ToolChoice,
  type ToolDefinition,
  type UnifiedFinishReason,
} from "./model/model.js";
export {
  NO_MORE_MOCK_RESPONSES,
  parseMockResponses,
  parseScriptEntry,
  ScriptedModel,
  type ScriptedModelOptions,
  scriptedModelFromEnv,
} from "./model/scripted.js";
export {
  defineTool,
  type Tool,
  type ToolContext,
  type ToolOutput,
  type ToolResultValue,
  type TruncationOptions,
  toolNames,
  type ZodLikeSchema,
} from "./tools/tool.js";
export { parseToolArguments } from "./tools/parse-arguments.js";
export type {
  LoopEvent,
  LoopEventType,
  ProgressBlock,
  RunResult,
  RunState,
  TerminalState,
  ToolErrorKind,
} from "./loop/events.js";
export type {
  AgentConfig,
  DelegateTarget,
  Instrumentation,
  LoopDetectionOptions,
  RunInfo,
  RunObserver,
  ResumeOptions,
  RunOptions,
  SessionMemory,
  ToolCallOutcome,
  Toolset,
} from "./loop/types.js";
export { Agent } from "./loop/agent.js";
export { type ContextBudget, estimateTokens } from "./loop/context.js";
export type { OutputSchema } from "./loop/output.js";
export { type ApprovalContext, ApprovalBroker, type ApprovalMode, approvalRequestOf } from "./loop/approvals.js";
export { type ApprovalDecision, type PendingApproval, ResumeError, type RunCheckpoint } from "./loop/checkpoint.js";
export type { GuardrailVerdict, Guardrails, InputGuardrailContext, OutputGuardrailContext, ToolDenyRule, ToolGuardrailContext, ToolGuardrailVerdict } from "./loop/guardrails.js";
export { Run } from "./loop/run.js";
export { truncateOutput } from "./loop/truncate.js";
