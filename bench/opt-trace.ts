// Not in `npm run bench`: how many chats a server needs before V8 stops optimizing its code (the
// warm-up scenario 10 needs for a steady window; bench/FINDINGS.md, session 18). Runs scenario 10's
// server (`server-agentloop.ts`, the same node flags, no valgrind) with `--trace-opt --trace-deopt`,
// sends chat completions one at a time, and prints the TurboFan compilations and deoptimizations
// per 500 chats.
//
//   node --import tsx bench/opt-trace.ts [off|embedded] [chats]    # default: embedded 6000
import { spawn } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchFile, bundle } from "./child-process.js";
import { CHAT_COMPLETIONS } from "./protocols.js";

const memory = process.argv[2] ?? "embedded";
const count = Number(process.argv[3] ?? 6000);
const STEP = 500;
const directory = mkdtempSync(join(tmpdir(), "agentloop-opt-trace-"));
const log = join(directory, "trace.log");
const env: Record<string, string> = { BENCH_CHUNK_DELAY_MS: "0", BENCH_SERVER_MEMORY: memory };
if (memory === "embedded") env.BENCH_SERVER_MEMORY_PATH = directory;
const script = await bundle(benchFile("./server-agentloop.ts"));
const flags = ["--single-threaded", "--min-semi-space-size=1", "--max-semi-space-size=1", "--no-memory-reducer", "--trace-opt", "--trace-deopt"];
const child = spawn(process.execPath, [...flags, script], { stdio: ["pipe", openSync(log, "w"), "inherit"], env: { ...process.env, ...env } });
const traced = () => readFileSync(log, "utf8");
let port = 0;
for (let tries = 0; port === 0; tries++) {
  if (tries > 300) throw new Error("the server did not start");
  await new Promise((resolve) => setTimeout(resolve, 100));
  port = Number(/listening on (\d+)/.exec(traced())?.[1] ?? 0);
}
const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
let before = { compiled: 0, deopts: 0 };
const tally = () => {
  const text = traced();
  return { compiled: text.split("[completed compiling").length - 1, deopts: text.split("[bailout").length - 1 };
};
for (let index = 0; index < count; index++) {
  const body = CHAT_COMPLETIONS.body(index);
  await new Promise<void>((resolve, reject) => {
    const headers = { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...CHAT_COMPLETIONS.headers?.(index) };
    const request = httpRequest({ host: "127.0.0.1", port, path: CHAT_COMPLETIONS.path, method: "POST", agent, headers }, (response) => {
      response.resume();
      response.on("end", resolve);
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(body);
  });
  if ((index + 1) % STEP === 0) {
    const now = tally();
    console.log(`${memory}: chats ${index + 1 - STEP}–${index + 1}: ${now.compiled - before.compiled} TurboFan compilations, ${now.deopts - before.deopts} deoptimizations`);
    before = now;
  }
}
agent.destroy();
await new Promise((resolve) => {
  child.once("exit", resolve);
  child.stdin?.end();
});
rmSync(directory, { recursive: true, force: true });
