/**
 * Client-side tools: tools a frontend declares (AG-UI `RunAgentInput.tools`, a chat completions
 * request's `tools`, agent-file tools marked `client: true`) and runs itself. One mechanism with
 * approvals: a client tool's call always stops the run at the approvals checkpoint (it "needs
 * approval"), and the client's result is its decision: the resumed wave runs the call, whose
 * `execute` hands back what the client supplied. So a continuation is the same loop going on from
 * its checkpoint, with every rule (guardrails, budgets, memory) applied as for any call.
 */
import type { PendingApproval } from "../loop/checkpoint.js";
import type { Tool } from "../tools/tool.js";
import { type ClientToolDeclaration, type ClientToolOutput, UiRequestError } from "./requests.js";

/** Marks a tool as the client's (the encoders and the server read it). */
export const CLIENT_TOOL = Symbol.for("agentloop.clientTool");

export type ClientTool = Tool<Record<string, unknown>> & { [CLIENT_TOOL]: true };

export const isClientTool = (tool: unknown): tool is ClientTool => typeof tool === "object" && tool !== null && (tool as Record<symbol, unknown>)[CLIENT_TOOL] === true;

/**
 * The tools of a run for the client's declarations; `outputs` are the results the client
 * supplied (by call id) when the run goes on. A call without a supplied result fails (it cannot
 * run here).
 */
export function clientTools(declarations: readonly ClientToolDeclaration[], outputs: Readonly<Record<string, ClientToolOutput>> = {}): ClientTool[] {
  return declarations.map((declaration) => ({
    [CLIENT_TOOL]: true as const,
    name: declaration.name,
    description: declaration.description,
    parameters: declaration.parameters as Tool["parameters"],
    needsApproval: true,
    execute: (_args: Record<string, unknown>, context: { toolCallId: string }) => {
      const supplied = outputs[context.toolCallId];
      if (!supplied) throw new Error(`the client supplied no result for its tool call ${context.toolCallId}`);
      if (supplied.isError) throw new Error(supplied.output);
      return supplied.output;
    },
  }));
}

/** A declared client tool named like one of the server's: the 400 naming it. */
export function clientToolClash(declarations: readonly ClientToolDeclaration[], serverToolNames: Iterable<string>, param: string, nameField = "name"): UiRequestError | undefined {
  const names = new Set(serverToolNames);
  const index = declarations.findIndex((declaration) => names.has(declaration.name));
  if (index < 0) return undefined;
  const field = `${param}[${index}].${nameField}`;
  return new UiRequestError(`${field} "${declarations[index].name}" is the name of one of the agent's own tools; rename the client tool`, field, "tool_name_clash");
}

/**
 * Checks the results a client supplies against the calls its run left pending: each must answer a
 * pending call of a client tool (a result for a call the run never made, or for a call waiting for
 * a person's approval, is refused). Returns the decisions that let those calls run.
 */
export function clientResultDecisions(outputs: Readonly<Record<string, ClientToolOutput>>, pending: readonly PendingApproval[], clientToolNames: ReadonlySet<string>): Record<string, { approve: true }> {
  const byId = new Map(pending.map((entry) => [entry.toolCallId, entry]));
  const decisions: Record<string, { approve: true }> = {};
  for (const callId of Object.keys(outputs)) {
    const entry = byId.get(callId);
    if (!entry) throw new UiRequestError(`a tool result for call "${callId}", which the run did not leave to the client (pending: ${[...byId.keys()].join(", ") || "none"})`, "tool_call_id", "unknown_tool_call");
    if (!clientToolNames.has(entry.toolName)) throw new UiRequestError(`call "${callId}" is a call of the agent's own tool ${entry.toolName}, waiting for approval; it takes a decision, not a result`, "tool_call_id", "not_a_client_tool_call");
    decisions[callId] = { approve: true };
  }
  return decisions;
}
