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
//
// The modules: agent.ts (`durableAgent` and its handle), workflow.ts (the run as a DBOS workflow),
// model-calls.ts and tool-calls.ts (the steps), approvals.ts (the durable wait for decisions),
// journal.ts (a run's items, read from any process), cancellation.ts, launch.ts (DBOS in this
// process), admin.ts (list, show, recover), types.ts (the public types).
export { durableAgent } from "./agent.js";
export { durableModel } from "./model-calls.js";
export { APPROVAL_EXPIRED } from "./approvals.js";
export { RunStoppingError } from "./cancellation.js";
export { durableTool, INTERRUPTED } from "./tool-calls.js";
export type {
  ApprovalWait,
  DurableAgent,
  DurableOptions,
  DurableQueueOptions,
  DurableRun,
  DurableRunInfo,
  DurableRunOptions,
  DurableRunResult,
  JournalEncoder,
  JournalEntry,
} from "./types.js";
