// Recovery time of durable `serve` (DURABLE=true): N chats in flight on one replica (each in a tool
// call), the replica killed with SIGKILL and restarted with the same executor id. Reported:
// - restart: from the new process's spawn to its listening (DBOS launched, the runs recovered);
// - per run, from the new process's spawn and from its listening to the first new event of the run
//   (the client reattached with ?after=<events received>), and the time until all N finished.
// Also the same stream through the plain server vs durable (the per-request overhead). Standalone:
//
//   AGENTLOOP_TEST_PG_URL=postgres://... node --import tsx bench/durable-recovery.ts [runs]
//
// Uses (and drops) its own schemas. Not part of `npm run bench`.
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import pg from "pg";
import { postChat, readEvents, startReplica } from "../test/durable/serve-helpers.js";

const url = process.env.AGENTLOOP_TEST_PG_URL;
if (!url) throw new Error("set AGENTLOOP_TEST_PG_URL to a PostgreSQL URL");
const runs = Number(process.argv[2] ?? 50);
const tag = randomUUID().slice(0, 8);
const schemas = [`bench_recovery_${tag}`, `dbos_bench_recovery_${tag}`];
const env = (workMs: number) => ({
  AGENT_NAME: "durable",
  MEMORY_TYPE: "postgres",
  MEMORY_POSTGRES_URL: url,
  MEMORY_POSTGRES_SCHEMA: schemas[0]!,
  DURABLE: "true",
  DURABLE_SCHEMA: schemas[1]!,
  DURABLE_EXECUTOR_ID: `bench-${tag}`,
  WORK_MS: String(workMs),
  // The model in process, as the figures in docs/durable.md were measured (the tests use an HTTP one).
  MODEL: "in-process",
});

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const max = (values: number[]) => Math.max(...values);

// The first process's tool takes 60 s: every run is in flight when it dies. The restarted one's takes 0.
const first = await startReplica(env(60_000));
let inFlight = 0;
let allInFlight!: () => void;
const ready = new Promise<void>((resolve) => {
  allInFlight = resolve;
});
const clients = await Promise.all(
  Array.from({ length: runs }, async (_, index) => {
    const response = await postChat(first.url, `task ${index}`, `bench-${tag}-${index}`);
    const runId = response.headers.get("x-agentloop-run-id")!;
    let seen = false;
    const reading = readEvents(response, (event) => {
      if (!seen && event.includes("progress")) {
        seen = true;
        if (++inFlight === runs) allInFlight();
      }
    });
    return { runId, reading };
  }),
);
await ready;
first.child.kill("SIGKILL");
await first.exited;
const received = await Promise.all(clients.map((client) => client.reading));

const spawnedAt = performance.now();
const second = await startReplica(env(0));
const listeningAt = performance.now();
const firstEvents: number[] = [];
const ends: number[] = [];
await Promise.all(
  clients.map(async (client, index) => {
    const response = await fetch(`${second.url}/v1/runs/${client.runId}/events?after=${received[index]!.events.length}`);
    let firstAt: number | undefined;
    const rest = await readEvents(response, () => {
      firstAt ??= performance.now();
    });
    if (!rest.complete) throw new Error(`run ${client.runId} did not finish`);
    firstEvents.push(firstAt! - spawnedAt);
    ends.push(performance.now() - spawnedAt);
  }),
);
second.child.kill("SIGKILL");

const client = new pg.Client({ connectionString: url });
await client.connect();
for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
await client.end();

const restart = listeningAt - spawnedAt;
console.log(`runs in flight: ${runs}; load average at the end: ${loadavg().map((value) => value.toFixed(1)).join(" ")}`);
console.log(`restart (spawn -> listening, DBOS launched and runs recovered): ${restart.toFixed(0)} ms`);
console.log(`first new event per run, from the spawn: median ${median(firstEvents).toFixed(0)} ms, max ${max(firstEvents).toFixed(0)} ms`);
console.log(
  `first new event per run, from listening: median ${(median(firstEvents) - restart).toFixed(0)} ms, max ${(max(firstEvents) - restart).toFixed(0)} ms (target <= 2000 ms for all)`,
);
console.log(`all ${runs} runs finished: ${max(ends).toFixed(0)} ms after the spawn`);
process.exit(0);
