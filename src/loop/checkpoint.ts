/**
 * Checkpoints: what an interrupted run (state INTERRUPTED, waiting for approvals) hands back so a
 * later `agent.resume` — in this process or another — goes on exactly where it stopped.
 */
import { createHash, randomUUID } from "node:crypto";
import type { ApprovalDecision, PendingApproval, RunCheckpoint } from "../contracts/checkpoint.js";
import type { ToolCallPart } from "../messages.js";

export type { ApprovalDecision, CheckpointWave, NestedResume, PendingApproval, RemoteWait, RunCheckpoint } from "../contracts/checkpoint.js";

/** Canonical JSON (sorted keys), so equal arguments hash equally. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.keys(value as object)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export function argumentsHash(call: ToolCallPart, args: unknown): string {
  return createHash("sha256").update(`${call.id}\u0000${call.arguments}\u0000${canonical(args)}`).digest("hex").slice(0, 32);
}

export function newCheckpointId(): string {
  return `ckpt_${randomUUID()}`;
}

/**
 * Checkpoint ids resumed in this process. Across processes, `SessionMemory.checkpointResumed`
 * (the session's log records each resume as `approval_decided`) refuses a second resume.
 */
const resumed = new Set<string>();

/** Thrown by `agent.resume` for a checkpoint or decisions it refuses; the message says why. */
export class ResumeError extends Error {
  override name = "ResumeError";
}

/**
 * Checks a checkpoint and decisions before a resume, and marks the checkpoint used. Throws a
 * `ResumeError` naming the problem: not a checkpoint, another agent's, already resumed, a decision
 * for a call that is not pending, or for other arguments than the ones the approval was asked for.
 */
export function claimCheckpoint(checkpoint: RunCheckpoint, decisions: Record<string, ApprovalDecision>, agentName: string): void {
  if (!isCheckpoint(checkpoint)) {
    throw new ResumeError("agent.resume: the checkpoint is not a run checkpoint (expected the `checkpoint` of an INTERRUPTED run's result, version 1)");
  }
  if (checkpoint.agent !== agentName) {
    throw new ResumeError(`agent.resume: checkpoint ${checkpoint.id} belongs to agent "${checkpoint.agent}", not "${agentName}"`);
  }
  if (resumed.has(checkpoint.id)) throw new ResumeError(`agent.resume: checkpoint ${checkpoint.id} was already resumed; a checkpoint is resumed once (use the new run's checkpoint)`);
  if (!decisions || typeof decisions !== "object") throw new ResumeError("agent.resume: decisions must be an object { [toolCallId]: { approve: true } | { approve: false, reason? } }");
  const pending = new Map(checkpoint.pending.map((entry) => [entry.toolCallId, entry]));
  for (const [callId, decision] of Object.entries(decisions)) {
    const entry = pending.get(callId);
    if (!entry) {
      const open = [...pending.keys()];
      throw new ResumeError(`agent.resume: no approval is pending for tool call "${callId}" (pending: ${open.length ? open.join(", ") : "none"})`);
    }
    if (!decision || typeof decision !== "object" || typeof decision.approve !== "boolean") {
      throw new ResumeError(`agent.resume: the decision for "${callId}" must be { approve: true } or { approve: false, reason? }, got ${JSON.stringify(decision)}`);
    }
    if (decision.argumentsHash !== undefined && decision.argumentsHash !== entry.argumentsHash) {
      throw new ResumeError(
        `agent.resume: the decision for "${callId}" (${entry.toolName}) was made for other arguments (hash ${decision.argumentsHash}, pending ${entry.argumentsHash}); ask again`,
      );
    }
  }
  // The arguments in the checkpoint must still be the ones the approvals were asked for (a remote
  // worker's calls are checked by the worker, against the hashes it made).
  const remote = remoteCallIds(checkpoint);
  for (const entry of [...checkpoint.pending, ...Object.values(checkpoint.wave?.decided ?? {}).map((decided) => decided.request)]) {
    if (remote.has(entry.toolCallId)) continue;
    const call = findCall(checkpoint, entry);
    if (!call || argumentsHash(call, entry.arguments) !== entry.argumentsHash) {
      throw new ResumeError(`agent.resume: the arguments of tool call "${entry.toolCallId}" (${entry.toolName}) changed since the approval was requested; refusing to run them`);
    }
  }
  resumed.add(checkpoint.id);
}

/** A run checkpoint's shape, the sub-agents' checkpoints in its wave (`wave.nested`) included. */
function isCheckpoint(checkpoint: RunCheckpoint): boolean {
  if (
    !checkpoint ||
    typeof checkpoint !== "object" ||
    checkpoint.version !== 1 ||
    typeof checkpoint.id !== "string" ||
    !Array.isArray(checkpoint.pending) ||
    !Array.isArray(checkpoint.wave?.calls)
  ) {
    return false;
  }
  const nested = checkpoint.wave.nested;
  if (nested === undefined) return true;
  return nested !== null && typeof nested === "object" && Object.values(nested).every(isCheckpoint);
}

/** The ids of the calls waiting inside remote workers, anywhere in the checkpoint. */
function remoteCallIds(checkpoint: RunCheckpoint, into = new Set<string>()): Set<string> {
  if (checkpoint.remote) for (const entry of checkpoint.pending) into.add(entry.toolCallId);
  for (const nested of Object.values(checkpoint.wave?.nested ?? {})) remoteCallIds(nested, into);
  return into;
}

/** The tool call a pending approval is about, in the checkpoint or a nested one. */
function findCall(checkpoint: RunCheckpoint, entry: PendingApproval): ToolCallPart | undefined {
  const own = checkpoint.wave.calls.find((call) => call.id === entry.toolCallId);
  if (own) return own;
  for (const nested of Object.values(checkpoint.wave.nested ?? {})) {
    const call = findCall(nested, entry);
    if (call) return call;
  }
  return undefined;
}

/** Thrown by a delegating tool whose sub-agent stopped for an approval: the wave records the child's checkpoint. */
export class ToolInterrupt extends Error {
  override name = "ToolInterrupt";
  constructor(readonly checkpoint: RunCheckpoint) {
    super(`interrupted: ${checkpoint.pending.length} tool call(s) wait for approval`);
  }
}
