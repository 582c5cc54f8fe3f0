// A durable run's cancellation (DBOS's cancel, from any process) reaching the run's loop.
import { DBOS, Error as DBOSErrors } from "@dbos-inc/dbos-sdk";
import { AgentLoopError } from "../errors.js";

/** A run executing in this process: the workflow of its agent, the signal its loop runs with, and its end. */
export interface Execution {
  workflow: string;
  stop: AbortController;
  /** Settles once the execution's workflow function has ended (its loop stopped, its ending stored). */
  ended: Promise<void>;
}

/**
 * The runs executing in this process (of every durable agent: each tells its own by `workflow`): a
 * step that finds its run cancelled (`cancel`, DBOS's cancel, from any process) aborts the loop,
 * which stops at its next checkpoint (ABORTED) instead of going on with the failed step as an error.
 */
export const executions = new Map<string, Execution>();

function isCancelled(error: unknown): boolean {
  return error instanceof DBOSErrors.DBOSWorkflowCancelledError;
}

/** Aborts this process's execution of run `runId` (if any) as cancelled: its loop stops at once. */
export function abortCancelled(runId: string): void {
  executions.get(runId)?.stop.abort(new AgentLoopError("aborted", `run ${runId} was cancelled`));
}

/**
 * Before run `runId` executes again (`resume`): its execution in this process, if any, is aborted and
 * awaited, up to `timeoutMs`. DBOS's own cancel reaches an execution by polling (about a second), and a
 * resume puts the run back to ENQUEUED: resumed within that second, the old execution never learned it
 * was cancelled and ran on beside the new one (its tool results, answer and ending stored twice, its
 * side effects done twice). False when it did not end in time (a tool ignoring its signal).
 */
export async function stopHere(runId: string, timeoutMs: number): Promise<boolean> {
  const here = executions.get(runId);
  if (!here) return true;
  abortCancelled(runId);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([here.ended.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A step of run `runId`: if it fails because the run was cancelled, the run's loop is aborted first. */
export function watched<T>(runId: string | undefined, step: Promise<T>): Promise<T> {
  return step.catch((error: unknown) => {
    if (runId && isCancelled(error)) abortCancelled(runId);
    throw error;
  });
}

/**
 * Runs a step's work with the run's cancellation linked: DBOS's step cancel signal (it polls, so it
 * fires within about a second of a cancel) aborts the loop, and so the model call or tool in flight
 * (through the signal they get), instead of waiting for it to end.
 */
export async function cancellable<T>(work: () => Promise<T>): Promise<T> {
  const runId = DBOS.workflowID;
  const signal = DBOS.stepStatus?.cancelSignal;
  if (!runId || !signal) return work();
  const onCancel = () => abortCancelled(runId);
  if (signal.aborted) onCancel();
  signal.addEventListener("abort", onCancel, { once: true });
  try {
    return await work();
  } finally {
    signal.removeEventListener("abort", onCancel);
  }
}
