// Approvals in a durable run: the workflow waits for the decisions as a DBOS message, announced by
// two DBOS events (what it waits at, and the pending calls) that any process reads.
import { DBOS } from "@dbos-inc/dbos-sdk";
import type { ApprovalDecision } from "../loop/checkpoint.js";
import type { RunResult } from "../loop/events.js";
import { closeModelCall } from "./model-calls.js";
import { storedResult } from "./result.js";
import type { ApprovalWait, DurableRunInfo } from "./types.js";

// The names of the DBOS topic and events: any names do, as long as the sender and the reader agree
// (every process runs this module), so their mutants are equivalent (docs/mutation.md).
// Stryker disable next-line StringLiteral: a name both sides read from here
const APPROVALS_TOPIC = "agentloop.approvals";
// Stryker disable next-line StringLiteral: a name both sides read from here
const PENDING_KEY = "agentloop.pending";
// Stryker disable next-line StringLiteral: a name both sides read from here
const WAIT_KEY = "agentloop.approval-wait";
/** The ids of the run's checkpoints whose approvals expired (`approvalTimeoutMs` passed without a decision). */
// Stryker disable next-line StringLiteral: a name both sides read from here
const EXPIRED_KEY = "agentloop.approvals-expired";
/** The reason a call whose approval expired is rejected with: its result is `Rejected: approval expired`. */
export const APPROVAL_EXPIRED = "approval expired";
/** How long a durable run waits for approvals without `approvalTimeoutMs`: 7 days. */
const DEFAULT_APPROVAL_TIMEOUT_MS = 7 * 24 * 3600 * 1000;

/** The checkpoint id of the message that wakes a cancelled run's wait (no checkpoint has it). */
// Stryker disable next-line StringLiteral: any id no checkpoint has does
const CANCEL_WAKE = "agentloop.cancelled";
/** The message `decide` sends; `checkpointId` (when known) names the wait it is for. */
interface DecisionMessage {
  decisions: Record<string, ApprovalDecision>;
  checkpointId?: string;
}

/**
 * The workflow waits for the decisions of a run that stopped for approvals as a DBOS message
 * (recorded: a recovered run does not wait again for what was decided); no process is held but
 * the workflow's pending promise, and a restarted or recovering process waits again. Calls left
 * undecided, or not decided within `approvalTimeoutMs`, are rejected. `resumeAt`: the journal
 * position the next leg's items start after; `announced`: called once the wait is visible.
 */
export async function waitForDecisions(
  result: RunResult,
  approvalTimeoutMs: number | undefined,
  resumeAt = 0,
  announced?: () => void,
): Promise<Record<string, ApprovalDecision>> {
  await closeModelCall(DBOS.workflowID);
  const pending = result.checkpoint!.pending;
  // A checkpoint's id is new in each execution: the one announced first is recorded, for the
  // decisions (which name it) to match in a recovered execution too.
  const announcedId = await DBOS.runStep(async () => result.checkpoint!.id, { name: "checkpoint-id" });
  const timeoutSeconds = Math.ceil((approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS) / 1000);
  await DBOS.setEvent(WAIT_KEY, { resumeAt, result: storedResult(result) } satisfies ApprovalWait);
  await DBOS.setEvent(PENDING_KEY, pending.map((call) => ({ toolCallId: call.toolCallId, tool: call.toolName, arguments: call.arguments })));
  announced?.();
  let decided: Record<string, ApprovalDecision> | undefined;
  for (;;) {
    const message = await DBOS.recv<DecisionMessage>(APPROVALS_TOPIC, timeoutSeconds);
    if (!message) break;
    // A decision sent for another checkpoint of the run (a repeated request) is not this one's.
    if (message.checkpointId !== undefined && message.checkpointId !== announcedId) continue;
    decided = message.decisions;
    break;
  }
  await DBOS.setEvent(PENDING_KEY, []);
  // No decision within approvalTimeoutMs: the approvals expired (a later decision is refused, 410).
  if (!decided) {
    const expired = (await DBOS.getEvent<string[]>(DBOS.workflowID!, EXPIRED_KEY, 0)) ?? [];
    await DBOS.setEvent(EXPIRED_KEY, [...expired, announcedId]);
  }
  const decisions: Record<string, ApprovalDecision> = {};
  for (const call of pending) decisions[call.toolCallId] = decided?.[call.toolCallId] ?? { approve: false, reason: decided ? "no decision given" : APPROVAL_EXPIRED };
  return decisions;
}

/** Sends decisions to a run (from any process). With the checkpoint named, the run takes them only for that wait, and a repeated send is one message. */
export async function sendDecisions(runId: string, decisions: Record<string, ApprovalDecision>, checkpointId?: string): Promise<void> {
  if (typeof decisions !== "object" || decisions === null) throw new TypeError("durable decide: decisions must be an object keyed by tool call id");
  const message: DecisionMessage = { decisions, ...(checkpointId ? { checkpointId } : {}) };
  await DBOS.send(runId, message, APPROVALS_TOPIC, checkpointId ? `agentloop.decision.${checkpointId}` : undefined);
}

/**
 * A cancelled run waiting for decisions learns of its cancel only when DBOS polls its wait (every
 * 10 s), and a resumed run does not start here before that execution ends: a message for no
 * checkpoint wakes the wait, which finds the run cancelled and stops. Left unconsumed, the message is
 * taken and skipped by the run's next wait if it is resumed.
 */
export async function wakeCancelled(runId: string): Promise<void> {
  if ((await pendingApprovals(runId)).length === 0) return;
  await DBOS.send(runId, { decisions: {}, checkpointId: CANCEL_WAKE } satisfies DecisionMessage, APPROVALS_TOPIC);
}

/** The calls a run waits on a decision for (none when it does not wait). */
export async function pendingApprovals(runId: string): Promise<NonNullable<DurableRunInfo["pendingApprovals"]>> {
  return (await DBOS.getEvent<DurableRunInfo["pendingApprovals"]>(runId, PENDING_KEY, 0)) ?? [];
}

/** What a run waiting for approvals waits at (undefined when it does not wait). */
export async function approvalWait(runId: string): Promise<ApprovalWait | undefined> {
  if ((await pendingApprovals(runId)).length === 0) return undefined;
  return (await DBOS.getEvent<ApprovalWait>(runId, WAIT_KEY, 0)) ?? undefined;
}

/** The ids of a run's checkpoints whose approvals expired (no decision within `approvalTimeoutMs`). */
export async function expiredApprovals(runId: string): Promise<string[]> {
  return (await DBOS.getEvent<string[]>(runId, EXPIRED_KEY, 0)) ?? [];
}
