// Added cost of durability (agentloop/durable) per step: the same scripted run (5 model calls, 4 tool
// calls) with and without DBOS checkpoints in a real PostgreSQL, median of rounds; beside it DBOS's
// own floor in the same rounds: a bare workflow of as many `DBOS.runStep` steps that do nothing,
// against the same workflow with none (what DBOS's checkpoint protocol costs a step). Standalone:
//
//   AGENTLOOP_TEST_PG_URL=postgres://... node --import tsx bench/durable.ts [rounds]
//
// Uses (and drops) its own schema. Not part of `npm run bench` yet.
import { loadavg } from "node:os";
import { DBOS } from "@dbos-inc/dbos-sdk";
import pg from "pg";
import { durableAgent } from "../src/durable/index.js";
import { Agent, defineTool, type Model, type ModelEvent, type ModelRequest } from "../src/index.js";

const url = process.env.AGENTLOOP_TEST_PG_URL;
if (!url) throw new Error("set AGENTLOOP_TEST_PG_URL to a PostgreSQL URL");
const rounds = Number(process.argv[2] ?? 30);
const schema = `dbos_bench_${process.pid}`;
const STEPS = 9;

const model: Model = {
  provider: "bench",
  modelId: "plan",
  async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
    const done = request.messages.filter((message) => message.role === "tool").length;
    if (done < 4) {
      yield { type: "tool-call-start", id: `call_${done + 1}`, name: "step" };
      yield { type: "tool-call-end", id: `call_${done + 1}`, name: "step", arguments: JSON.stringify({ n: done + 1 }) };
      yield { type: "finish", reason: { unified: "tool-calls" } };
      return;
    }
    yield { type: "text-start", id: "t" };
    yield { type: "text-delta", id: "t", delta: "done" };
    yield { type: "text-end", id: "t" };
    yield { type: "finish", reason: { unified: "stop" } };
  },
};
// The tool as most are (a call in flight at a crash is not run again: a "started" step, then its
// result), and the same tool declared idempotent (one step per call).
const toolOf = (idempotent: boolean) =>
  defineTool<{ n: number }>({
    name: "step",
    description: "Does step n",
    parameters: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
    idempotent,
    execute: ({ n }) => `step ${n} ok`,
  });

const agent = new Agent({ name: "bench", model, tools: [toolOf(false)] });
const idempotentAgent = new Agent({ name: "bench-idempotent", model, tools: [toolOf(true)] });
const durable = durableAgent(agent, { databaseUrl: url, schema, logLevel: "error" });
const durableIdempotent = durableAgent(idempotentAgent, { databaseUrl: url, schema, logLevel: "error" });
// DBOS's own floor: the same number of steps, each doing nothing, and the workflow alone.
const bareSteps = DBOS.registerWorkflow(
  async (steps: number): Promise<number> => {
    let done = 0;
    for (let step = 0; step < steps; step++) done += await DBOS.runStep(async () => 1, { name: "bare" });
    return done;
  },
  { name: "bench-bare-steps" },
);
await durable.launch();

async function timedBare(steps: number): Promise<number> {
  const start = performance.now();
  if ((await bareSteps(steps)) !== steps) throw new Error("bare workflow: wrong step count");
  return performance.now() - start;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** One durable run, timed to its last event (the loop's own end), not to DBOS's result, which is polled. */
async function timedRun(target: typeof durable): Promise<number> {
  const start = performance.now();
  let ended!: () => void;
  const end = new Promise<void>((resolve) => {
    ended = resolve;
  });
  const run = await target.run("go", { onEvent: (event) => event.type === "run-end" && ended() });
  await end;
  const ms = performance.now() - start;
  const result = await run.result();
  if (result.state !== "COMPLETED") throw new Error(`durable run ended ${result.state}: ${result.reason}`);
  return ms;
}

const plain: number[] = [];
const checkpointed: number[] = [];
const checkpointedIdempotent: number[] = [];
const bareEmpty: number[] = [];
const bareFull: number[] = [];
for (let round = 0; round < rounds + 3; round++) {
  const start = performance.now();
  await agent.run("go");
  const plainMs = performance.now() - start;
  const durableMs = await timedRun(durable);
  const idempotentMs = await timedRun(durableIdempotent);
  const emptyMs = await timedBare(0);
  const fullMs = await timedBare(STEPS);
  if (round >= 3) {
    plain.push(plainMs);
    checkpointed.push(durableMs);
    checkpointedIdempotent.push(idempotentMs);
    bareEmpty.push(emptyMs);
    bareFull.push(fullMs);
  }
}
await durable.shutdown();
const client = new pg.Client({ connectionString: url });
await client.connect();
await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
await client.end();

const plainMedian = median(plain);
const durableMedian = median(checkpointed);
const idempotentMedian = median(checkpointedIdempotent);
console.log(`rounds: ${rounds}; run of ${STEPS} steps (5 model calls, 4 tool calls); load average ${loadavg().map((value) => value.toFixed(1)).join(" ")}`);
console.log(`plain run median: ${plainMedian.toFixed(2)} ms; durable run median: ${durableMedian.toFixed(2)} ms; with an idempotent tool: ${idempotentMedian.toFixed(2)} ms`);
console.log(`added per step: ${((durableMedian - plainMedian) / STEPS).toFixed(2)} ms (target <= 2 ms); idempotent tool: ${((idempotentMedian - plainMedian) / STEPS).toFixed(2)} ms`);
const emptyMedian = median(bareEmpty);
const fullMedian = median(bareFull);
console.log(
  `DBOS alone: a workflow of no steps ${emptyMedian.toFixed(2)} ms, of ${STEPS} empty steps ${fullMedian.toFixed(2)} ms: ` +
    `${((fullMedian - emptyMedian) / STEPS).toFixed(2)} ms per bare step, ${(fullMedian / STEPS).toFixed(2)} ms per step with the workflow's start and end (agentloop's added per step above includes them)`,
);
process.exit(0);
