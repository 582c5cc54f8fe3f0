// The cost of `serve`'s durable mode per request: the same chat (a model call, a tool call, a model
// call streaming the answer) against a plain replica and a durable one on the same PostgreSQL, one
// request at a time, median of rounds, from the request to `[DONE]`. Standalone:
//
//   AGENTLOOP_TEST_PG_URL=postgres://... node --import tsx bench/durable-serve.ts [rounds]
//
// Uses (and drops) its own schemas. Not part of `npm run bench`.
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import pg from "pg";
import { postChat, readEvents, startReplica } from "../test/durable/serve-helpers.js";

const url = process.env.AGENTLOOP_TEST_PG_URL;
if (!url) throw new Error("set AGENTLOOP_TEST_PG_URL to a PostgreSQL URL");
const rounds = Number(process.argv[2] ?? 20);
const tag = randomUUID().slice(0, 8);
const schemas = [`bench_serve_plain_${tag}`, `bench_serve_durable_${tag}`, `dbos_bench_serve_${tag}`];
const base = { AGENT_NAME: "durable", MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: url, WORK_MS: "0" };
const [plain, durable] = await Promise.all([
  startReplica({ ...base, MEMORY_POSTGRES_SCHEMA: schemas[0]! }),
  startReplica({ ...base, MEMORY_POSTGRES_SCHEMA: schemas[1]!, DURABLE: "true", DURABLE_SCHEMA: schemas[2]!, DURABLE_EXECUTOR_ID: `bench-${tag}` }),
]);

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const timings = { plain: [] as number[], durable: [] as number[] };
for (let round = 0; round < rounds + 3; round++) {
  for (const [name, replica] of [["plain", plain], ["durable", durable]] as const) {
    const start = performance.now();
    const { complete } = await readEvents(await postChat(replica.url, `task ${round}`, `bench-${name}-${round}`));
    if (!complete) throw new Error(`${name} stream did not finish`);
    if (round >= 3) timings[name].push(performance.now() - start);
  }
}
plain.child.kill("SIGKILL");
durable.child.kill("SIGKILL");
const client = new pg.Client({ connectionString: url });
await client.connect();
for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
await client.end();
const [p, d] = [median(timings.plain), median(timings.durable)];
console.log(`rounds: ${rounds}; load average: ${loadavg().map((value) => value.toFixed(1)).join(" ")}`);
console.log(`plain request median: ${p.toFixed(1)} ms; durable request median: ${d.toFixed(1)} ms; added: ${(d - p).toFixed(1)} ms per request (3 steps: 2 model calls, 1 tool call)`);
process.exit(0);
