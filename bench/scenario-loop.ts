// Scenario 1: a 10-turn loop, one tool per turn, JSON and streaming. Wall and CPU ms per model
// call for every contestant, and the ratio to the raw fetch floor; on this Node (20) and again on
// Node 24 with the peers' current releases (contestants.ts, `CURRENT_PEERS`), each in one rotation.
import { existsSync } from "node:fs";
import { type Contestant, loopContestants, lookupTool, peerVersions } from "./contestants.js";
import {
  type BenchOptions,
  type Entrant,
  type Sample,
  type ScenarioReport,
  type SummaryRow,
  alternate,
  format,
  formatSpread,
  isMain,
  machineInfo,
  markdownTable,
  parseBenchOptions,
  publish,
  spread,
} from "./harness.js";
import { type IsolatedEntrant, isolatedEntrant } from "./isolated.js";
import { DEFAULT_FINAL_TEXT, spawnMockProvider } from "./mock-provider.js";

const TOOL_TURNS = 10;
/** Ten tool-calling model calls and the final answer. */
const MODEL_CALLS = TOOL_TURNS + 1;
/** Conversations per measured sample in a worker process: each sample takes its share of the contestant's own GC. */
const ISOLATED_BATCH = 5;
/** A node binary the workers run on. */
interface NodeRuntime {
  label: string;
  path: string;
}

/**
 * Node 24 for the second run: `BENCH_NODE24` (a node binary; `off` skips it), else the npm
 * registry's `node` package installed by CI (`.ci/tools/node24`) or by hand into /opt/node24
 * (`npm install --prefix /opt/node24 node@24`).
 */
function node24(): string | undefined {
  const given = process.env.BENCH_NODE24;
  if (given === "off") return undefined;
  if (given) {
    if (!existsSync(given)) throw new Error(`BENCH_NODE24: no file ${given}`);
    return given;
  }
  const candidates = [new URL("../.ci/tools/node24/node_modules/node/bin/node", import.meta.url).pathname, "/opt/node24/node_modules/node/bin/node"];
  return candidates.find((path) => existsSync(path));
}

const PEERS = (contestants: readonly Contestant[]) => contestants.filter((contestant) => contestant.role === "peer").map((contestant) => contestant.name);

export async function runLoopScenario(options: BenchOptions, contestants: readonly Contestant[] = loopContestants): Promise<ScenarioReport> {
  const machine = machineInfo();
  const provider = await spawnMockProvider({ scripts: { "loop-10": { toolTurns: TOOL_TURNS } } });
  const warmup = options.quick ? 2 : 10;
  const repetitions = options.quick ? 5 : 40;
  // --forced-gc measures the earlier way: one conversation per sample, after a forced full GC.
  const batch = options.forcedGc ? 1 : ISOLATED_BATCH;
  const details: string[] = [];
  const summary: SummaryRow[] = [];
  // The workers run on this Node, then on Node 24 (not with --shared-process: one process, this Node).
  const nodes: NodeRuntime[] = [{ label: `Node ${process.versions.node.split(".")[0]}`, path: process.execPath }];
  const other = options.sharedProcess ? undefined : node24();
  if (other) nodes.push({ label: "Node 24", path: other });
  const runtimes = new Map<string, string>();
  try {
    for (const [stream, runtime] of [false, true].flatMap((stream) => nodes.map((runtime) => [stream, runtime] as const))) {
      const mode = stream ? "streaming" : "JSON";
      const onNode = nodes.length > 1 ? `, ${runtime.label}` : "";
      // Each contestant in a process of its own (see isolated.ts), unless --shared-process.
      const entrants: Entrant[] = [];
      const workers: IsolatedEntrant[] = [];
      if (options.sharedProcess) {
        let toolCalls = 0;
        const tool = lookupTool((args) => {
          toolCalls++;
          return `value ${args.n}.${args.i}`;
        });
        for (const contestant of contestants) {
          const conversation = await contestant.prepare({ baseURL: provider.baseURL, model: "loop-10", stream, maxTurns: MODEL_CALLS + 5, tool });
          entrants.push({
            name: contestant.name,
            async run() {
              toolCalls = 0;
              const text = await conversation();
              if (text !== DEFAULT_FINAL_TEXT) throw new Error(`${contestant.name} (${mode}): wrong final text ${JSON.stringify(text)}`);
              if (toolCalls !== TOOL_TURNS) throw new Error(`${contestant.name} (${mode}): ${toolCalls} tool calls, expected ${TOOL_TURNS}`);
            },
          });
        }
      } else {
        for (const contestant of contestants) {
          const worker = await isolatedEntrant({
            contestant: contestant.name,
            baseURL: provider.baseURL,
            model: "loop-10",
            stream,
            maxTurns: MODEL_CALLS + 5,
            toolCalls: TOOL_TURNS,
            finalText: DEFAULT_FINAL_TEXT,
            batch,
            forcedGc: options.forcedGc,
            node: runtime.path,
          });
          if (!runtimes.has(runtime.label)) runtimes.set(runtime.label, `${await worker.describe()}`);
          workers.push(worker);
          entrants.push(worker);
        }
      }
      let samples: Map<string, Sample[]>;
      try {
        samples = await alternate(entrants, { warmup, repetitions });
      } finally {
        await Promise.all(workers.map((worker) => worker.close()));
      }
      // A sample is one conversation (shared process) or a batch of them (a worker).
      const calls = MODEL_CALLS * (options.sharedProcess ? 1 : batch);
      const stats = new Map(
        [...samples].map(([name, list]) => [name, { wall: spread(list.map((sample) => sample.wallMs / calls)), cpu: spread(list.map((sample) => sample.cpuMs / calls)) }]),
      );
      const floor = stats.get("raw-fetch")!;
      details.push(
        `### ${mode}${onNode}: ${TOOL_TURNS} tool turns + final answer, per model call (${repetitions} samples${options.sharedProcess || batch === 1 ? "" : ` of ${batch} conversations`}${options.forcedGc || options.sharedProcess ? ", each after a forced GC" : ""}, median (min–max))\n\n` +
          markdownTable(
            ["contestant", "wall ms / call", "CPU ms / call", "wall × floor", "CPU × floor", "CPU over floor ms"],
            contestants.map((contestant) => {
              const stat = stats.get(contestant.name)!;
              return [
                contestant.name,
                formatSpread(stat.wall),
                formatSpread(stat.cpu),
                format(stat.wall.median / floor.wall.median, 2),
                format(stat.cpu.median / floor.cpu.median, 2),
                format(stat.cpu.median - floor.cpu.median),
              ];
            }),
          ),
      );
      const agent = stats.get("agentloop");
      const peerNames = PEERS(contestants);
      const fastestPeer = (metric: "wall" | "cpu") => Math.min(...peerNames.map((name) => stats.get(name)![metric].median));
      for (const metric of ["wall", "cpu"] as const) {
        const values = Object.fromEntries([...stats].map(([name, stat]) => [name, stat[metric].median]));
        const withinFloor = agent ? agent[metric].median <= 1.2 * floor[metric].median : undefined;
        const belowPeers = agent && peerNames.length > 0 ? agent[metric].median * 2 <= fastestPeer(metric) : undefined;
        summary.push({
          scenario: `1 loop ${mode}${onNode}`,
          metric: `${metric === "wall" ? "wall" : "CPU"} ms / model call`,
          values,
          target: "≤ 1.2× floor, ≤ ½ fastest peer",
          met: withinFloor === undefined ? undefined : withinFloor && belowPeers !== false,
        });
      }
    }
    const stats = await provider.stats();
    if (stats.errors > 0) throw new Error(`mock provider answered ${stats.errors} requests with errors: ${stats.lastError}`);
  } finally {
    await provider.close();
  }
  return {
    id: "loop",
    title: "1. 10-turn tool loop: cost per model call",
    machine,
    quick: options.quick,
    details,
    summary,
    notes: [
      "Each conversation: 10 model calls that ask for one `lookup` call each, then the final answer (11 model calls). A sample is 5 conversations back to back in the contestant's own process (no forced GC: its own collections are part of its cost); times are divided by the model calls. With `--shared-process` or `--forced-gc` (the earlier method) a sample is one conversation after a forced full GC.",
      "CPU is this process only (the mock provider runs in a child process); wall includes the mock's time on localhost.",
      ...(runtimes.size > 0 ? [...runtimes].map(([label, described]) => `${label}: ${described}.`) : [`Peers: ${peerVersions()}.`]),
      ...(nodes.length === 1 && !options.sharedProcess
        ? ["Node 24 not found (`npm install --prefix /opt/node24 node@24`, or `BENCH_NODE24=<node binary>`): this Node only."]
        : []),
    ],
  };
}

if (isMain(import.meta.url)) {
  const options = parseBenchOptions();
  // BENCH_LOOP_CONTESTANTS="raw-fetch,agentloop,…": only these rows (the floor is always measured).
  const only = process.env.BENCH_LOOP_CONTESTANTS?.split(",").map((name) => name.trim());
  for (const name of only ?? []) if (!loopContestants.some((contestant) => contestant.name === name)) throw new Error(`BENCH_LOOP_CONTESTANTS: no contestant named ${JSON.stringify(name)}`);
  const contestants = only ? loopContestants.filter((contestant) => contestant.role === "floor" || only.includes(contestant.name)) : loopContestants;
  publish(await runLoopScenario(options, contestants), options);
}
