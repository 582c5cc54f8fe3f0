// Local sub-agents as tools. The core `Agent` imports `delegateTool` from here to turn
// `config.subAgents` into tools, so this module stays light: type-only imports of the core.
import { ToolInterrupt } from "../loop/checkpoint.js";
import type { LoopEvent, RunResult } from "../loop/events.js";
import type { DelegateTarget, RunOptions } from "../loop/types.js";
import type { Tool, ToolContext, ToolResultValue } from "../tools/tool.js";

/** Nested delegation deeper than this is refused (the top-level agent is depth 0). */
export const DEFAULT_MAX_DELEGATION_DEPTH = 3;

export interface DelegateToolOptions {
  /** Name of the agent that owns this tool, when it is not already last in the context's `agentPath`
   * (the loop puts it there; set this only for tools called outside an `Agent`). */
  parentName?: string;
  /** Deepest delegation allowed (default 3): a call that would run the child deeper returns an error result. */
  maxDepth?: number;
  /** Tool name (default `delegate_to_<target name>`). */
  name?: string;
  /** Tool description (default: the target's description). */
  description?: string;
}

/** The one argument every delegation tool takes. */
export const TASK_PARAMETERS = {
  type: "object",
  properties: { task: { type: "string", description: "The task for the agent, stated completely: it sees nothing else." } },
  required: ["task"],
  additionalProperties: false,
} as const;

/** The `task` argument of a delegation call, or undefined when it is missing or blank. */
export function taskOf(args: { task?: unknown } | undefined): string | undefined {
  const task = args?.task;
  return typeof task === "string" && task.trim() !== "" ? task : undefined;
}

export function errorResult(message: string): ToolResultValue {
  return { content: message, isError: true };
}

/**
 * The child's `agentPath`. The loop already puts the calling agent last in `context.agentPath`;
 * `parentName` is appended only when it is not there (a tool used outside the loop's agents).
 */
export function delegationPath(context: ToolContext, parentName?: string): string[] {
  const path = [...(context.agentPath ?? [])];
  if (parentName && path.at(-1) !== parentName) path.push(parentName);
  return path;
}

/** Why a delegation must not start (too deep, or a cycle), or undefined when it may. */
export function delegationRefusal(targetName: string, context: ToolContext, path: readonly string[], maxDepth: number): string | undefined {
  const depth = context.depth + 1;
  if (depth > maxDepth) {
    return `Delegation refused: "${targetName}" would run at depth ${depth}, beyond the maximum delegation depth of ${maxDepth} (path: ${path.join(" > ")}).`;
  }
  if (path.includes(targetName)) {
    return `Delegation refused: "${targetName}" is already running in this delegation chain (${[...path, targetName].join(" > ")}); delegating to it again would be a cycle.`;
  }
  return undefined;
}

/** The run options a child gets from the calling tool's context. */
export function childRunOptions(context: ToolContext, path: readonly string[]): RunOptions {
  return {
    signal: context.signal,
    depth: context.depth + 1,
    agentPath: path,
    parentRunId: context.runId,
    parentToolCallId: context.toolCallId,
    services: context.services,
    approvals: context.approvals,
  };
}

/**
 * Runs a delegate target to completion, forwarding each of its events into the parent's stream,
 * and turns its result into a tool result: the final text, or an error result naming the state
 * and reason when the child did not complete.
 */
export async function runDelegate(target: DelegateTarget, task: string, context: ToolContext, path: readonly string[]): Promise<ToolResultValue | string> {
  // A call resumed after approvals resumes the sub-agent's stopped run instead of starting one.
  const resume = context.resume;
  const run = resume && target.resume ? target.resume(resume.checkpoint, { ...childRunOptions(context, path), decisions: resume.decisions }) : target.run(task, childRunOptions(context, path));
  try {
    for await (const event of run as AsyncIterable<LoopEvent>) context.nested(target.name, event);
  } catch (error) {
    // A Run's iterator should not throw; if a foreign target's does, the result below still says what happened.
    const message = error instanceof Error ? error.message : String(error);
    return errorResult(`Sub-agent "${target.name}" failed: ${message}`);
  }
  const result: RunResult = await run;
  // The sub-agent stopped for approvals: the parent's run stops too, its checkpoint nesting this one.
  if (result.state === "INTERRUPTED" && result.checkpoint) throw new ToolInterrupt(result.checkpoint);
  return resultToToolOutput(target.name, result);
}

function resultToToolOutput(agentName: string, result: RunResult): ToolResultValue | string {
  if (result.state === "COMPLETED") return result.text;
  const partial = result.text ? ` Partial answer: ${result.text}` : "";
  return errorResult(`Sub-agent "${agentName}" ended with state ${result.state}: ${result.reason}.${partial}`);
}

/**
 * A tool `delegate_to_<name>` that hands a task to a local sub-agent. The child runs its own loop
 * with the parent's abort signal and services; its events appear nested in the parent's stream.
 * A call deeper than `maxDepth` or to an agent already in the chain returns an error result.
 */
export function delegateTool(target: DelegateTarget, options: DelegateToolOptions = {}): Tool<{ task: string }> {
  if (!target || typeof target.run !== "function" || typeof target.name !== "string" || target.name === "") {
    throw new TypeError("delegateTool: the target needs a non-empty name and a run(input, options) method");
  }
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DELEGATION_DEPTH;
  return {
    name: options.name ?? `delegate_to_${target.name}`,
    description: options.description ?? target.description ?? `Delegate a task to the agent "${target.name}".`,
    parameters: TASK_PARAMETERS,
    kind: "agent",
    action: "delegate",
    async execute(args, context) {
      const task = taskOf(args);
      if (task === undefined) return errorResult(`Delegation to "${target.name}" needs a non-empty "task" string.`);
      const path = delegationPath(context, options.parentName);
      const refusal = delegationRefusal(target.name, context, path, maxDepth);
      if (refusal) return errorResult(refusal);
      return runDelegate(target, task, context, path);
    },
  };
}
