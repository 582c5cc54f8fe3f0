// The tools of a prompty run: its declared tools (two-layer dispatch, prompty children, MCP
// servers) and the core tools added at invocation, each reporting to the run's Prompty events.
import { dirname, resolve } from "node:path";
import { childRunOptions, DEFAULT_MAX_DELEGATION_DEPTH, delegationPath, delegationRefusal, errorResult } from "../agents/local.js";
import { AgentLoopError } from "../errors.js";
import type { LoopEvent } from "../loop/events.js";
import type { Tool, ToolContext, ToolOutput, ToolResultValue } from "../tools/tool.js";
import type { PromptyEventBridge } from "./events.js";
import { failureMessage, type InvokeAgentOptions, label, maxIterationsOf, type PromptyRuntimeTools, runPrompty, startAgent } from "./invoke.js";
import { loadPrompty } from "./loader.js";
import { getTool, getToolHandler, type PromptyKindCall, type PromptyToolHandler } from "./registry.js";
import { propertiesSchema } from "./template.js";
import type { PromptyAgent, PromptyToolSpec } from "./types.js";

/**
 * A tool that throws gives the result `Error calling '<name>': <error type>: <message>`, as the
 * specification's vectors have it (§9.9's prose says `Error: Tool '<name>' failed: <message>`).
 */
export function toolFailure(name: string, error: unknown): ToolResultValue {
  const type = error instanceof Error ? error.name : "Error";
  const message = error instanceof Error ? error.message : String(error);
  return errorResult(`Error calling '${name}': ${type}: ${message}`);
}

function failuresAsResults(tool: Tool<any>): Tool<any> {
  const execute = tool.execute;
  return {
    ...tool,
    async execute(args, context) {
      try {
        return await execute.call(tool, args, context);
      } catch (error) {
        return toolFailure(tool.name, error);
      }
    },
  };
}

export interface BuildState {
  agent: PromptyAgent;
  inputs: Record<string, unknown>;
  options: InvokeAgentOptions;
  nameHandlers: Record<string, PromptyToolHandler>;
  /** The run's Prompty events: told when a handler starts. */
  events: Pick<PromptyEventBridge, "executing">;
  /** Opened for this run (MCP connections); closed when it ends. */
  cleanups: Array<() => Promise<void>>;
}

/** Two-layer dispatch for a declared tool: a name handler wins, then a kind handler, else an error. */
function dispatchingTool(spec: PromptyToolSpec, state: BuildState, builtIn?: (args: Record<string, unknown>, call: PromptyKindCall) => Promise<ToolOutput>): Tool<any> {
  return {
    name: spec.name,
    description: spec.description ?? `Tool ${spec.name}`,
    parameters: propertiesSchema(spec.parameters),
    bindings: Object.keys(spec.bindings).length ? spec.bindings : undefined,
    kind: spec.kind,
    action: spec.kind === "prompty" ? "delegate" : "tool_call",
    async execute(args: Record<string, unknown>, context: ToolContext) {
      try {
        const byName = state.nameHandlers[spec.name] ?? getTool(spec.name);
        if (byName) return await byName(args, context);
        const call: PromptyKindCall = { agent: state.agent, inputs: state.inputs, context };
        const byKind = getToolHandler(spec.kind);
        if (byKind) return await byKind(spec, args, call);
        if (builtIn) return await builtIn(args, call);
        throw new Error(`No handler registered for tool: ${spec.name} (kind: ${spec.kind})`);
      } catch (error) {
        return toolFailure(spec.name, error);
      }
    },
  };
}

/** A `prompty` tool: the child file (relative to the parent) run in `single` or `agentic` mode. */
async function promptyTool(spec: PromptyToolSpec, state: BuildState): Promise<Tool<any>> {
  const base = state.agent.path ? dirname(state.agent.path) : process.cwd();
  const child = await loadPrompty(resolve(base, spec.path!), { env: state.options.env });
  const tool = dispatchingTool(spec, state, (args, call) => runChild(child, spec.mode ?? "single", args, call.context, state));
  // The model fills in the child's inputs (bound ones hidden by the loop).
  tool.parameters = propertiesSchema(spec.parameters.length ? spec.parameters : child.inputs);
  tool.description = spec.description ?? child.description ?? `Run the prompty "${child.name}".`;
  return tool;
}

async function runChild(
  child: PromptyAgent,
  mode: "single" | "agentic",
  args: Record<string, unknown>,
  context: ToolContext,
  state: BuildState,
): Promise<ToolResultValue | string> {
  const path = delegationPath(context);
  const refusal = delegationRefusal(child.name, context, path, DEFAULT_MAX_DELEGATION_DEPTH);
  if (refusal) return errorResult(refusal);
  const { onEvent: _loopListener, ...runOptions } = childRunOptions(context, path);
  const inherited: InvokeAgentOptions = {
    model: state.options.model,
    env: state.options.env,
    instrumentation: state.options.instrumentation,
    ...runOptions,
    parentToolCallId: context.toolCallId,
  };
  if (mode === "single") return runPrompty(child, args, inherited).catch((error) => errorResult(AgentLoopError.from(error).message));
  const { run } = await startAgent(child, args, state.nameHandlers, inherited);
  for await (const event of run as AsyncIterable<LoopEvent>) context.nested(child.name, event);
  const result = await run;
  if (result.state === "COMPLETED") return result.text;
  return errorResult(failureMessage(child, result, maxIterationsOf(child, inherited)));
}

/** An `mcp` tool without a handler: connects to the server (agentloop/mcp) and exposes its tools. */
async function mcpTools(spec: PromptyToolSpec, state: BuildState): Promise<Tool<any>[]> {
  const connection = (spec.raw.connection ?? {}) as Record<string, unknown>;
  const url = connection.endpoint ?? connection.url;
  const serverName = typeof spec.raw.serverName === "string" && spec.raw.serverName ? spec.raw.serverName : spec.name;
  const common = {
    name: serverName,
    allowedTools: Array.isArray(spec.raw.allowedTools) ? (spec.raw.allowedTools as string[]) : undefined,
    naming: { prefix: spec.name },
  };
  const transport =
    typeof url === "string"
      ? { url, headers: connection.headers as Record<string, string> | undefined }
      : typeof connection.command === "string"
        ? { command: connection.command, args: connection.args as string[] | undefined, env: connection.env as Record<string, string> | undefined }
        : undefined;
  if (!transport) {
    throw new AgentLoopError("configuration", `mcp tool "${spec.name}" in ${label(state.agent)} needs connection.endpoint (a URL) or connection.command`, {
      retryable: false,
    });
  }
  const { connectMcp } = await import("../mcp/index.js");
  const toolset = await connectMcp({ ...common, ...transport });
  state.cleanups.push(() => toolset.close());
  return [...(await toolset.tools())];
}

/** The run's tools: the declared ones (bar those replaced by `runtime` core tools), then those. */
export async function buildTools(state: BuildState, runtime: PromptyRuntimeTools | undefined): Promise<Tool<any>[]> {
  const extra = Array.isArray(runtime) ? runtime : [];
  const replaced = new Set(extra.map((tool) => tool.name));
  const tools: Tool<any>[] = [];
  for (const spec of state.agent.tools) {
    if (replaced.has(spec.name)) continue;
    const handled = state.nameHandlers[spec.name] ?? getTool(spec.name) ?? getToolHandler(spec.kind);
    if (spec.kind === "prompty") tools.push(await promptyTool(spec, state));
    else if (spec.kind === "mcp" && !handled) tools.push(...(await mcpTools(spec, state)));
    else tools.push(dispatchingTool(spec, state));
  }
  return [...tools, ...extra.map(failuresAsResults)].map((tool) => announced(tool, state.events));
}

/** The tool, telling the run's Prompty events when its handler starts (§13.1: `tool_call_start` before execution). */
function announced(tool: Tool<any>, events: BuildState["events"]): Tool<any> {
  const execute = tool.execute;
  return {
    ...tool,
    execute(args, context) {
      events.executing(context.toolCallId);
      return execute.call(tool, args, context);
    },
  };
}
