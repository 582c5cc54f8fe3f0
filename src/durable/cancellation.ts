// A durable run's cancellation (DBOS's cancel, from any process) reaching the run's loop.
import { DBOS, Error as DBOSErrors } from "@dbos-inc/dbos-sdk";
import { AgentLoopError } from "../errors.js";

/** A run executing in this process: the workflow of its agent, the signal its loop runs with, its steps in flight, and its end. */
export interface Execution {
  workflow: string;
  stop: AbortController;
  /**
   * The execution's steps in flight, each with what it runs (`tool "pay" (call c1)`): an aborted loop
   * ends without waiting for them, so a step whose work ignores its signal may outlive the loop.
   */
  steps: Map<Promise<unknown>, string>;
  /**
   * Settles once the execution's workflow function has ended (its loop stopped, its ending stored)
   * and every step it began has settled: nothing of it runs any more.
   */
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

/** Aborts an execution of run `runId` (if any) as cancelled: its loop stops at once. */
function abortExecution(execution: Execution | undefined, runId: string): void {
  execution?.stop.abort(new AgentLoopError("aborted", `run ${runId} was cancelled`));
}

/** Aborts this process's execution of run `runId` (if any) as cancelled: its loop stops at once. */
export function abortCancelled(runId: string): void {
  abortExecution(executions.get(runId), runId);
}

/**
 * `resume` refused: the run's cancelled execution in this process has not ended within the wait
 * (a tool that ignores its abort signal). The run stays as it was; resuming again once it has ended
 * works. `code` is "run_stopping" (the server's 409), `stillRunning` what had not settled.
 */
export class RunStoppingError extends Error {
  readonly code = "run_stopping";
  constructor(
    message: string,
    readonly runId: string,
    readonly stillRunning: string[],
  ) {
    super(message);
    this.name = "RunStoppingError";
  }
}

/**
 * Before run `runId` executes again (`resume`): its execution in this process (`here`, taken before
 * the run was cancelled: it may have ended since) is aborted and awaited, up to `timeoutMs`, steps
 * included (a tool that ignores its signal goes on after the aborted loop ended). DBOS's own cancel
 * reaches an execution by polling (about a second), and a resume puts the run back to ENQUEUED:
 * resumed within that second, the old execution never learned it was cancelled and ran on beside the
 * new one (its tool results, answer and ending stored twice, its side effects done twice). Undefined
 * once it has ended; else what of it still runs.
 */
export async function stopHere(here: Execution, runId: string, timeoutMs: number): Promise<string[] | undefined> {
  abortExecution(here, runId);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string[]>((resolve) => {
    timer = setTimeout(() => resolve([...here.steps.values()]), timeoutMs);
  });
  try {
    return await Promise.race([here.ended.then(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A step of run `runId`'s execution here, running `what` (a tool call, a model call): counted in
 * flight until it settles (the execution ends with its last step); if it fails because the run was
 * cancelled, the execution's loop is aborted first (this execution's: a step that outlived a
 * cancelled execution does not abort the run's next one).
 */
export function watched<T>(runId: string | undefined, what: string, step: Promise<T>): Promise<T> {
  const here = runId ? executions.get(runId) : undefined;
  if (here) {
    here.steps.set(step, what);
    const settled = () => here.steps.delete(step);
    step.then(settled, settled);
  }
  return step.catch((error: unknown) => {
    if (isCancelled(error)) abortExecution(here, runId!);
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
  const here = executions.get(runId);
  const onCancel = () => abortExecution(here, runId);
  if (signal.aborted) onCancel();
  signal.addEventListener("abort", onCancel, { once: true });
  try {
    return await work();
  } finally {
    signal.removeEventListener("abort", onCancel);
  }
}
