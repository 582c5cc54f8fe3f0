import { AgentLoopError } from "../errors.js";
import type { AgentConfig, DelegateTarget } from "../loop/types.js";
import { textOf } from "../messages.js";
import { scriptedModelFromEnv } from "../model/scripted.js";
import { withFallback } from "../model/fallback.js";
import type { Model } from "../model/model.js";
import type { Tool, ToolContext, ToolResultValue } from "../tools/tool.js";
import { DEFAULT_MAX_DELEGATION_DEPTH, TASK_PARAMETERS, delegationPath, delegationRefusal, errorResult, runDelegate, taskOf } from "./local.js";
import { singleModelCall } from "./single-call.js";

/** `single`: one model call with no tools. `agentic`: a full loop with the agent's own tools and limits. */
export type AgentToolMode = "single" | "agentic";

export interface AgentToolOptions {
  /** Default `agentic`. */
  mode?: AgentToolMode;
  /** Tool name (default: the agent's name). */
  name?: string;
  /** Tool description (default: the agent's description). */
  description?: string;
  /** Name of the calling agent, appended to the child's `agentPath` (cycle protection). */
  parentName?: string;
  /** Deepest delegation allowed (default 3). */
  maxDepth?: number;
}

/** Anything that exposes the config it was built from (the loop's `Agent` does). */
interface ConfiguredTarget extends DelegateTarget {
  readonly config?: AgentConfig;
}

function isDelegateTarget(value: unknown): value is ConfiguredTarget {
  return typeof value === "object" && value !== null && typeof (value as DelegateTarget).run === "function";
}

/** One model call with the agent's instructions and the task, no tools (traced with the agent's
 * instrumentation, under the calling tool). Never throws. */
async function runSingle(config: AgentConfig, agentName: string, task: string, context: ToolContext): Promise<ToolResultValue | string> {
  const response = await singleModelCall({
    // As in the Agent constructor: DEBUG_MOCK_RESPONSES replaces the model.
    model: scriptedModelFromEnv() ?? (Array.isArray(config.model) ? withFallback(config.model) : (config.model as Model)),
    messages: [...(config.instructions ? [{ role: "system" as const, content: config.instructions }] : []), { role: "user" as const, content: task }],
    options: config.modelOptions,
    signal: context.signal,
    agentName,
    instrumentation: config.instrumentation,
    depth: context.depth + 1,
    parentRunId: context.runId,
    parentToolCallId: context.toolCallId,
  });
  if (response.error) return errorResult(`Agent "${agentName}" failed: ${response.error.message}`);
  return textOf(response.message);
}

/**
 * An agent used as a tool with one `task` parameter. In `single` mode the task gets one model
 * call (the agent's instructions as the system prompt, no tools); in `agentic` mode it runs the
 * agent's full loop, with its events nested in the caller's stream.
 *
 * Accepts an `Agent` (or any `DelegateTarget`) or an `AgentConfig`. `single` mode needs the
 * config (model and instructions): pass an `AgentConfig` or an agent exposing `config`.
 */
export function agentTool(agentOrConfig: DelegateTarget | AgentConfig, options: AgentToolOptions = {}): Tool<{ task: string }> {
  const mode = options.mode ?? "agentic";
  if (mode !== "single" && mode !== "agentic") throw new TypeError(`agentTool: mode must be "single" or "agentic", got ${JSON.stringify(mode)}`);
  const target = isDelegateTarget(agentOrConfig) ? agentOrConfig : undefined;
  const config: AgentConfig | undefined = target ? target.config : (agentOrConfig as AgentConfig);
  const configModel = config?.model;
  if (!target && (!configModel || (Array.isArray(configModel) ? configModel.length === 0 : typeof (configModel as Model).stream !== "function"))) {
    throw new TypeError("agentTool: pass an Agent or an AgentConfig with a model");
  }
  if (mode === "single" && !config) {
    throw new TypeError(`agentTool: single mode needs the agent's config (model and instructions); pass an AgentConfig instead of "${target?.name}"`);
  }
  const agentName = options.name ?? target?.name ?? config?.name;
  if (!agentName) throw new TypeError("agentTool: the agent needs a name (set config.name or options.name)");
  const description = options.description ?? target?.description ?? config?.description ?? `Ask the agent "${agentName}".`;
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DELEGATION_DEPTH;
  let agentic: Promise<DelegateTarget> | undefined;
  // The loop module is loaded only when an agentic call first needs it.
  const agenticTarget = (): Promise<DelegateTarget> => {
    if (target) return Promise.resolve(target);
    agentic ??= import("../loop/agent.js").then(({ Agent }) => new Agent({ ...(config as AgentConfig), name: agentName }) as DelegateTarget);
    return agentic;
  };

  return {
    name: agentName,
    description,
    parameters: TASK_PARAMETERS,
    kind: "agent",
    action: "delegate",
    async execute(args, context: ToolContext) {
      const task = taskOf(args);
      if (task === undefined) return errorResult(`Agent "${agentName}" needs a non-empty "task" string.`);
      const path = delegationPath(context, options.parentName);
      const refusal = delegationRefusal(target?.name ?? config?.name ?? agentName, context, path, maxDepth);
      if (refusal) return errorResult(refusal);
      if (mode === "single") return runSingle(config as AgentConfig, agentName, task, context);
      try {
        const child = await agenticTarget();
        return await runDelegate(child, task, context, path);
      } catch (error) {
        return errorResult(`Agent "${agentName}" failed: ${AgentLoopError.from(error).message}`);
      }
    },
  };
}
