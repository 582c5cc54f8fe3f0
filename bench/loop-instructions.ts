// Scenario 1 counted in instructions: a model call's cost for the floor, agentloop and the peer
// frameworks, each contestant in its own process under `valgrind --tool=callgrind
// --instr-atstart=no`, on Node 20 and on Node 24 (the peers' current releases there, as in
// scenario 1), JSON and streaming. The child plays WARM_UP conversations uncounted (V8 optimizes
// the code on the way), collects the garbage, turns counting on and zeroes it, plays CHATS
// conversations and dumps the count: instructions per model call = the dump's total less V8's
// optimizing compiler (when it runs depends on timing), ÷ (CHATS × 11 model calls). The mock
// provider runs in its own process, not counted. Wall time per call (scenario 1) moves ±6 % from run
// to run on the shared machine, which is the whole margin of the ≤ ½ fastest peer target; a count
// of instructions does not follow the load.
//
//   node --import tsx bench/loop-instructions.ts [contestant ...]   # default: raw-fetch agentloop vercel-ai openai-agents
//   BENCH_LOOP_INSTRUCTIONS_WARM_UP=2000 BENCH_LOOP_INSTRUCTIONS_CHATS=20 BENCH_LOOP_INSTRUCTIONS_MODES=json,stream BENCH_NODE24=off|<path> ...
//   BENCH_LOOP_INSTRUCTIONS_AFTER_GC=0   # conversations played after the full collection, before counting (uncounted):
//     the collection, at an idle moment, frees the maps of every per-call object and V8 drops the
//     optimized code that embeds them (`--trace-deopt`: "embedded weak objects cleared"); counting at
//     once (0, the default) counts that code re-warming (bench/FINDINGS.md, session 22)
//   node --import tsx bench/loop-instructions.ts --trace <contestant> json|stream [conversations] [node]   # the warm-up V8 needs (no valgrind)
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundle } from "./child-process.js";
import { loopContestants, lookupTool } from "./contestants.js";
import { callgrindControlSelf, collectGarbage, format, markdownTable } from "./harness.js";
import { DEFAULT_FINAL_TEXT, spawnMockProvider } from "./mock-provider.js";

const TOOL_TURNS = 10;
const MODEL_CALLS = TOOL_TURNS + 1;
const WARM_UP = Number(process.env.BENCH_LOOP_INSTRUCTIONS_WARM_UP ?? 2000);
const CHATS = Number(process.env.BENCH_LOOP_INSTRUCTIONS_CHATS ?? 20);
/** Conversations played after the full collection, before counting (uncounted). */
const AFTER_GC = Number(process.env.BENCH_LOOP_INSTRUCTIONS_AFTER_GC ?? 0);
const MODES = (process.env.BENCH_LOOP_INSTRUCTIONS_MODES ?? "json,stream").split(",").map((mode) => mode.trim() === "stream");
const TRACE_STEP = 100;
const TRACE_MARK = "@@loop-instructions conversations";
const DEFAULT_NAMES = ["raw-fetch", "agentloop", "vercel-ai", "openai-agents"];

/** In the child (under callgrind): WARM_UP conversations, a full collection, CHATS counted. */
async function child(name: string, stream: boolean): Promise<void> {
  const contestant = loopContestants.find((entry) => entry.name === name);
  if (!contestant) throw new Error(`unknown contestant ${name}`);
  const provider = await spawnMockProvider({ scripts: { "loop-10": { toolTurns: TOOL_TURNS } } });
  try {
    let toolCalls = 0;
    const tool = lookupTool((args) => {
      toolCalls++;
      return `value ${args.n}.${args.i}`;
    });
    const conversation = await contestant.prepare({ baseURL: provider.baseURL, model: "loop-10", stream, maxTurns: MODEL_CALLS + 5, tool });
    const play = async (count: number) => {
      for (let index = 0; index < count; index++) {
        toolCalls = 0;
        const text = await conversation();
        if (text !== DEFAULT_FINAL_TEXT || toolCalls !== TOOL_TURNS) throw new Error(`${name}: wrong conversation (${toolCalls} tool calls, ${JSON.stringify(text)})`);
      }
    };
    const trace = Number(process.env.BENCH_LOOP_INSTRUCTIONS_TRACE ?? 0);
    if (trace > 0) {
      // `--trace` mode (no valgrind): a marker after each TRACE_STEP conversations, between V8's `--trace-opt` lines.
      for (let done = 0; done < trace; done += TRACE_STEP) {
        await play(TRACE_STEP);
        console.log(`${TRACE_MARK} ${done + TRACE_STEP}`);
      }
      return;
    }
    await play(WARM_UP);
    collectGarbage();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await play(AFTER_GC);
    callgrindControlSelf("--instr=on");
    callgrindControlSelf("--zero");
    await play(CHATS);
    callgrindControlSelf("--dump");
  } finally {
    await provider.close();
  }
}

interface Runtime {
  label: string;
  path: string;
}

function runtimes(): Runtime[] {
  const list: Runtime[] = [{ label: `Node ${process.versions.node.split(".")[0]}`, path: process.execPath }];
  const given = process.env.BENCH_NODE24;
  if (given === "off") return list;
  const candidates = given ? [given] : [fileURLToPath(new URL("../.ci/tools/node24/node_modules/node/bin/node", import.meta.url)), "/opt/node24/node_modules/node/bin/node"];
  const node24 = candidates.find((path) => existsSync(path));
  if (given && !node24) throw new Error(`BENCH_NODE24: no file ${given}`);
  if (node24) list.push({ label: "Node 24", path: node24 });
  return list;
}

/** Instructions per model call of one contestant, in a process of its own under callgrind. */
async function count(runtime: Runtime, script: string, directory: string, name: string, stream: boolean): Promise<number> {
  const out = join(directory, `${runtime.label.replace(" ", "")}-${stream ? "stream" : "json"}-${name}.out`);
  const result = spawnSync(
    "valgrind",
    ["-q", "--tool=callgrind", "--instr-atstart=no", `--callgrind-out-file=${out}`, runtime.path, "--single-threaded", "--expose-gc", script, "--child", name, stream ? "stream" : "json"],
    { stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, AGENTLOOP_BENCH_DIR: fileURLToPath(new URL(".", import.meta.url)) } },
  );
  if (result.status !== 0) throw new Error(`${name} on ${runtime.label}: exit ${result.status ?? result.signal}`);
  const base = out.split("/").pop()!;
  const dump = readdirSync(directory).find((file) => file.startsWith(`${base}.`));
  if (!dump) throw new Error(`${name} on ${runtime.label}: no callgrind dump`);
  const total = Number(/^summary:\s+(\d+)/m.exec(readFileSync(join(directory, dump), "utf8"))![1]);
  // Imported here, not at the top: a bundled child would run scenario 10's main (its `isMain` sees the bundle's URL).
  const { dumpParts } = await import("./scenario-instructions.js");
  return (total - dumpParts(join(directory, dump)).compiler) / (CHATS * MODEL_CALLS);
}

async function parent(names: readonly string[]): Promise<void> {
  const script = await bundle(fileURLToPath(import.meta.url));
  const directory = mkdtempSync(join(tmpdir(), "agentloop-loop-callgrind-"));
  const peers = new Set(loopContestants.filter((contestant) => contestant.role === "peer").map((contestant) => contestant.name));
  const rows: string[][] = [];
  const started = Date.now();
  try {
    for (const runtime of runtimes()) {
      for (const stream of MODES) {
        const counts = new Map<string, number>();
        for (const name of names) counts.set(name, await count(runtime, script, directory, name, stream));
        const floor = counts.get(names[0])!;
        const fastestPeer = Math.min(...[...counts].filter(([name]) => peers.has(name)).map(([, value]) => value));
        for (const [name, value] of counts) {
          const ofPeer = name === "agentloop" && Number.isFinite(fastestPeer) ? format(value / fastestPeer, 2) : "";
          rows.push([`${stream ? "streaming" : "JSON"}, ${runtime.label}`, name, format(value / 1e3, 1), format(value / floor, 2), ofPeer]);
        }
      }
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  console.log(`Measured ${new Date(started).toISOString()} (${Math.round((Date.now() - started) / 1000)} s): ${WARM_UP} conversations uncounted, then ${CHATS} counted (${MODEL_CALLS} model calls each), per contestant process.\n`);
  console.log(markdownTable(["mode", "contestant", "K instructions / model call", `÷ ${names[0]}`, "agentloop ÷ fastest peer"], rows));
}

/**
 * `--trace <contestant> json|stream [conversations] [node]`: how long the warm-up must be. Runs one
 * child without valgrind under `--trace-opt --trace-deopt` and prints V8's optimizing compilations
 * (TurboFan and, on Node 24, Maglev) and deoptimizations per TRACE_STEP conversations.
 */
async function traceOpt(name: string, stream: boolean, conversations: number, node: string): Promise<void> {
  const script = await bundle(fileURLToPath(import.meta.url));
  const result = spawnSync(node, ["--single-threaded", "--expose-gc", "--trace-opt", "--trace-deopt", script, "--child", name, stream ? "stream" : "json"], {
    encoding: "utf8",
    maxBuffer: 1 << 30,
    env: { ...process.env, AGENTLOOP_BENCH_DIR: fileURLToPath(new URL(".", import.meta.url)), BENCH_LOOP_INSTRUCTIONS_TRACE: String(conversations) },
  });
  if (result.status !== 0) throw new Error(`${name}: exit ${result.status ?? result.signal}: ${result.stderr}`);
  let compiled = 0;
  let deopts = 0;
  for (const line of result.stdout.split("\n")) {
    if (line.startsWith("[completed compiling") || line.startsWith("[completed optimizing")) compiled++;
    else if (line.startsWith("[bailout")) deopts++;
    else if (line.startsWith(TRACE_MARK)) {
      const upTo = Number(line.slice(TRACE_MARK.length));
      console.log(`${name} ${stream ? "stream" : "json"}: conversations ${upTo - TRACE_STEP}–${upTo}: ${compiled} optimizing compilations, ${deopts} deoptimizations`);
      compiled = 0;
      deopts = 0;
    }
  }
}

const argv = process.argv.slice(2);
if (argv[0] === "--child") await child(argv[1], argv[2] === "stream");
else if (argv[0] === "--trace") await traceOpt(argv[1], argv[2] === "stream", Number(argv[3] ?? 3000), argv[4] ?? process.execPath);
else await parent(argv.length > 0 ? argv : DEFAULT_NAMES);
