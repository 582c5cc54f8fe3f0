import type { ApprovalContext, ApprovalScope } from "../contracts/approvals.js";
import type { NestedResume } from "../contracts/checkpoint.js";
import type { LoopEvent } from "../contracts/events.js";
import type { ImagePart, Message, TextPart } from "../messages.js";
import type { JsonSchema } from "../model/model.js";

/** What a tool hands back. A plain string or any JSON value is the common case. */
export interface ToolResultValue {
  /** Text (or text and images) sent to the model. */
  content: string | Array<TextPart | ImagePart>;
  isError?: boolean;
  /** Structured data kept in the events (for example MCP `structuredContent`). */
  structured?: unknown;
}

export type ToolOutput = string | ToolResultValue | unknown;

/** Everything a running tool can use. */
export interface ToolContext {
  /** Aborted when the run is aborted or the tool's timeout passes. */
  signal: AbortSignal;
  runId: string;
  toolCallId: string;
  /** `<runId>:<toolCallId>`: stable for this call, across a durable run's recovery too. Pass it to
   * outside systems (payment APIs, queues) so a retried call is recognised as the same one. */
  idempotencyKey: string;
  toolName: string;
  /** The wave's step number (1-based), shared by all calls of one wave. */
  step: number;
  /** The run's inputs (used by bindings, sub-agents and prompty children). */
  inputs: Record<string, unknown>;
  /** How deep in a delegation chain this call is (0 for the top-level agent). */
  depth: number;
  /** Names of the agents above this call in a delegation chain, outermost first. */
  agentPath: readonly string[];
  /** Report progress: appears as a `tool-progress` event. */
  progress(data: unknown): void;
  /** Forward an event of a nested run (sub-agent): appears as a `nested` event in the parent's stream. */
  nested(agentName: string, event: LoopEvent): void;
  /** Opaque per-run values shared with tools (instrumentation puts trace context here). */
  services: Record<string, unknown>;
  /** The conversation so far (read-only), up to the model response that asked for this call. */
  messages?: readonly Message[];
  /** The run's approvals (set by the loop): delegating tools hand them to the sub-agent's run. */
  approvals?: ApprovalScope;
  /** Set when this call resumes a sub-agent that stopped for approvals: delegating tools resume it. */
  resume?: NestedResume;
}

export interface TruncationOptions {
  /** Characters kept at most (default 20,000). */
  maxChars?: number;
  /** Lines kept at most, applied after characters (default 1,000). */
  maxLines?: number;
  /** `head_tail` keeps the start and the end; `tail` keeps the end. Default `head_tail`. */
  mode?: "head_tail" | "tail";
}

/** A minimal structural view of a zod (v4) schema, so the core needs no zod import. */
export interface ZodLikeSchema {
  safeParse(value: unknown): { success: true; data: unknown } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } };
  "~standard"?: unknown;
}

/**
 * The one shape for everything callable: local functions, MCP tools, sub-agents and remote agents.
 */
export interface Tool<Args = Record<string, unknown>> {
  name: string;
  description: string;
  /** JSON Schema of the arguments object, or a zod object schema. */
  parameters: JsonSchema | ZodLikeSchema;
  execute(args: Args, context: ToolContext): ToolOutput | Promise<ToolOutput>;
  /** A sequential tool is a barrier: it runs alone, after the calls before it in the wave finished. */
  sequential?: boolean;
  /** Milliseconds before the call is abandoned with a timeout error result. */
  timeoutMs?: number;
  truncation?: TruncationOptions;
  /** Parameter name → run input name. Bound parameters are hidden from the model and always injected. */
  bindings?: Record<string, string>;
  /** `function`, `mcp`, `agent`, `a2a`, `prompty`...: what the progress block calls it. */
  kind?: string;
  /**
   * An MCP tool's server and its own name there. Its two names, `<server>.<tool>` and `<tool>`,
   * both name it wherever a tool is named (a model's call, `needsApproval`, `deniedTools`), the
   * bare one while no other tool has it (see `toolNames`).
   */
  mcp?: { server: string; tool: string };
  /** Safe to run again with the same arguments and idempotency key: in a durable run (see
   * `agentloop/durable`), a call in flight when the process died is run again only if this is true;
   * otherwise it gets an `Interrupted` error result. */
  idempotent?: boolean;
  /** For progress blocks: `delegate` for agents, `tool_call` otherwise (the default). */
  action?: "tool_call" | "delegate";
  /**
   * A call needs a person's approval before it runs: `true`, or a check of the (validated) arguments.
   * A check that throws asks for approval. See `AgentConfig.onApproval`.
   */
  needsApproval?: boolean | ApprovalCheck<Args>;
}

/** Method-typed, so a `Tool<{ path: string }>` is still a `Tool` (as `execute` allows). */
type ApprovalCheck<Args> = {
  check(args: Args, context: ApprovalContext): boolean | Promise<boolean>;
}["check"];

/** Every name that names `tool`: its own, and for an MCP tool `<server>.<tool>` and the bare `<tool>`. */
export function toolNames(tool: Pick<Tool<any>, "name" | "mcp">): string[] {
  if (!tool.mcp) return [tool.name];
  return [...new Set([tool.name, `${tool.mcp.server}.${tool.mcp.tool}`, tool.mcp.tool])];
}

export function defineTool<Args = Record<string, unknown>>(tool: Tool<Args>): Tool<Args> {
  if (!tool.name || typeof tool.name !== "string") throw new TypeError("defineTool: a tool needs a non-empty string name");
  if (typeof tool.execute !== "function") throw new TypeError(`defineTool: tool "${tool.name}" needs an execute function`);
  if (tool.needsApproval !== undefined && typeof tool.needsApproval !== "boolean" && typeof tool.needsApproval !== "function") {
    throw new TypeError(`defineTool: tool "${tool.name}": needsApproval must be true, false or a function (args, context) => boolean`);
  }
  return tool;
}

export function isZodSchema(schema: unknown): schema is ZodLikeSchema {
  return typeof schema === "object" && schema !== null && typeof (schema as ZodLikeSchema).safeParse === "function";
}
