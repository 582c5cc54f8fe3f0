/**
 * Durable runs on PostgreSQL with DBOS Transact (`@dbos-inc/dbos-sdk`, loaded only by this subpath).
 *
 * A durable run is the agent's own loop, unchanged, run as a DBOS workflow. What makes it durable is
 * the two calls the loop makes to the outside world: `Model.stream` and `Tool.execute`. The durable
 * agent hands the loop a model and tools whose calls are DBOS steps, so each model response and each
 * tool result is checkpointed in PostgreSQL. When a process dies, DBOS recovers its pending workflows
 * (at the next launch with the same executor id): the loop runs again from the
 * start, the recorded steps return their recorded results (their events reach observers exactly as
 * live ones did) and the run goes on from the first step that had not finished.
 *
 * A tool call that was running when the process died is run again only when its tool says it is
 * idempotent (`defineTool({ idempotent: true })`); otherwise its result is {@link INTERRUPTED} and the
 * loop goes on. Every call's `context.idempotencyKey` is `<runId>:<toolCallId>`, the same after a
 * recovery.
 */
import { DBOS, Error as DBOSErrors } from "@dbos-inc/dbos-sdk";
import { AgentLoopError } from "../errors.js";
import type { LoopEvent, RunResult } from "../loop/events.js";
import { Agent } from "../loop/agent.js";
import type { ApprovalDecision } from "../loop/checkpoint.js";
import type { RunOptions, SessionMemory, Toolset } from "../loop/types.js";
import type { Model, ModelEvent, ModelRequest } from "../model/model.js";
import type { Tool, ToolContext, ToolOutput } from "../tools/tool.js";

/** The result of a tool call that was running when the process died and is not idempotent. */
export const INTERRUPTED = "Interrupted: the process stopped while this tool ran; it was not retried";

const APPROVALS_TOPIC = "agentloop.approvals";
/** How long a durable run waits for approvals without `approvalTimeoutMs`: 7 days. */
const DEFAULT_APPROVAL_TIMEOUT_MS = 7 * 24 * 3600 * 1000;

export interface DurableOptions {
  /** PostgreSQL URL of the database DBOS keeps its checkpoints in (its tables go in `schema`). */
  databaseUrl: string;
  /**
   * This process's executor id (default `local`, or `DBOS__VMID`). A process that restarts with the
   * same id recovers the runs the previous one left unfinished (as a Kubernetes StatefulSet's pods do).
   */
  executorId?: string;
  /** The PostgreSQL schema of DBOS's tables (default `dbos`). */
  schema?: string;
  /** The DBOS application name (default `agentloop`): runs are recovered only by the same name. */
  appName?: string;
  /** The application version recovery matches (default: DBOS's hash of the registered workflows). */
  appVersion?: string;
  /** DBOS's own log level (default `warn`). */
  logLevel?: "debug" | "info" | "warn" | "error";
  /**
   * A DBOS queue the runs go through (`DurableRunOptions.partitionKey` names the partition):
   * `partitionConcurrency: 1` runs one run at a time per key across every process (the server's
   * per-session queue). Any process launched on the database may run a queued run.
   */
  queue?: DurableQueueOptions;
  /**
   * Makes a run's journal: the items (e.g. SSE chunks) a run with `DurableRunOptions.journal`
   * produces from its events, checkpointed with the run's steps so any process can read them
   * (`readJournal`) and a client can reattach. Called in each execution of the run (recovery too).
   */
  journal?: (spec: unknown, runId: string) => JournalEncoder;
}

export interface DurableQueueOptions {
  name: string;
  /** Runs at a time per partition key, across every process (default 1). */
  partitionConcurrency?: number;
  /** How often each process looks for queued runs (default 50 ms). */
  pollingIntervalMs?: number;
}

/** Turns a run's events into journal items. Must be deterministic: a recovered run replays it. */
export interface JournalEncoder {
  /** Called first in each execution of the run, before any event (a recovered run's included). */
  begin?(): Promise<void>;
  /** The first items of a leg, before its events (a run that waited for approvals has a leg per decision). */
  start(): readonly string[];
  /** The items of one event (none for most). */
  event(event: LoopEvent): string | undefined;
  /** The last items of a leg, once it ended (the run's, or INTERRUPTED for approvals; its events are passed to its observers by then). */
  end(result: RunResult): Promise<readonly string[]>;
}

/** One journal item and its position (1-based; the same in every process and after a recovery). */
export interface JournalEntry {
  seq: number;
  item: string;
}

export interface DurableRunOptions extends Pick<RunOptions, "sessionId" | "inputs" | "newSession" | "onEvent" | "history" | "output"> {
  /** The run's id, used as the DBOS workflow id: starting a run with an id already used returns that run. */
  runId?: string;
  /** With `DurableOptions.queue`: the run waits on the queue, behind the runs of the same key. */
  partitionKey?: string;
  /**
   * With `DurableOptions.journal`: the run keeps a journal made by `journal(spec)` (JSON). A call
   * that needs approval ends the leg (`JournalEncoder.end` with the INTERRUPTED result); the run
   * waits for `decide` and goes on with a new leg (`start` again) in the same journal.
   */
  journal?: unknown;
}

/** What `list` and `show` tell about a durable run. */
export interface DurableRunInfo {
  runId: string;
  /** DBOS's status: ENQUEUED, PENDING, SUCCESS, ERROR, CANCELLED, MAX_RECOVERY_ATTEMPTS_EXCEEDED. */
  status: string;
  sessionId?: string;
  input?: string;
  executorId?: string;
  queue?: string;
  createdAt: string;
  updatedAt?: string;
  /** The calls the run waits on a decision for (a run waiting with `decide`). */
  pendingApprovals?: Array<{ toolCallId: string; tool: string; arguments: Record<string, unknown> }>;
  /** Its checkpointed steps, in order (`show` only). */
  steps?: Array<{ id: number; name: string; error?: string }>;
  result?: { state: string; reason: string; text: string };
}

/** What a durable run returns: the run's result as stored by DBOS (JSON: the error is its message). */
export type DurableRunResult = Omit<RunResult, "error" | "messages"> & { error?: { kind: string; message: string } };

export interface DurableRun {
  readonly runId: string;
  /** Resolves when the run ends (here or, after a crash, in the process that recovered it). */
  result(): Promise<DurableRunResult>;
}

export interface DurableAgent {
  /** The agent whose loop the runs use, its model and tools made durable. */
  readonly agent: Agent;
  /** Connects DBOS (creating its schema if needed) and recovers this executor's unfinished runs. */
  launch(): Promise<void>;
  /** Starts a durable run. Live events go to `options.onEvent` and to the agent's observers and memory. */
  run(input: string, options?: DurableRunOptions): Promise<DurableRun>;
  /**
   * Decides the calls a run waits on (its `approval-request` events), from any process connected to
   * the same database: the run resumes where it runs (or, after a crash, where it is recovered).
   * Calls of the wave left undecided are rejected. `checkpointId` (the INTERRUPTED result's
   * checkpoint, see `approvalWait`) ties the decisions to that wait: a repeated send is one message,
   * and a later wait of the run does not take them.
   */
  decide(runId: string, decisions: Record<string, ApprovalDecision>, options?: { checkpointId?: string }): Promise<void>;
  /** A run by id (started here or elsewhere). */
  retrieve(runId: string): DurableRun;
  /** What a run waiting for approvals waits at (undefined when it does not wait). */
  approvalWait(runId: string): Promise<ApprovalWait | undefined>;
  /** The ids of a run's checkpoints whose approvals expired (no decision within `approvalTimeoutMs`). */
  expiredApprovals(runId: string): Promise<string[]>;
  /** Whether a run of this agent exists: at once when it executes in this process, else one query. */
  exists(runId: string): Promise<boolean>;
  /**
   * The journal of a run with `journal`, from the item after `after` to its end: live from this
   * process while the run executes here, else from the database (any process). Ends when the run
   * ended (or was cancelled). Nothing is lost or repeated across reattaches: items keep their `seq`.
   */
  readJournal(runId: string, options?: { after?: number }): AsyncGenerator<JournalEntry>;
  /** Durable runs of this agent, most recent first. */
  list(filter?: { status?: string; sessionId?: string; limit?: number }): Promise<DurableRunInfo[]>;
  /** One run with its steps and pending approvals; undefined when there is no such run. */
  show(runId: string): Promise<DurableRunInfo | undefined>;
  /** Cancels a run (it stops at its next step; it can be resumed). */
  cancel(runId: string): Promise<void>;
  /** Resumes a cancelled or failed run from its last completed step. */
  resume(runId: string): Promise<void>;
  /**
   * Recovers the unfinished runs of other executors (processes that died and will not come back
   * with their id): DBOS puts them back on their queue, and a live process runs them. Returns their ids.
   */
  recover(executorIds: string[]): Promise<string[]>;
  /** Stops DBOS in this process (unfinished runs stay recoverable). */
  shutdown(): Promise<void>;
}

interface StoredOptions {
  sessionId?: string;
  inputs?: Record<string, unknown>;
  newSession?: boolean;
  history?: RunOptions["history"];
  output?: RunOptions["output"];
  journal?: unknown;
}

/**
 * The runs executing in this process, each with the signal its loop runs with: a step that finds its
 * run cancelled (`cancel`, DBOS's cancel, from any process) aborts the loop, which stops at its next
 * checkpoint (ABORTED) instead of going on with the failed step as an error.
 */
const executions = new Map<string, AbortController>();

function isCancelled(error: unknown): boolean {
  return error instanceof DBOSErrors.DBOSWorkflowCancelledError;
}

function abortCancelled(runId: string): void {
  executions.get(runId)?.abort(new AgentLoopError("aborted", `run ${runId} was cancelled`));
}

/** A step of run `runId`: if it fails because the run was cancelled, the run's loop is aborted first. */
function watched<T>(runId: string | undefined, step: Promise<T>): Promise<T> {
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
async function cancellable<T>(work: () => Promise<T>): Promise<T> {
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

/** Live listeners of the runs started by this process (a function cannot be a workflow input). */
const listeners = new Map<string, (event: LoopEvent) => void>();
let launched: { url: string; promise: Promise<void> } | undefined;

const JOURNAL_KEY = "agentloop.journal";
const PENDING_KEY = "agentloop.pending";
const WAIT_KEY = "agentloop.approval-wait";
/** The ids of the run's checkpoints whose approvals expired (`approvalTimeoutMs` passed without a decision). */
const EXPIRED_KEY = "agentloop.approvals-expired";
/** The reason a call whose approval expired is rejected with: its result is `Rejected: approval expired`. */
export const APPROVAL_EXPIRED = "approval expired";

/** The message `decide` sends; `checkpointId` (when known) names the wait it is for. */
interface DecisionMessage {
  decisions: Record<string, ApprovalDecision>;
  checkpointId?: string;
}

/** What a run waiting for approvals tells (`approvalWait`): where its next leg starts, and the leg's result. */
export interface ApprovalWait {
  /** The journal position the items of the leg after the decision start after. */
  resumeAt: number;
  /** The INTERRUPTED result of the leg that stopped (its checkpoint included). */
  result: DurableRunResult;
}

/**
 * The journal of one execution of a run in this process: its items (seq = index + 1), handed to
 * local readers as they come and written to the run's DBOS stream in batches, before each step and
 * at the end. A stream write is an operation of the workflow (numbered like a step), so a recovered
 * run does not write again what was written: the batches before the crash are skipped on replay.
 */
class Journal {
  readonly items: string[] = [];
  private written = 0;
  private readonly writes: Promise<void>[] = [];
  ended = false;
  readonly readers = new Set<() => void>();

  push(item: string): void {
    this.items.push(item);
    for (const wake of this.readers) wake();
  }
  /** Writes what is not written yet (called in the workflow, before a step: its number is taken now). */
  flush(): void {
    if (this.written === this.items.length) return;
    // Writes may commit out of order (each takes the stream's next offset): a batch says where it starts.
    const batch: JournalBatch = { from: this.written + 1, items: this.items.slice(this.written) };
    this.written = this.items.length;
    const write = DBOS.writeStream(JOURNAL_KEY, batch);
    write.catch(() => undefined);
    this.writes.push(write);
  }
  async close(): Promise<void> {
    this.flush();
    await Promise.all(this.writes);
    await DBOS.closeStream(JOURNAL_KEY);
    this.ended = true;
    for (const wake of this.readers) wake();
  }
}

interface JournalBatch {
  /** The seq of the first item. */
  from: number;
  items: string[];
}

/** The journals of the runs executing in this process, and readers waiting for a run to start here. */
const journals = new Map<string, Journal>();
const journalWaiters = new Map<string, Set<() => void>>();

/** The journal of the run whose workflow is calling (flushed before its next step). */
function flushJournal(): void {
  const runId = DBOS.workflowID;
  if (runId) journals.get(runId)?.flush();
}

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
  const config = agent.config;
  const inner = new Agent({
    ...config,
    model: durableModel(agent.model),
    tools: (config.tools ?? []).map((source) => (isToolset(source) ? durableToolset(source) : durableTool(source))),
    memory: config.memory ? durableMemory(config.memory) : undefined,
  });
  const workflow = DBOS.registerWorkflow(
    async (input: string, stored: StoredOptions): Promise<DurableRunResult> => {
      const runId = DBOS.workflowID!;
      const onEvent = listeners.get(runId);
      const { journal: spec, ...runOptions } = stored;
      const stop = new AbortController();
      executions.set(runId, stop);
      try {
        if (spec !== undefined && options.journal) return await journaledRun(input, runOptions, spec, runId, stop.signal, onEvent);
        // Approvals stop the loop with a checkpoint; the workflow waits for the decisions as a DBOS
        // message (recorded: a recovered run does not wait again for what was decided), then resumes.
        let result = await inner.run(input, { ...runOptions, runId, onEvent, onApproval: "interrupt", signal: stop.signal });
        while (result.state === "INTERRUPTED" && result.checkpoint) {
          const decisions = await waitForDecisions(result);
          result = await inner.resume(result.checkpoint, { decisions, runId, onEvent, sessionId: stored.sessionId, onApproval: "interrupt", signal: stop.signal });
        }
        return storedResult(result);
      } finally {
        // A model call left open (the loop stopped before the tools it asked for) is recorded before the run ends.
        await closeModelCall(runId).catch(() => undefined);
        if (executions.get(runId) === stop) executions.delete(runId);
        modelRecords.delete(runId);
        replayedStarts.delete(runId);
      }
    },
    { name: `agentloop.run.${agent.name}` },
  );

  /**
   * The workflow waits for the decisions of a run that stopped for approvals as a DBOS message
   * (recorded: a recovered run does not wait again for what was decided); no process is held but
   * the workflow's pending promise, and a restarted or recovering process waits again.
   * `resumeAt`: the journal position the next leg's items start after.
   */
  async function waitForDecisions(result: RunResult, resumeAt = 0, announced?: () => void): Promise<Record<string, ApprovalDecision>> {
    await closeModelCall(DBOS.workflowID);
    const pending = result.checkpoint!.pending;
    // A checkpoint's id is new in each execution: the one announced first is recorded, for the
    // decisions (which name it) to match in a recovered execution too.
    const announcedId = await DBOS.runStep(async () => result.checkpoint!.id, { name: "checkpoint-id" });
    const timeoutSeconds = Math.ceil((config.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS) / 1000);
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

  /** A run that keeps a journal: its items go to local readers at once and to the database by batches. */
  async function journaledRun(input: string, runOptions: Omit<StoredOptions, "journal">, spec: unknown, runId: string, signal: AbortSignal, onEvent?: (event: LoopEvent) => void): Promise<DurableRunResult> {
    const encoder = options.journal!(spec, runId);
    const journal = new Journal();
    journals.set(runId, journal);
    const waiting = journalWaiters.get(runId);
    journalWaiters.delete(runId);
    if (waiting) for (const wake of waiting) wake();
    try {
      await encoder.begin?.();
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
        const decisions = await waitForDecisions(result, journal.items.length + ending.length, () => {
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

  const handleOf = (runId: string): DurableRun => ({
    runId,
    result: () => DBOS.retrieveWorkflow<DurableRunResult>(runId).getResult({ pollingIntervalMs: 100 }) as Promise<DurableRunResult>,
  });
  const workflowName = `agentloop.run.${agent.name}`;
  const ensureLaunched = (what: string) => {
    if (!launched) throw new Error(`durable ${what}: call launch() first`);
  };
  return {
    agent: inner,
    async launch() {
      if (launched) {
        if (launched.url !== options.databaseUrl) throw new Error("durableAgent: DBOS is already launched in this process with another database");
        return launched.promise;
      }
      DBOS.setConfig({
        name: options.appName ?? "agentloop",
        systemDatabaseUrl: withIdleTransactionTimeout(options.databaseUrl),
        systemDatabaseSchemaName: options.schema,
        executorID: options.executorId,
        applicationVersion: options.appVersion,
        logLevel: options.logLevel ?? "warn",
      });
      const promise = (async () => {
        await oneAtATime(options.databaseUrl, options.schema ?? "dbos", () => DBOS.launch());
        const { queue } = options;
        if (queue) {
          await DBOS.registerQueue(queue.name, {
            partitionConcurrency: queue.partitionConcurrency ?? 1,
            minPollingIntervalMs: queue.pollingIntervalMs ?? 50,
            onConflict: "always_update",
          });
        }
      })();
      launched = { url: options.databaseUrl, promise };
      try {
        await promise;
      } catch (error) {
        launched = undefined;
        throw error;
      }
    },
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
      if (executions.has(runId)) return true;
      const status = await DBOS.getWorkflowStatus(runId);
      return status?.workflowName === workflowName;
    },
    async approvalWait(runId) {
      ensureLaunched("approvalWait");
      const pending = await DBOS.getEvent<unknown[]>(runId, PENDING_KEY, 0);
      if (!pending || pending.length === 0) return undefined;
      return (await DBOS.getEvent<ApprovalWait>(runId, WAIT_KEY, 0)) ?? undefined;
    },
    async expiredApprovals(runId) {
      ensureLaunched("expiredApprovals");
      return (await DBOS.getEvent<string[]>(runId, EXPIRED_KEY, 0)) ?? [];
    },
    async decide(runId, decisions, { checkpointId } = {}) {
      ensureLaunched("decide");
      if (typeof decisions !== "object" || decisions === null) throw new TypeError("durable decide: decisions must be an object keyed by tool call id");
      // With the checkpoint named, the run takes it only for that wait, and a repeated send is one message.
      const message: DecisionMessage = { decisions, ...(checkpointId ? { checkpointId } : {}) };
      await DBOS.send(runId, message, APPROVALS_TOPIC, checkpointId ? `agentloop.decision.${checkpointId}` : undefined);
    },
    readJournal(runId, { after = 0 } = {}) {
      ensureLaunched("readJournal");
      return readJournal(runId, after);
    },
    async list(filter = {}) {
      ensureLaunched("list");
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
    },
    async show(runId) {
      ensureLaunched("show");
      const [row] = await DBOS.listWorkflows({ workflowIDs: [runId], workflowName, loadInput: true, loadOutput: true });
      if (!row) return undefined;
      const info = runInfo(row);
      const steps = (await DBOS.listWorkflowSteps(runId)) ?? [];
      info.steps = steps.map((step) => ({ id: step.functionID, name: step.name, ...(step.error ? { error: step.error instanceof Error ? step.error.message : String(step.error) } : {}) }));
      if (row.status === "PENDING") {
        const pending = await DBOS.getEvent<DurableRunInfo["pendingApprovals"]>(runId, PENDING_KEY, 0);
        if (pending && pending.length > 0) info.pendingApprovals = pending;
      }
      return info;
    },
    async cancel(runId) {
      ensureLaunched("cancel");
      await DBOS.cancelWorkflow(runId);
    },
    async resume(runId) {
      ensureLaunched("resume");
      await DBOS.resumeWorkflow(runId);
    },
    async recover(executorIds) {
      ensureLaunched("recover");
      // DBOS's public API (5.x has no public "recover executor X"; its recoverPendingWorkflows is
      // internal): the executors' PENDING runs of this code version, put back on the queue they
      // ran from (a run started without a queue goes to DBOS's internal one), where a live process
      // takes them. Each execution is fenced by DBOS's owner check, so a stale one parks.
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
    },
    async shutdown() {
      if (!launched) return;
      launched = undefined;
      await DBOS.shutdown();
    },
  };
}

/**
 * Launches DBOS (which creates or migrates its schema) holding an advisory lock, released when the
 * connection ends: replicas starting together would otherwise run the same migrations at once and deadlock.
 */
async function oneAtATime(databaseUrl: string, schema: string, launch: () => Promise<void>): Promise<void> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // Polled, not waited for: a session waiting on a lock is an open transaction, and the
    // migrations' CREATE INDEX CONCURRENTLY waits for every open transaction of the database.
    for (;;) {
      const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtext($1)) AS locked", [`agentloop.dbos.migrate.${schema}`]);
      if (rows[0]?.locked) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await launch();
  } finally {
    await client.end().catch(() => undefined);
  }
}

function runInfo(row: import("@dbos-inc/dbos-sdk").WorkflowStatus): DurableRunInfo {
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

/**
 * Reads a run's journal after `after`: from the run's execution in this process when there is one
 * (live, item by item), else from the database (batch by batch, as the run writes them). Both give
 * the same items at the same positions, so the reader takes each position once, from whichever
 * source has it first.
 */
async function* readJournal(runId: string, after: number): AsyncGenerator<JournalEntry> {
  let cursor = after;
  let done = false;
  let wake: (() => void) | undefined;
  const signal = () => {
    const resume = wake;
    wake = undefined;
    resume?.();
  };
  const fromDatabase = new Map<number, string>();
  let databaseEnded = false;
  let databaseError: unknown;
  // The database: every batch the run wrote, in order, to the stream's end (or the run's). DBOS
  // wakes the read when a batch is written (LISTEN/NOTIFY); the poll is its fallback. Not read while
  // the run executes here (many clients reattaching to the replica that recovered their runs would
  // only take its pool's connections): started when it does not, or stops doing so unfinished.
  let reading = false;
  const readDatabase = () => {
    if (reading) return;
    reading = true;
    const stream = DBOS.readStream<JournalBatch>(runId, JOURNAL_KEY, { pollingIntervalMs: 200 });
    void (async () => {
      try {
        for await (const batch of stream) {
          batch.items.forEach((item, index) => {
            if (batch.from + index > cursor) fromDatabase.set(batch.from + index, item);
          });
          signal();
          if (done) break;
        }
      } catch (error) {
        databaseError = error;
      }
      databaseEnded = true;
      signal();
    })();
  };
  // This process: the run's journal while it executes here (or once it starts here).
  let local = journals.get(runId);
  if (!local) readDatabase();
  const onLocal = () => {
    local ??= journals.get(runId);
    if (local && !local.readers.has(signal)) local.readers.add(signal);
    signal();
  };
  let waiters = journalWaiters.get(runId);
  if (!local) {
    if (!waiters) journalWaiters.set(runId, (waiters = new Set()));
    waiters.add(onLocal);
  } else local.readers.add(signal);
  try {
    for (;;) {
      let progressed = false;
      if (local) {
        while (cursor < local.items.length) {
          cursor++;
          fromDatabase.delete(cursor);
          progressed = true;
          yield { seq: cursor, item: local.items[cursor - 1]! };
        }
        if (local.ended) return;
        // The execution here stopped unfinished (its process lost the run to another): the rest is in the database.
        if (journals.get(runId) !== local) readDatabase();
      }
      while (fromDatabase.has(cursor + 1)) {
        cursor++;
        const item = fromDatabase.get(cursor)!;
        fromDatabase.delete(cursor);
        progressed = true;
        yield { seq: cursor, item };
      }
      if (reading && databaseEnded && !fromDatabase.has(cursor + 1)) {
        if (databaseError) throw databaseError;
        return;
      }
      if (!progressed) await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    done = true;
    waiters?.delete(onLocal);
    if (waiters?.size === 0 && journalWaiters.get(runId) === waiters) journalWaiters.delete(runId);
    local?.readers.delete(signal);
  }
}

function storedResult(result: RunResult): DurableRunResult {
  const { error, messages: _messages, ...rest } = result;
  const plain = JSON.parse(JSON.stringify(rest)) as DurableRunResult;
  if (error) plain.error = { kind: error.kind, message: error.message };
  return plain;
}

// ---- the model: each call one step, its events recorded ----

type StoredEvent = ModelEvent | { type: "error"; error: { kind: string; message: string; status?: number; provider?: string } };

/** A model whose `stream` is a DBOS step inside a workflow (and the model itself outside one). */
export function durableModel(model: Model): Model & { durable: true } {
  return {
    provider: model.provider,
    modelId: model.modelId,
    durable: true,
    stream: (request) => (DBOS.isWithinWorkflow() ? recordedStream(model, request) : model.stream(request)),
    ...(model.forRun ? { forRun: (run?: Parameters<NonNullable<Model["forRun"]>>[0]) => durableModel(model.forRun!(run)) } : {}),
  } as Model & { durable: true };
}

/** A model step's record: its events, and the tool calls whose "started" marker it holds. */
interface StoredModelCall {
  events: StoredEvent[];
  started: string[];
}

/**
 * A model call whose response asked for tools stays open after its stream ended: a model call has
 * no side effect, so it may be recorded late, and it is recorded with the "started" markers of the
 * tool calls that begin right after it (one checkpoint where there were two). It closes at the
 * run's next step, which waits for its record before doing anything (a tool must not run on a
 * response that was not recorded).
 */
interface OpenModelCall {
  started: string[];
  closing: boolean;
  close(): void;
}

/** The open model call of each run executing here, and the last model step's record (the barrier of the next steps). */
const openModelCalls = new Map<string, OpenModelCall>();
const modelRecords = new Map<string, Promise<unknown>>();
/** The markers of the last replayed model step of each run: those calls had started. */
const replayedStarts = new Map<string, Set<string>>();

/** Closes the run's open model call (no more markers) and returns its record's settling. */
function closeModelCall(runId: string | undefined): Promise<unknown> {
  if (!runId) return Promise.resolve();
  openModelCalls.get(runId)?.close();
  return modelRecords.get(runId) ?? Promise.resolve();
}

/** Every step of a run begins with this: the model call before it is recorded first. */
function afterModelCall(runId: string | undefined): Promise<unknown> {
  return closeModelCall(runId).catch(() => undefined);
}

/**
 * One model call as a step: live, its events are passed on as they arrive and recorded when the
 * call closes (see OpenModelCall); replayed, the recorded events are passed on. A step never throws
 * (a throwing stream is recorded as an error event, as the loop would treat it).
 */
async function* recordedStream(model: Model, request: ModelRequest): AsyncGenerator<ModelEvent> {
  const runId = DBOS.workflowID;
  const before = afterModelCall(runId);
  const channel = new Channel<ModelEvent>();
  let live = false;
  flushJournal();
  const step = watched(
    runId,
    DBOS.runStep(
      async (): Promise<StoredModelCall> => {
        await before;
        return cancellable(async () => {
          live = true;
          const events: StoredEvent[] = [];
          try {
            for await (const event of model.stream(request)) {
              channel.push(event);
              events.push(storeEvent(event));
              if (event.type === "finish" || event.type === "error") break;
            }
          } catch (error) {
            const wrapped = AgentLoopError.from(error);
            channel.push({ type: "error", error: wrapped });
            events.push(storeEvent({ type: "error", error: wrapped }));
          }
          // The loop goes on now; the record waits for the calls that start next (if it asked for any).
          channel.end();
          if (!runId || !events.some((event) => event.type === "tool-call-end")) return { events, started: [] };
          const open: OpenModelCall = { started: [], closing: false, close: () => undefined };
          const closed = new Promise<void>((resolve) => {
            open.close = () => {
              open.closing = true;
              if (openModelCalls.get(runId) === open) openModelCalls.delete(runId);
              resolve();
            };
          });
          openModelCalls.set(runId, open);
          await closed;
          return { events, started: open.started };
        });
      },
      { name: "model" },
    ),
  );
  if (runId) {
    modelRecords.set(runId, step);
    replayedStarts.delete(runId);
  }
  step.then(
    (stored) => {
      if (!live) {
        if (runId) replayedStarts.set(runId, new Set(stored.started));
        for (const event of stored.events) channel.push(restoreEvent(event));
      }
      channel.end();
    },
    (error: unknown) => channel.fail(error),
  );
  yield* channel;
}

function storeEvent(event: ModelEvent): StoredEvent {
  if (event.type !== "error") return event;
  const { kind, message, status, provider } = event.error;
  return { type: "error", error: { kind, message, status, provider } };
}

function restoreEvent(event: StoredEvent): ModelEvent {
  if (event.type !== "error") return event as ModelEvent;
  const { kind, message, status, provider } = event.error as { kind: string; message: string; status?: number; provider?: string };
  return { type: "error", error: new AgentLoopError(kind as AgentLoopError["kind"], message, { status, provider }) };
}

/** A one-consumer queue: pushed values come out in order through `for await`. */
class Channel<T> implements AsyncIterable<T> {
  private readonly values: T[] = [];
  private done = false;
  private error: unknown;
  private failed = false;
  private wake?: () => void;

  push(value: T): void {
    this.values.push(value);
    this.wake?.();
  }
  end(): void {
    this.done = true;
    this.wake?.();
  }
  fail(error: unknown): void {
    this.failed = true;
    this.error = error;
    this.end();
  }
  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      if (this.values.length) {
        yield this.values.shift()!;
        continue;
      }
      if (this.failed) throw this.error;
      if (this.done) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
  }
}

// ---- tools: each call two steps, "started" then its result ----

type StoredCall = { output: unknown } | { threw: string; name: string } | { interrupted: true };

/** A tool whose `execute` is checkpointed inside a workflow (and the tool itself outside one). */
export function durableTool<Args>(tool: Tool<Args>): Tool<Args> {
  const wrapped = Object.create(tool) as Tool<Args>;
  wrapped.execute = (args, context) => (DBOS.isWithinWorkflow() ? recordedCall(tool, args, context) : tool.execute(args, context));
  return wrapped;
}

/**
 * One step per call of an idempotent tool. Two steps per call of the others, their ids taken together (DBOS numbers steps as they are called, so concurrent
 * calls of a wave keep their order on replay): `started` is recorded before the tool runs; if it was
 * already recorded and the result was not, the call was in flight when the process died.
 */
async function recordedCall<Args>(tool: Tool<Args>, args: Args, context: ToolContext): Promise<ToolOutput> {
  const runId = DBOS.workflowID;
  let fresh = false;
  flushJournal();
  // An idempotent tool in flight at a crash runs again, as one that had not started: no marker needed.
  if (tool.idempotent === true) {
    const before = afterModelCall(runId);
    return storedOutput(
      await watched(
        runId,
        DBOS.runStep(
          async () => {
            await before;
            return callTool(tool, args, context);
          },
          { name: `tool:${tool.name}` },
        ),
      ),
    );
  }
  // The marker goes with the record of the model call that asked for this call, when that call is
  // still open (calls a wave starts together all join it); else it is a step of its own. Either way
  // the tool runs once the marker is recorded (`marked`).
  const open = runId ? openModelCalls.get(runId) : undefined;
  const replayed = runId ? replayedStarts.get(runId) : undefined;
  let started: Promise<unknown>;
  if (open && !open.closing) {
    open.started.push(context.toolCallId);
    fresh = true;
    queueMicrotask(() => open.close());
    started = Promise.resolve();
  } else if (replayed?.has(context.toolCallId)) {
    replayed.delete(context.toolCallId);
    started = Promise.resolve();
  } else {
    const before = afterModelCall(runId);
    started = DBOS.runStep(
      async () => {
        await before;
        fresh = true;
        return context.idempotencyKey;
      },
      { name: `tool-started:${tool.name}` },
    );
  }
  const marked = started.then(() => afterModelCall(runId));
  const result = DBOS.runStep(
    async (): Promise<StoredCall> => {
      await marked;
      if (!fresh) return { interrupted: true };
      return callTool(tool, args, context);
    },
    { name: `tool:${tool.name}` },
  );
  marked.catch(() => undefined);
  return storedOutput(await watched(runId, result));
}

function callTool<Args>(tool: Tool<Args>, args: Args, context: ToolContext): Promise<StoredCall> {
  return cancellable(() => executeTool(tool, args, context));
}

async function executeTool<Args>(tool: Tool<Args>, args: Args, context: ToolContext): Promise<StoredCall> {
  try {
    const output = await tool.execute(args, context);
    return { output: output === undefined ? null : JSON.parse(JSON.stringify(output) ?? "null") };
  } catch (error) {
    return { threw: error instanceof Error ? error.message : String(error), name: error instanceof Error ? error.name : "Error" };
  }
}

function storedOutput(stored: StoredCall): ToolOutput {
  if ("interrupted" in stored) return { content: INTERRUPTED, isError: true };
  if ("threw" in stored) {
    const error = new Error(stored.threw);
    error.name = stored.name;
    throw error;
  }
  return stored.output;
}

function durableToolset(toolset: Toolset): Toolset {
  let version = Number.NaN;
  let tools: readonly Tool<any>[] = [];
  return {
    name: toolset.name,
    get toolsVersion() {
      return toolset.toolsVersion;
    },
    get loadedTools() {
      if (version !== toolset.toolsVersion) {
        version = toolset.toolsVersion;
        tools = toolset.loadedTools.map((tool) => durableTool(tool));
      }
      return tools;
    },
  };
}

/** The history a run starts from is a step too: a recovered run continues the same conversation. */
function durableMemory(memory: SessionMemory): SessionMemory {
  return {
    loadHistory: (sessionId) => {
      if (!DBOS.isWithinWorkflow()) return memory.loadHistory(sessionId);
      flushJournal();
      return watched(DBOS.workflowID, DBOS.runStep(() => memory.loadHistory(sessionId), { name: "history" }));
    },
    onEvent: (event, run) => memory.onEvent(event, run),
  };
}

function isToolset(source: Tool<any> | Toolset): source is Toolset {
  return typeof (source as Tool<any>).execute !== "function" && typeof (source as Toolset).toolsVersion === "number";
}

/**
 * The system database URL with DBOS's `idle_in_transaction_session_timeout` (60 s) in its libpq
 * `options`, sent when a connection starts. Without it DBOS sets the timeout with a query queued on
 * each new pool connection ahead of the borrower's first one, which pg 8 reports on stderr as a
 * DeprecationWarning ("Calling client.query() when the client is already executing a query");
 * DBOS leaves a URL that already sets it alone. A URL that sets it itself, or is not a URL, is kept.
 */
export function withIdleTransactionTimeout(databaseUrl: string, timeoutMs = 60_000): string {
  const url = URL.parse(databaseUrl);
  if (!url || !/^postgres(ql)?:$/.test(url.protocol)) return databaseUrl;
  const options = url.searchParams.get("options") ?? "";
  if (options.includes("idle_in_transaction_session_timeout")) return databaseUrl;
  url.searchParams.set("options", `${options} -c idle_in_transaction_session_timeout=${timeoutMs}`.trim());
  return url.toString();
}
