// Durable runs in this process, one DBOS launch for all (test/durable/in-process/shared.ts): each part
// is the tests of one area, written for the mutation runs (docs/mutation.md, "### src/durable"):
// - runs.ts: journaled runs, approvals waited twice, cancels in a tool or a model call, resumes;
// - cancellation.ts: a cancel reaching the loop; a failed step that is no cancel;
// - model-calls.ts: a model stream left open after its finish; a failed model call replayed;
// - agent.ts: a durable run's options reach its loop as a plain run's;
// - admin.ts: `recover` of an executor's runs, the queue's partitions.
// - two-agents.ts: two durable agents do not see or cancel each other's runs.
// - cancel-resume.ts: a run cancelled and resumed at once runs one execution at a time.
// - replay.ts: a run with a session's memory executed again stores each event once.
// (Each part was a file of its own, each launching DBOS: 7–12 s each on the 2-core machine.)
import "./in-process/shared.js";
import "./in-process/runs.js";
import "./in-process/cancellation.js";
import "./in-process/model-calls.js";
import "./in-process/agent.js";
import "./in-process/admin.js";
import "./in-process/two-agents.js";
import "./in-process/cancel-resume.js";
import "./in-process/replay.js";
