// `durableAgent`: an agent whose runs are DBOS workflows, and the handle to start, decide, read,
// list, cancel, resume and recover them.
import { DBOS } from "@dbos-inc/dbos-sdk";
import { Agent } from "../loop/agent.js";
import { listRuns, recoverRuns, showRun } from "./admin.js";
import { approvalWait, expiredApprovals, sendDecisions, wakeCancelled } from "./approvals.js";
import { abortCancelled, executions, RunStoppingError, stopHere } from "./cancellation.js";
import { readJournal } from "./journal.js";
import { ensureLaunched, isLaunched, launchDbos, shutdownDbos } from "./launch.js";
import { durableModel } from "./model-calls.js";
import { durableMemory, memoryStartOf } from "./memory.js";
import { durableTool, durableToolset, isToolset } from "./tool-calls.js";
import type { DurableAgent, DurableOptions, DurableRun, DurableRunResult, StoredOptions } from "./types.js";
import { listeners, registerRunWorkflow } from "./workflow.js";

/** How long `resume` waits for a run's execution in this process to stop before it runs again. */
const RESUME_WAIT_MS = 10_000;

/** Cancels run `runId` (DBOS's cancel) and stops what of it waits or runs, here or elsewhere, at once. */
async function cancelRun(runId: string): Promise<void> {
  await DBOS.cancelWorkflow(runId);
  // Executing here: its loop stops now, not at DBOS's next poll (about a second).
  abortCancelled(runId);
  // Waiting for decisions (here or in another process): its wait stops now, not in up to 10 s.
  await wakeCancelled(runId);
}

/** The names of this process's durable agents: each names its runs' workflow, registered once. */
const durableNames = new Set<string>();

/**
 * Makes an agent's runs durable: each run is a DBOS workflow whose steps are the model calls and tool
 * calls of the agent's loop. Create durable agents before the first `launch()` (DBOS registers
 * workflows before it starts); one database per process.
 */
export function durableAgent(agent: Agent, options: DurableOptions): DurableAgent {
  if (!(agent instanceof Agent)) throw new TypeError("durableAgent: the first argument must be an Agent");
  if (!options || typeof options.databaseUrl !== "string" || !/^postgres(ql)?:\/\//.test(options.databaseUrl)) {
    throw new TypeError(`durableAgent: databaseUrl must be a postgres:// URL, got ${JSON.stringify(options?.databaseUrl)}`);
  }
  if (isLaunched()) throw new Error(`durableAgent: agent "${agent.name}" is created after launch(): create every durable agent before (DBOS registers their workflows before it starts)`);
  if (durableNames.has(agent.name)) throw new Error(`durableAgent: an agent named "${agent.name}" is durable already in this process: give each durable agent its own name`);
  const config = agent.config;
  const inner = new Agent({
    ...config,
    model: durableModel(agent.model),
    tools: (config.tools ?? []).map((source) => (isToolset(source) ? durableToolset(source) : durableTool(source))),
    memory: config.memory ? durableMemory(config.memory) : undefined,
  });
  const workflowName = `agentloop.run.${agent.name}`;
  const workflow = registerRunWorkflow(inner, options, workflowName);
  durableNames.add(agent.name);
  /** Whether run `runId` is one of this agent's: at once when it executes here, else one query. */
  const isOwn = async (runId: string) => {
    const here = executions.get(runId);
    if (here) return here.workflow === workflowName;
    return (await DBOS.getWorkflowStatus(runId))?.workflowName === workflowName;
  };
  /** Refuses a run that is not this agent's (another durable agent's in the same database, or none). */
  const ownRun = async (what: string, runId: string) => {
    if (!(await isOwn(runId))) throw new Error(`durable ${what}: no run "${runId}" of agent "${agent.name}"`);
  };
  const handleOf = (runId: string): DurableRun => ({
    runId,
    result: () => DBOS.retrieveWorkflow<DurableRunResult>(runId).getResult({ pollingIntervalMs: 100 }) as Promise<DurableRunResult>,
  });
  return {
    agent: inner,
    launch: () => launchDbos(options),
    async run(input, runOptions = {}) {
      if (typeof input !== "string") throw new TypeError("durable run: the input must be a string");
      ensureLaunched("run");
      const stored: StoredOptions = {
        sessionId: runOptions.sessionId,
        inputs: runOptions.inputs,
        newSession: runOptions.newSession,
        ...(runOptions.history ? { history: runOptions.history } : {}),
        ...(runOptions.output ? { output: runOptions.output } : {}),
        ...(runOptions.journal !== undefined ? { journal: runOptions.journal } : {}),
      };
      // Where the session's log stands: a later execution of the run (a recovery, a resume) reads
      // what the run stored after it, and does not store it again (memory.ts).
      const memoryStart = await memoryStartOf(config.memory, runOptions.sessionId);
      if (memoryStart !== undefined) stored.memoryStart = memoryStart;
      const runId = runOptions.runId ?? `run_${crypto.randomUUID()}`;
      if (runOptions.onEvent) listeners.set(runId, runOptions.onEvent);
      const queued = options.queue && runOptions.partitionKey !== undefined;
      let handle: Awaited<ReturnType<ReturnType<typeof DBOS.startWorkflow<[string, StoredOptions], DurableRunResult>>>>;
      try {
        handle = await DBOS.startWorkflow(workflow, {
          workflowID: runId,
          ...(queued ? { queueName: options.queue!.name, enqueueOptions: { queuePartitionKey: runOptions.partitionKey } } : {}),
        })(input, stored);
      } catch (error) {
        listeners.delete(runId);
        throw error;
      }
      // Started here: the result comes from the running workflow, without polling the database
      // (a queued run may run in another process: its result is polled).
      const result = handle.getResult({ pollingIntervalMs: 100 }).finally(() => listeners.delete(runId));
      result.catch(() => undefined);
      return { runId, result: () => result };
    },
    retrieve: handleOf,
    async exists(runId) {
      ensureLaunched("exists");
      return isOwn(runId);
    },
    async approvalWait(runId) {
      ensureLaunched("approvalWait");
      return approvalWait(runId);
    },
    async expiredApprovals(runId) {
      ensureLaunched("expiredApprovals");
      return expiredApprovals(runId);
    },
    async decide(runId, decisions, { checkpointId } = {}) {
      ensureLaunched("decide");
      await sendDecisions(runId, decisions, checkpointId);
    },
    readJournal(runId, { after = 0 } = {}) {
      ensureLaunched("readJournal");
      return readJournal(runId, after);
    },
    async list(filter = {}) {
      ensureLaunched("list");
      return listRuns(workflowName, filter);
    },
    async show(runId) {
      ensureLaunched("show");
      return showRun(workflowName, runId);
    },
    async cancel(runId) {
      ensureLaunched("cancel");
      await ownRun("cancel", runId);
      await cancelRun(runId);
    },
    async resume(runId, { waitMs = RESUME_WAIT_MS } = {}) {
      ensureLaunched("resume");
      if (typeof waitMs !== "number" || !(waitMs >= 0)) throw new TypeError(`durable resume: waitMs must be a non-negative number of milliseconds, got ${String(waitMs)}`);
      await ownRun("resume", runId);
      const here = executions.get(runId);
      if (here) {
        // Still executing here (cancelled a moment ago, or running): it is cancelled and its end
        // (its steps' too) awaited first, so that one execution at a time runs the run (docs/durable.md).
        await cancelRun(runId);
        const running = await stopHere(here, runId, waitMs);
        if (running) {
          const what = running.length === 0 ? "its loop" : `${running.join(", ")}, which ${running.length === 1 ? "ignores its signal" : "ignore their signals"}`;
          throw new RunStoppingError(`durable resume: run "${runId}" is still stopping: its cancelled execution in this process did not end within ${waitMs / 1000} s (still running: ${what}); try again once it has ended`, runId, running);
        }
      }
      // Back on the run's queue, in its partition (a cancel clears the run's queue, not its
      // partition key): without it DBOS's internal queue would run it beside its partition's running run.
      const queued = options.queue && (await DBOS.getWorkflowStatus(runId))?.queuePartitionKey !== undefined;
      await DBOS.resumeWorkflow(runId, queued ? { queueName: options.queue!.name } : undefined);
    },
    async recover(executorIds) {
      ensureLaunched("recover");
      return recoverRuns(workflowName, executorIds);
    },
    shutdown: shutdownDbos,
  };
}
