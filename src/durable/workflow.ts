// A durable run as a DBOS workflow: the agent's own loop with its durable model and tools, waiting
// for approvals between legs, and keeping a journal when asked.
import { DBOS } from "@dbos-inc/dbos-sdk";
import type { Agent } from "../loop/agent.js";
import type { LoopEvent } from "../loop/events.js";
import { waitForDecisions } from "./approvals.js";
import { type Execution, executions } from "./cancellation.js";
import { Journal, journals, journalWaiters } from "./journal.js";
import { beginExecution, endExecution, type StoredRun, storedCount } from "./memory.js";
import { closeModelCall, modelRecords, replayedStarts } from "./model-calls.js";
import { storedResult } from "./result.js";
import type { DurableOptions, DurableRunResult, StoredOptions } from "./types.js";

/** Live listeners of the runs started by this process (a function cannot be a workflow input). */
export const listeners = new Map<string, (event: LoopEvent) => void>();

/** A run's options as its loop gets them. */
type RunStored = Omit<StoredOptions, "journal" | "memoryStart">;

/** Settles once every step of `execution` has settled. */
async function settled(execution: Execution): Promise<void> {
  while (execution.steps.size > 0) await Promise.allSettled(execution.steps.keys());
}

/** The workflow of `inner`'s runs (`inner`: the agent with its durable model, tools and memory), registered as `name`. */
export function registerRunWorkflow(inner: Agent, options: DurableOptions, name: string) {
  const approvalTimeoutMs = inner.config.approvalTimeoutMs;

  /** A run that keeps a journal: its items go to local readers at once and to the database by batches. */
  async function journaledRun(input: string, runOptions: RunStored, spec: unknown, runId: string, signal: AbortSignal, replayedEvents: number, onEvent?: (event: LoopEvent) => void): Promise<DurableRunResult> {
    const encoder = options.journal!(spec, runId);
    const journal = new Journal();
    // An earlier execution's journal still here (a cancelled execution not ended yet): its readers go on with this one.
    const earlier = journals.get(runId);
    journals.set(runId, journal);
    if (earlier) for (const wake of earlier.readers) wake();
    const waiting = journalWaiters.get(runId);
    journalWaiters.delete(runId);
    if (waiting) for (const wake of waiting) wake();
    try {
      await encoder.begin?.({ replayedEvents });
      const journaled = (event: LoopEvent) => {
        const item = encoder.event(event);
        if (item !== undefined) journal.push(item);
        onEvent?.(event);
      };
      for (const item of encoder.start()) journal.push(item);
      let result = await inner.run(input, { ...runOptions, runId, onApproval: "interrupt", onEvent: journaled, signal });
      let closing = await encoder.end(result);
      // A leg that stopped for approvals ends its items (the client's stream ends there) once the
      // wait is announced (a client that saw the end can decide at once); the decision, sent from
      // any process, starts the next leg in the same run and journal.
      while (result.state === "INTERRUPTED" && result.checkpoint) {
        const ending = closing;
        const decisions = await waitForDecisions(result, approvalTimeoutMs, journal.items.length + ending.length, () => {
          for (const item of ending) journal.push(item);
          journal.flush();
        });
        for (const item of encoder.start()) journal.push(item);
        result = await inner.resume(result.checkpoint, { decisions, runId, sessionId: runOptions.sessionId, onApproval: "interrupt", onEvent: journaled, signal });
        closing = await encoder.end(result);
      }
      for (const item of closing) journal.push(item);
      await closeModelCall(runId);
      await journal.close();
      return storedResult(result);
    } finally {
      // Readers attached here finish from the items they hold; later ones read the database.
      if (journals.get(runId) === journal) journals.delete(runId);
      if (!journal.ended) for (const wake of journal.readers) wake();
    }
  }

  return DBOS.registerWorkflow(
    async (input: string, stored: StoredOptions): Promise<DurableRunResult> => {
      const runId = DBOS.workflowID!;
      const onEvent = listeners.get(runId);
      const { journal: spec, memoryStart, ...runOptions } = stored;
      const stop = new AbortController();
      let end!: () => void;
      const ended = new Promise<void>((resolve) => {
        end = resolve;
      });
      const execution: Execution = { workflow: name, stop, steps: new Map(), ended };
      executions.set(runId, execution);
      let skip: StoredRun | undefined;
      try {
        // A recovered or resumed execution replays the run from its start: what an earlier one stored is not stored again.
        skip = await beginExecution(inner.config.memory, runId, stored.sessionId, memoryStart);
        const replayedEvents = skip ? storedCount(skip) : 0;
        if (spec !== undefined && options.journal) return await journaledRun(input, runOptions, spec, runId, stop.signal, replayedEvents, onEvent);
        // Approvals stop the loop with a checkpoint; the workflow waits for the decisions as a DBOS
        // message (recorded: a recovered run does not wait again for what was decided), then resumes.
        let result = await inner.run(input, { ...runOptions, runId, onEvent, onApproval: "interrupt", signal: stop.signal });
        while (result.state === "INTERRUPTED" && result.checkpoint) {
          const decisions = await waitForDecisions(result, approvalTimeoutMs);
          result = await inner.resume(result.checkpoint, { decisions, runId, onEvent, sessionId: stored.sessionId, onApproval: "interrupt", signal: stop.signal });
        }
        return storedResult(result);
      } finally {
        // A model call left open (the loop stopped before the tools it asked for) is recorded before the run ends.
        await closeModelCall(runId).catch(() => undefined);
        endExecution(runId, skip);
        modelRecords.delete(runId);
        replayedStarts.delete(runId);
        // The execution ends with its last step: an aborted loop does not wait for a step whose work
        // ignores its signal (a tool), and a resume must not start the run again beside it.
        void settled(execution).then(() => {
          if (executions.get(runId) === execution) executions.delete(runId);
          end();
        });
      }
    },
    { name },
  );
}
