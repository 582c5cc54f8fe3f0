/**
 * Approvals asked inside a remote worker (an agentloop server behind A2A or KAOS delegation),
 * surfaced by the delegating tool as its own: each of the worker's pending calls becomes an
 * `approval-request` (nested under the worker, its agent path going through it), then the tool
 * waits for the decisions like a local sub-agent (`onApproval: "wait"`, through the run's broker)
 * or stops the run (`"interrupt"`) with a checkpoint naming where the worker waits
 * (`RunCheckpoint.remote`). On resume the tool gets that checkpoint back (`context.resume`) and
 * sends the decisions to the worker, which checks them against its own hashes.
 */
import { AgentLoopError } from "../errors.js";
import { type ApprovalDecision, newCheckpointId, type PendingApproval, type RemoteWait, type RunCheckpoint, ToolInterrupt } from "../loop/checkpoint.js";
import type { ToolContext } from "../tools/tool.js";

/** A worker's report of the calls it waits on: a chat completion's `approval_required`, or the A2A data part's. */
export interface WireApprovalRequired {
  session_id?: string;
  checkpoint_id?: string;
  pending: Array<{ tool_call_id: string; tool: string; arguments: Record<string, unknown>; arguments_hash: string; agent_path: string[] }>;
}

/** The report in `value` when it has the wire shape, else undefined. */
export function approvalRequiredOf(value: unknown): WireApprovalRequired | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const pending = (value as { pending?: unknown }).pending;
  if (!Array.isArray(pending) || pending.length === 0) return undefined;
  for (const entry of pending) {
    const call = entry as Record<string, unknown> | null;
    if (typeof call !== "object" || call === null || typeof call.tool_call_id !== "string" || typeof call.tool !== "string" || typeof call.arguments_hash !== "string") return undefined;
    if (typeof call.arguments !== "object" || call.arguments === null || !Array.isArray(call.agent_path)) return undefined;
  }
  return value as WireApprovalRequired;
}

/** The worker's pending calls as this run's: the agent path goes through the worker. */
function pendingOf(report: WireApprovalRequired, context: ToolContext): PendingApproval[] {
  return report.pending.map((entry) => ({
    toolCallId: entry.tool_call_id,
    toolName: entry.tool,
    arguments: entry.arguments,
    argumentsHash: entry.arguments_hash,
    agentPath: [...context.agentPath, ...entry.agent_path.map(String)],
  }));
}

/** The run id the worker's events and checkpoint carry: its task, else its session, else its name. */
const workerRunId = (wait: RemoteWait) => wait.taskId ?? wait.sessionId ?? wait.agent;

/** A checkpoint that only says where the worker waits: the worker keeps its run. */
function remoteCheckpoint(wait: RemoteWait, pending: PendingApproval[]): RunCheckpoint {
  const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  return {
    version: 1,
    id: newCheckpointId(),
    agent: wait.agent,
    runId: workerRunId(wait),
    sessionId: wait.sessionId ?? wait.contextId,
    createdAt: new Date().toISOString(),
    pending,
    messages: [],
    firstNew: 0,
    inputs: {},
    counters: { turns: 0, toolRounds: 0, toolCalls: 0, inputTurns: 0, inputRounds: 0, loopWarnings: 0, signatures: [], usage },
    wave: { calls: [], done: {}, decided: {}, nested: {} },
    remote: wait,
  };
}

/**
 * The decisions for the calls a worker waits on. Emits an `approval-request` per call (nested under
 * the worker); then waits for them (wait mode) or throws the `ToolInterrupt` that stops the run
 * (interrupt mode). Each decision carries the worker's arguments hash, so the worker refuses a
 * decision made for other arguments.
 */
export async function remoteDecisions(wait: RemoteWait, report: WireApprovalRequired, context: ToolContext): Promise<Record<string, ApprovalDecision>> {
  const pending = pendingOf(report, context);
  const scope = context.approvals;
  const runId = workerRunId(wait);
  // Waiting before the requests go out: a listener may answer synchronously, from inside the event.
  const answers = scope?.mode === "wait" ? pending.map((entry) => scope.broker.wait(entry.toolCallId, entry.toolName, context.signal, scope.timeoutMs)) : undefined;
  for (const entry of pending) {
    const { toolCallId, toolName: name, arguments: args, argumentsHash, agentPath } = entry;
    context.nested(wait.agent, { type: "approval-request", runId, toolCallId, name, arguments: args, argumentsHash, agentPath });
  }
  if (!answers) throw new ToolInterrupt(remoteCheckpoint(wait, pending));
  const decisions: Record<string, ApprovalDecision> = {};
  for (const [index, entry] of pending.entries()) {
    const decision = await answers[index];
    if (!decision) throw new AgentLoopError("aborted", `the run was aborted while "${wait.agent}" waited for approvals`);
    decisions[entry.toolCallId] = { ...decision, argumentsHash: entry.argumentsHash };
    const reason = decision.approve ? undefined : decision.reason;
    context.nested(wait.agent, { type: "approval-decision", runId, toolCallId: entry.toolCallId, name: entry.toolName, approve: decision.approve, reason });
  }
  return decisions;
}

/**
 * The decisions to send to a worker this call resumes (`context.resume` names a remote checkpoint
 * of this protocol), else undefined. A decision given without an arguments hash is bound to the
 * hash of the request it answers.
 */
export function remoteResumeOf(context: ToolContext, protocol: RemoteWait["protocol"]): { wait: RemoteWait; decisions: Record<string, ApprovalDecision> } | undefined {
  const resume = context.resume;
  const wait = resume?.checkpoint.remote;
  if (!resume || wait?.protocol !== protocol) return undefined;
  const decisions: Record<string, ApprovalDecision> = {};
  for (const entry of resume.checkpoint.pending) {
    const decision = resume.decisions[entry.toolCallId];
    if (decision) decisions[entry.toolCallId] = { ...decision, argumentsHash: decision.argumentsHash ?? entry.argumentsHash };
  }
  return { wait, decisions };
}

/** Decisions in the wire shape of `POST /v1/approvals` and of an A2A `decisions` data part. */
export function wireDecisions(decisions: Record<string, ApprovalDecision>): Record<string, { approve: boolean; reason?: string; arguments_hash?: string }> {
  const wire: Record<string, { approve: boolean; reason?: string; arguments_hash?: string }> = {};
  for (const [callId, decision] of Object.entries(decisions)) {
    const reason = !decision.approve && decision.reason !== undefined ? { reason: decision.reason } : {};
    wire[callId] = { approve: decision.approve, ...reason, ...(decision.argumentsHash ? { arguments_hash: decision.argumentsHash } : {}) };
  }
  return wire;
}
