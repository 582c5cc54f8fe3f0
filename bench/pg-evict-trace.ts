// Not in `npm run bench`: when the PostgreSQL store's eviction path is optimized by V8 (scenario 10's
// PostgreSQL row, session 24; bench/FINDINGS.md). Runs scenario 10's server on PostgreSQL (its node
// flags, no valgrind) with `--trace-opt --trace-deopt`: 200 chats, a full collection, UNPACED chats
// one after another (the store evicts at most every 100 ms: how many times follows their speed),
// then PACED chats each followed by PAUSE_MS (≥ 100: one eviction, a `count(*)` and a `DELETE`
// through pg's own query path, per chat), printing per 100 paced chats the sessions table's
// sequential scans so far (one per eviction's count) and the functions TurboFan compiled or bailed
// out of. The schema is dropped at the end.
//
//   AGENTLOOP_TEST_PG_URL=postgres://… node --import tsx bench/pg-evict-trace.ts [unpaced 2500] [paced 1200] [pause ms 110]
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { startChild } from "./child-process.js";
import { CHAT_COMPLETIONS } from "./protocols.js";

const url = process.env.AGENTLOOP_TEST_PG_URL;
if (!url) throw new Error("pg-evict-trace needs AGENTLOOP_TEST_PG_URL");
const [unpaced, paced, pauseMs] = [Number(process.argv[2] ?? 2500), Number(process.argv[3] ?? 1200), Number(process.argv[4] ?? 110)];
const schema = `bench_evict_trace_${process.pid}`;
const directory = mkdtempSync(join(tmpdir(), "agentloop-pg-evict-trace-"));
const trace = join(directory, "trace");
const child = await startChild(
  "./server-agentloop.ts",
  [],
  { BENCH_CHUNK_DELAY_MS: "0", BENCH_SERVER_MEMORY: "postgres", BENCH_SERVER_POSTGRES_URL: url, BENCH_SERVER_POSTGRES_SCHEMA: schema },
  {
    nodeArgs: ["--single-threaded", "--min-semi-space-size=1", "--max-semi-space-size=1", "--expose-gc", "--no-memory-reducer", "--trace-opt", "--trace-deopt", "--redirect-code-traces", `--redirect-code-traces-to=${trace}`],
  },
);
const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
let chatNumber = 0;
const chat = () =>
  new Promise<void>((resolve, reject) => {
    const body = CHAT_COMPLETIONS.body(chatNumber++);
    const headers = { "content-type": "application/json", "content-length": Buffer.byteLength(body) };
    const request = httpRequest({ host: "127.0.0.1", port: child.port, path: CHAT_COMPLETIONS.path, method: "POST", agent, headers }, (response) => {
      response.resume();
      response.on("end", () => (response.statusCode === 200 ? resolve() : reject(new Error(`chat answered ${response.statusCode}`))));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(body);
  });
/** The sessions table's sequential scans so far (pg_stat_user_tables: lags up to a second). */
async function scans(): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query("SELECT seq_scan FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'agentloop_sessions'", [schema]);
    return Number(rows[0]?.seq_scan ?? 0);
  } finally {
    await client.end();
  }
}
let read = 0;
/** The functions compiled or bailed out of since the last call. */
function traced(): string[] {
  const text = readFileSync(trace, "utf8");
  const part = text.slice(read);
  read = text.length;
  return part
    .split("\n")
    .filter((line) => line.startsWith("[completed compiling") || line.startsWith("[bailout"))
    .map((line) => (/<JSFunction (\S*)/.exec(line)?.[1] ?? "?") + (line.startsWith("[bailout") ? " (bailout)" : ""));
}
try {
  for (let index = 0; index < 200; index++) await chat();
  // The trace's lines V8 writes to stdout (not to the trace's file) may come first: read on to the answer.
  let answer = await child.ask("gc");
  for (let lines = 0; answer !== "gc done" && lines < 10_000; lines++) answer = await child.ask("");
  if (answer !== "gc done") throw new Error(`the full collection failed: ${answer}`);
  traced();
  const started = Date.now();
  for (let index = 0; index < unpaced; index++) await chat();
  const seconds = (Date.now() - started) / 1000;
  await new Promise((resolve) => setTimeout(resolve, 1100));
  console.log(`${unpaced} unpaced chats in ${seconds.toFixed(1)} s: ${await scans()} sequential scans so far, ${traced().length} compilations and bailouts`);
  for (let index = 0; index < paced; index++) {
    await chat();
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    if ((index + 1) % 100 === 0) {
      const names = traced();
      console.log(`paced ${index + 1}: ${await scans()} scans so far; ${names.length}: ${names.join(", ")}`);
    }
  }
} finally {
  agent.destroy();
  await child.close();
  rmSync(directory, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
}
