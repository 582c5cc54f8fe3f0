// Scenario 5's contestant, run as a child process: the agent server (`startAgentServer`, what
// `agentloop serve` runs) on the scripted model, paced by BENCH_CHUNK_DELAY_MS, with the memory
// store BENCH_SERVER_MEMORY names (default `memory`, the in-process one; `off` records nothing;
// `embedded` in BENCH_SERVER_MEMORY_PATH; `postgres` on BENCH_SERVER_POSTGRES_URL/_SCHEMA).
// BENCH_SERVER_CHECKPOINTS=in-commit: the embedded store with SQLite's own WAL checkpoints, inside
// COMMIT on the server's thread (`backgroundCheckpoints: false`), to compare with the default.
// BENCH_SERVER_WRITES=on-thread: the embedded store writing its group commits on the JavaScript
// thread (`writesOffThread: false`), as before session 7.
import { setFlagsFromString } from "node:v8";
import { tuneServerHeap } from "../src/cli/server-heap.js";
import { ScriptedModel } from "../src/model/scripted.js";
import { startAgentServer } from "../src/server/index.js";
import { SERVER_ANSWER, announce, chunkDelayMs } from "./server-answer.js";

// What `agentloop serve` does before it starts the server (BENCH_RUNTIME_FLAGS: V8 flags set the same way, to compare).
tuneServerHeap();
if (process.env.BENCH_RUNTIME_FLAGS) setFlagsFromString(process.env.BENCH_RUNTIME_FLAGS);

const inCommit = process.env.BENCH_SERVER_CHECKPOINTS === "in-commit";
const onThread = process.env.BENCH_SERVER_WRITES === "on-thread";
const memory =
  inCommit || onThread
    ? await (await import("../src/memory/embedded.js")).openEmbeddedStore({
        path: `${process.env.BENCH_SERVER_MEMORY_PATH}/`,
        ...(inCommit ? { backgroundCheckpoints: false } : {}),
        ...(onThread ? { writesOffThread: false } : {}),
      })
    : undefined;
const server = await startAgentServer({
  host: "127.0.0.1",
  port: 0,
  ...(memory ? { memory } : {}),
  build: { model: new ScriptedModel([SERVER_ANSWER], { chunkDelayMs, modelId: "bench" }) },
  env: {
    AGENT_NAME: "bench",
    ...(process.env.BENCH_SERVER_MEMORY === "off" ? { MEMORY_ENABLED: "false" } : { MEMORY_TYPE: process.env.BENCH_SERVER_MEMORY ?? "memory" }),
    ...(process.env.BENCH_SERVER_MEMORY_PATH ? { MEMORY_PATH: process.env.BENCH_SERVER_MEMORY_PATH } : {}),
    ...(process.env.BENCH_SERVER_POSTGRES_URL ? { MEMORY_POSTGRES_URL: process.env.BENCH_SERVER_POSTGRES_URL, MEMORY_POSTGRES_SCHEMA: process.env.BENCH_SERVER_POSTGRES_SCHEMA } : {}),
  },
  log: () => undefined,
});
announce(Number(new URL(server.url!).port));
