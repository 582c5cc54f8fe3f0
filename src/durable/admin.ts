// What `list`, `show` and `recover` read and do: DBOS's workflow status, through its public API.
import { DBOS, type WorkflowStatus } from "@dbos-inc/dbos-sdk";
import { pendingApprovals } from "./approvals.js";
import type { DurableRunInfo, DurableRunResult, StoredOptions } from "./types.js";

/** Runs of workflow `workflowName`, most recent first. */
export async function listRuns(workflowName: string, filter: { status?: string; sessionId?: string; limit?: number }): Promise<DurableRunInfo[]> {
  const rows = await DBOS.listWorkflows({
    workflowName,
    ...(filter.status ? { status: filter.status as never } : {}),
    limit: filter.sessionId ? undefined : (filter.limit ?? 100),
    sortDesc: true,
    loadInput: true,
    loadOutput: true,
  });
  const infos = rows.map(runInfo).filter((info) => filter.sessionId === undefined || info.sessionId === filter.sessionId);
  return filter.limit ? infos.slice(0, filter.limit) : infos;
}

/** One run with its steps and pending approvals; undefined when there is no such run of `workflowName`. */
export async function showRun(workflowName: string, runId: string): Promise<DurableRunInfo | undefined> {
  const [row] = await DBOS.listWorkflows({ workflowIDs: [runId], workflowName, loadInput: true, loadOutput: true });
  if (!row) return undefined;
  const info = runInfo(row);
  const steps = (await DBOS.listWorkflowSteps(runId)) ?? [];
  info.steps = steps.map((step) => ({ id: step.functionID, name: step.name, ...(step.error ? { error: step.error instanceof Error ? step.error.message : String(step.error) } : {}) }));
  if (row.status === "PENDING") {
    const pending = await pendingApprovals(runId);
    if (pending.length > 0) info.pendingApprovals = pending;
  }
  return info;
}

/**
 * Recovers the unfinished runs of executors that will not come back. DBOS's public API (5.x has no
 * public "recover executor X"; its recoverPendingWorkflows is internal): the executors' PENDING runs
 * of this code version, put back on the queue they ran from (a run started without a queue goes to
 * DBOS's internal one), where a live process takes them. Each execution is fenced by DBOS's owner
 * check, so a stale one parks. Returns their ids.
 */
export async function recoverRuns(workflowName: string, executorIds: string[]): Promise<string[]> {
  if (executorIds.length === 0) return [];
  const pending = await DBOS.listWorkflows({ workflowName, status: "PENDING", executorId: executorIds, applicationVersion: DBOS.applicationVersion });
  const byQueue = new Map<string | undefined, string[]>();
  for (const row of pending) {
    const ids = byQueue.get(row.queueName) ?? [];
    ids.push(row.workflowID);
    byQueue.set(row.queueName, ids);
  }
  for (const [queueName, ids] of byQueue) await DBOS.resumeWorkflows(ids, queueName ? { queueName } : undefined);
  return pending.map((row) => row.workflowID);
}

function runInfo(row: WorkflowStatus): DurableRunInfo {
  const [input, stored] = (row.input ?? []) as [string?, StoredOptions?];
  const output = row.output as DurableRunResult | undefined;
  return {
    runId: row.workflowID,
    status: row.status,
    ...(stored?.sessionId ? { sessionId: stored.sessionId } : {}),
    ...(typeof input === "string" ? { input } : {}),
    ...(row.executorId ? { executorId: row.executorId } : {}),
    ...(row.queueName ? { queue: row.queueName } : {}),
    createdAt: new Date(row.createdAt).toISOString(),
    ...(row.updatedAt ? { updatedAt: new Date(row.updatedAt).toISOString() } : {}),
    ...(output && typeof output === "object" && "state" in output ? { result: { state: output.state, reason: output.reason, text: output.text } } : {}),
  };
}
