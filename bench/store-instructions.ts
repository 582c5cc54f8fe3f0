// The embedded store's part of scenario 10's chat, counted alone: one process under callgrind
// appends one chat's events (what session memory writes for a one-turn chat: `run_started`,
// `user_message`, `agent_response`, `run_ended`, one append) to a new session, WARM chats, a full
// collection, AFTER_GC more, then COUNTED chats each followed by PAUSE_MS (the background WAL
// checkpoint runs in it, as in scenario 10) with callgrind counting. Prints instructions per chat
// (the optimizing compiler left out). No HTTP, no loop: a quick measure of a store change before
// scenario 10 (bench/FINDINGS.md, session 21).
//
//   valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/store.%p.out \
//     node --single-threaded --expose-gc --no-memory-reducer --import tsx bench/store-instructions.ts
//   STORE_WARM=2700 STORE_COUNTED=100 STORE_PAUSE_MS=300 ...
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openEmbeddedStore } from "../src/memory/embedded.js";
import { type NewMemoryEvent, newSessionId } from "../src/memory/store.js";
import { QUESTION } from "./protocols.js";
import { SERVER_ANSWER } from "./server-answer.js";

const WARM = Number(process.env.STORE_WARM ?? 2700);
const COUNTED = Number(process.env.STORE_COUNTED ?? 100);
const PAUSE_MS = Number(process.env.STORE_PAUSE_MS ?? 300);

function control(option: string): void {
  const result = spawnSync("callgrind_control", [option, String(process.pid)], { encoding: "utf8" });
  if (result.status !== 0 || !result.stdout.includes("OK")) throw new Error(`callgrind_control ${option}: ${result.stdout}${result.stderr}`);
}

/** One chat's events as session memory writes them (shapes of `eventsFor`, src/memory/session-memory.ts). */
function chatEvents(): NewMemoryEvent[] {
  const timestamp = new Date();
  const runId = newSessionId();
  const metadata = (extra: Record<string, unknown>) => Object.assign({ run_id: runId, agent: "bench" }, extra);
  const usage = { input_tokens: 12, output_tokens: 24, total_tokens: 36 };
  return [
    { event_type: "run_started", timestamp, content: { agent: "bench", model: "bench" }, metadata: metadata({ depth: 0 }) },
    { event_type: "user_message", timestamp, content: QUESTION, metadata: metadata({}) },
    {
      event_type: "agent_response",
      timestamp,
      content: SERVER_ANSWER,
      metadata: metadata({ turn: 1, model_call: { turn: 1, started_at: timestamp.toISOString(), duration_ms: 1, usage, finish_reason: "stop" } }),
    },
    { event_type: "run_ended", timestamp, content: { state: "completed", reason: "final_answer" }, metadata: metadata({ turns: 1, tool_calls: 0, usage }) },
  ];
}

const directory = mkdtempSync(join(tmpdir(), "agentloop-store-instructions-"));
const store = await openEmbeddedStore({ path: `${directory}/`, ...JSON.parse(process.env.STORE_OPTIONS ?? "{}") });
const chat = () => store.append(newSessionId(), chatEvents(), { returnEvents: false });
const pause = () => new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
try {
  for (let index = 0; index < WARM; index++) await chat();
  (globalThis as { gc?: () => void }).gc?.();
  for (let index = 0; index < 300; index++) await chat();
  await pause();
  control("--instr=on");
  control("--zero");
  for (let index = 0; index < COUNTED; index++) {
    await chat();
    await pause();
  }
  control("--dump");
  const size = (name: string) => statSync(join(directory, name), { throwIfNoEntry: false })?.size ?? 0;
  console.log(`memory.db ${size("memory.db")} bytes, its log ${size("memory.db-wal")} bytes`);
} finally {
  await store.close();
  rmSync(directory, { recursive: true, force: true });
}
