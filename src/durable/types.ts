// The public types of agentloop/durable (index.ts re-exports them) and a run's stored options.
import type { Agent } from "../loop/agent.js";
import type { ApprovalDecision } from "../loop/checkpoint.js";
import type { LoopEvent, RunResult } from "../loop/events.js";
import type { RunOptions } from "../loop/types.js";

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
  /**
   * Called first in each execution of the run, before any event (a recovered run's included).
   * `replayedEvents`: how many memory events an earlier execution of the run stored, which this one
   * does not store again (0 in a run's first execution, and without a session memory that tells its store).
   */
  begin?(execution: { replayedEvents: number }): Promise<void>;
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
   * Readable once `run` has returned the id; no run of that id: the read fails, naming it.
   */
  readJournal(runId: string, options?: { after?: number }): AsyncGenerator<JournalEntry>;
  /** Durable runs of this agent, most recent first. */
  list(filter?: { status?: string; sessionId?: string; limit?: number }): Promise<DurableRunInfo[]>;
  /** One run with its steps and pending approvals; undefined when there is no such run. */
  show(runId: string): Promise<DurableRunInfo | undefined>;
  /** Cancels a run of this agent (it stops at its next step; it can be resumed). Another agent's run, or none: an error. */
  cancel(runId: string): Promise<void>;
  /**
   * Resumes a cancelled or failed run of this agent from its last completed step. Another agent's run, or none: an error.
   * A run still executing in this process (cancelled a moment ago) is cancelled and its execution's
   * end awaited first, its tool calls included (a tool that ignores its signal), up to `waitMs`
   * (default 10 s); past that, a `RunStoppingError` (code "run_stopping") naming the run and what still runs, and the run stays as it was.
   */
  resume(runId: string, options?: { waitMs?: number }): Promise<void>;
  /**
   * Recovers the unfinished runs of other executors (processes that died and will not come back
   * with their id): DBOS puts them back on their queue, and a live process runs them. Returns their ids.
   */
  recover(executorIds: string[]): Promise<string[]>;
  /** Stops DBOS in this process (unfinished runs stay recoverable). */
  shutdown(): Promise<void>;
}

/** A run's options as its workflow's input (JSON: no functions). */
export interface StoredOptions {
  sessionId?: string;
  inputs?: Record<string, unknown>;
  newSession?: boolean;
  history?: RunOptions["history"];
  output?: RunOptions["output"];
  journal?: unknown;
  /** The session's last seq when the run started (with a session memory that tells its store): the run's events come after it. */
  memoryStart?: number;
}

/** What a run waiting for approvals tells (`approvalWait`): where its next leg starts, and the leg's result. */
export interface ApprovalWait {
  /** The journal position the items of the leg after the decision start after. */
  resumeAt: number;
  /** The INTERRUPTED result of the leg that stopped (its checkpoint included). */
  result: DurableRunResult;
}
