// A process that runs (or recovers) durable runs, for test/durable/durable.test.ts: several runs of
// several agents in one process and one DBOS launch (a DBOS launch is most of a process's cost).
// Env: PG_URL, SCHEMA, EXECUTOR, START=1 to start the runs (else only launch, which recovers them),
// RUNS: a JSON array of runs, each
//   { runId, file (its tool executions are appended to it), model: in-process|async-cleanup|http,
//     plan: steps|wave (plans.ts), idempotent (the tool says it is idempotent), approval (call 2 needs
//     approval), decide (approve it, in the recovering process), hangAt: n (tool call n hangs: the
//     parent kills us once every run is where it should be), hangAfter: k (see below) }.
// Prints one line per event the parent waits for: `hanging <runId> <n>`, `approval requested <runId>`,
// and one `{ runId, result, events }` JSON line per run that ends here. Exits once every run of RUNS
// that was not left hanging or waiting has ended.
import { appendFileSync } from "node:fs";
import pg from "pg";
import { type DurableRun, durableAgent } from "../../src/durable/index.js";
import { Agent, defineTool } from "../../src/index.js";
import type { Model } from "../../src/model/model.js";
import { asyncCleanupModel, httpModel, type Plan, planServer } from "./models.js";
import { type ChildRun, plans } from "./plans.js";


const env = process.env;
const runs = JSON.parse(env.RUNS!) as ChildRun[];
const byId = new Map(runs.map((run) => [run.runId, run]));

// The model answers from the conversation (as a real, stateless model does), by the run's plan
// (plans.ts): an in-process model, the same with an asynchronous stream cleanup, or the Chat
// Completions adapter on a loopback OpenAI-compatible server this process starts (a restarted process
// starts its own: the server answers from the conversation, as the one before would have).
// Each agent has a model of its own.
async function modelOf(kind: ChildRun["model"], planName: ChildRun["plan"]): Promise<Model> {
  const plan: Plan = plans[planName];
  if (kind === "http") return httpModel((await planServer(plan)).url);
  return kind === "async-cleanup" ? asyncCleanupModel(plan) : asyncCleanupModel(plan, { asyncCleanup: false });
}

/** The `step` tool of runs like `run` (its flags are the tool's own; what a call does is its run's). */
function stepTool(run: ChildRun) {
  return defineTool<{ n: number }>({
    name: "step",
    description: "Does step n",
    parameters: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
    // The steps plan's waves have one call each; the wave plan's three calls run concurrently.
    sequential: run.plan !== "wave",
    idempotent: run.idempotent === true,
    // approval: the second call waits for a person's decision. (Without it the tool has no approval
    // rule, so the loop starts a wave without the approvals step in between, as most agents do.)
    ...(run.approval ? { needsApproval: ({ n }: { n: number }) => n === 2 } : {}),
    async execute({ n }, context) {
      const own = byId.get(context.runId)!;
      appendFileSync(own.file, `start ${n} ${context.idempotencyKey}\n`);
      if (n === own.hangAt) {
        // hangAfter=k: first the results of k other calls are recorded (a wave's other calls). Read
        // from DBOS's table: its API may not be called inside a step.
        if (own.hangAfter) await recordedResults(own.runId, own.hangAfter);
        process.stdout.write(`hanging ${own.runId} ${n}\n`);
        await new Promise(() => undefined);
      }
      appendFileSync(own.file, `done ${n}\n`);
      return `step ${n} ok`;
    },
  });
}

/** Waits until `count` results of `step` are recorded for `runId` in DBOS's table of step outputs. */
async function recordedResults(runId: string, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: env.PG_URL });
  await client.connect();
  const query = `SELECT count(*)::int AS n FROM "${env.SCHEMA}".operation_outputs WHERE workflow_uuid = $1 AND function_name = 'tool:step'`;
  try {
    while ((await client.query<{ n: number }>(query, [runId])).rows[0]!.n < count) await new Promise((resolve) => setTimeout(resolve, 20));
  } finally {
    await client.end();
  }
}

// One durable agent per kind of run (its model, plan and tool flags), all made before the launch
// (which recovers their runs): the agent's name is the same in the process that recovers them, and
// so must the set of agents be (DBOS recovers the runs of its application version, a hash of every
// registered workflow): give the restarted process the same runs.
const options = { databaseUrl: env.PG_URL!, schema: env.SCHEMA, executorId: env.EXECUTOR, logLevel: "error" as const };
const agents = new Map<string, ReturnType<typeof durableAgent>>();
const nameOf = (run: ChildRun) => `durable-test-${run.model}-${run.plan}-${run.idempotent ? "idem" : "nonidem"}-${run.approval ? "approval" : "auto"}`;
for (const run of runs) {
  const name = nameOf(run);
  if (!agents.has(name)) agents.set(name, durableAgent(new Agent({ name, model: await modelOf(run.model, run.plan), tools: [stepTool(run)] }), options));
}
const agentOf = (run: ChildRun) => agents.get(nameOf(run))!;
// One launch (and one shutdown) for all of them: DBOS is the process's.
const launcher = agentOf(runs[0]!);

await launcher.launch();
const outcomes = runs.map(async (run) => {
  const durable = agentOf(run);
  const events: string[] = [];
  const onEvent = (event: { type: string }) => {
    events.push(event.type);
    if (event.type === "approval-request") process.stdout.write(`approval requested ${run.runId}\n`);
  };
  const handle: DurableRun = env.START === "1" ? await durable.run("do the four steps", { runId: run.runId, onEvent }) : durable.retrieve(run.runId);
  // decide: approve the waiting call (from this process; any process on the database could).
  if (run.decide) await durable.decide(run.runId, { call_2: { approve: true } });
  const result = await handle.result();
  process.stdout.write(`${JSON.stringify({ runId: run.runId, result, events })}\n`);
});
await Promise.all(outcomes);
await launcher.shutdown();
process.exit(0);
