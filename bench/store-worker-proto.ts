// Scratch (session 23, perf-emb3, issue 33): the same chats as bench/store-instructions.ts, written
// by a worker_threads writer holding a synchronous connection with statements prepared once, one
// message per group (row values, no SQL text), one answer. Counted the same way:
//   valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/proto.%p.out \
//     node --single-threaded --expose-gc --no-memory-reducer --import tsx bench/store-worker-proto.ts
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { openEmbeddedStore } from "../src/memory/embedded.js";
import { sqlText } from "../src/memory/sqlite/driver.js";
import { eventRows } from "../src/memory/sqlite/event-rows.js";
import { isoOf, type NewMemoryEvent, newSessionId } from "../src/memory/store.js";
import { QUESTION } from "./protocols.js";
import { SERVER_ANSWER } from "./server-answer.js";

const WARM = Number(process.env.STORE_WARM ?? 2700);
const COUNTED = Number(process.env.STORE_COUNTED ?? 100);
const PAUSE_MS = Number(process.env.STORE_PAUSE_MS ?? 300);
const CALLGRIND = process.env.STORE_CALLGRIND !== "off";

function control(option: string): void {
  if (!CALLGRIND) return;
  const result = spawnSync("callgrind_control", [option, String(process.pid)], { encoding: "utf8" });
  if (result.status !== 0 || !result.stdout.includes("OK")) throw new Error(`callgrind_control ${option}: ${result.stdout}${result.stderr}`);
}

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

const directory = mkdtempSync(join(tmpdir(), "agentloop-store-proto-"));
// The file, WAL and tables as the store makes them; then its connections closed.
const setup = await openEmbeddedStore({ path: `${directory}/` });
await setup.close();
const INLINE = process.env.PROTO_INLINE === "1";
const SQL_TEXT = process.env.PROTO_SQLTEXT === "1";
// @ts-expect-error a scratch .mjs without types
const { makeWriter } = await import("./store-worker-proto-writer.mjs");
const inline = INLINE ? makeWriter({ file: join(directory, "memory.db"), driver: process.env.PROTO_DRIVER }) : undefined;
const worker = new Worker(new URL("./store-worker-proto-writer.mjs", import.meta.url), { workerData: { file: join(directory, "memory.db"), driver: process.env.PROTO_DRIVER } });
const waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
let nextId = 0;
const answer = ([id, error]: [number, string | null]) => {
  const entry = waiting.get(id)!;
  waiting.delete(id);
  if (error) entry.reject(new Error(error));
  else entry.resolve();
};
worker.on("message", answer);
function chat(): Promise<void> {
  const sessionId = newSessionId();
  const rows = eventRows(sessionId, chatEvents());
  const now = Date.now();
  let message: unknown[];
  if (SQL_TEXT) message = [nextId, groupText(sessionId, rows, now)];
  else {
    message = [nextId, sessionId, isoOf(now), now, 1000];
    for (const row of rows) message.push(row.eventId, row.timestamp, Date.parse(row.timestamp), row.eventType, row.content, row.metadata);
  }
  return new Promise((resolve, reject) => {
    waiting.set(nextId++, { resolve, reject });
    if (inline) Promise.resolve(inline(message)).then(answer);
    else worker.postMessage(message);
  });
}
/** The group's one `exec` as the store's one-call group builds it (group-steps.ts: a new session's plain insert, the events' `VALUES` rows, the eviction at the limit). */
function groupText(sessionId: string, rows: ReturnType<typeof eventRows>, now: number): string {
  const id = sqlText(sessionId);
  const time = sqlText(isoOf(now));
  const victims = `SELECT session_id FROM agentloop_sessions WHERE session_id <> ${id} ORDER BY activity ASC
    LIMIT max(0, (SELECT count(*) FROM agentloop_sessions) - 1000)`;
  return `BEGIN IMMEDIATE;INSERT INTO agentloop_sessions (session_id, created_at, updated_at, updated_ms, activity, last_seq, metadata)
          VALUES (${id}, ${time}, ${time}, ${now}, (SELECT coalesce(max(activity), 0) + 1 FROM agentloop_sessions), ${rows.length}, '{}');INSERT INTO agentloop_events (session_id, seq, event_id, timestamp, timestamp_ms, event_type, content, metadata) VALUES ${rows.map((row, index) => `(${id},${index + 1}${row.values}`).join(",")};DELETE FROM agentloop_events WHERE session_id IN (${victims}); DELETE FROM agentloop_sessions WHERE session_id IN (${victims});COMMIT;`;
}
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
} finally {
  await worker.terminate();
  const check = await openEmbeddedStore({ path: `${directory}/` });
  const sessions = await check.listSessions({ limit: 5000 });
  console.log(`sessions ${sessions.length}, events of the last ${sessions[0]?.event_count}`);
  await check.close();
  rmSync(directory, { recursive: true, force: true });
}
