// A process that runs (or recovers) one durable run, for test/durable/durable.test.ts and the bench.
// Env: PG_URL, SCHEMA, EXECUTOR, RUN_ID, FILE (tool executions are appended to it), START=1 to start
// the run (else only launch, which recovers it), HANG_AT=n (tool call n hangs: the parent kills us),
// IDEMPOTENT=1 (the tool says it is idempotent), APPROVAL=1 (call 2 needs approval), DECIDE=1 (approve it),
// PLAN=steps|wave (plans.ts), MODEL=in-process|async-cleanup|http, HANG_AFTER=k (see below).
import { appendFileSync } from "node:fs";
import pg from "pg";
import { durableAgent } from "../../src/durable/index.js";
import { Agent, defineTool } from "../../src/index.js";
import { asyncCleanupModel, httpModel, planServer } from "./models.js";
import { plans } from "./plans.js";

const env = process.env;
const file = env.FILE!;
const hangAt = Number(env.HANG_AT ?? 0);

// The model answers from the conversation (as a real, stateless model does), by PLAN (plans.ts):
// an in-process model, the same with an asynchronous stream cleanup, or the Chat Completions adapter
// on a loopback OpenAI-compatible server this process starts (a restarted process starts its own:
// the server answers from the conversation, as the one before would have).
const plan = plans[(env.PLAN ?? "steps") as keyof typeof plans];
const model =
  env.MODEL === "http" ? httpModel((await planServer(plan)).url) : env.MODEL === "async-cleanup" ? asyncCleanupModel(plan) : asyncCleanupModel(plan, { asyncCleanup: false });

const step = defineTool<{ n: number }>({
  name: "step",
  description: "Does step n",
  parameters: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
  // The steps plan's waves have one call each; the wave plan's three calls run concurrently.
  sequential: env.PLAN !== "wave",
  idempotent: env.IDEMPOTENT === "1",
  // APPROVAL=1: the second call waits for a person's decision. (Without it the tool has no
  // approval rule, so the loop starts a wave without the approvals step in between, as most agents do.)
  ...(env.APPROVAL === "1" ? { needsApproval: ({ n }: { n: number }) => n === 2 } : {}),
  async execute({ n }, context) {
    appendFileSync(file, `start ${n} ${context.idempotencyKey}\n`);
    if (n === hangAt) {
      // HANG_AFTER=k: first the results of k other calls are recorded (a wave's other calls). Read
      // from DBOS's table: its API may not be called inside a step.
      if (env.HANG_AFTER) await recordedResults(Number(env.HANG_AFTER));
      process.stdout.write(`hanging ${n}\n`);
      await new Promise(() => undefined);
    }
    appendFileSync(file, `done ${n}\n`);
    return `step ${n} ok`;
  },
});

/** Waits until `count` results of `step` are recorded in DBOS's table of step outputs. */
async function recordedResults(count: number): Promise<void> {
  const client = new pg.Client({ connectionString: env.PG_URL });
  await client.connect();
  const query = `SELECT count(*)::int AS n FROM "${env.SCHEMA}".operation_outputs WHERE workflow_uuid = $1 AND function_name = 'tool:step'`;
  try {
    while ((await client.query<{ n: number }>(query, [runId])).rows[0]!.n < count) await new Promise((resolve) => setTimeout(resolve, 20));
  } finally {
    await client.end();
  }
}

const agent = new Agent({ name: "durable-test", model, tools: [step] });
const durable = durableAgent(agent, { databaseUrl: env.PG_URL!, schema: env.SCHEMA, executorId: env.EXECUTOR, logLevel: "error" });
const events: string[] = [];
const runId = env.RUN_ID!;
await durable.launch();
const onEvent = (event: { type: string }) => {
  events.push(event.type);
  if (event.type === "approval-request") process.stdout.write("approval requested\n");
};
const run = env.START === "1" ? await durable.run("do the four steps", { runId, onEvent }) : durable.retrieve(runId);
// DECIDE=1: approve the waiting call (from this process; any process on the database could).
if (env.DECIDE === "1") await durable.decide(runId, { call_2: { approve: true } });
const result = await run.result();
process.stdout.write(`${JSON.stringify({ result, events })}\n`);
await durable.shutdown();
process.exit(0);
