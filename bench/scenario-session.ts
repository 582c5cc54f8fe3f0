// Scenario 4: a 1000-turn session. CPU per turn near turn 10 and near turn 1000 (the history
// grows, so serializing it costs more; the framework's own share should stay flat), the live
// heap at the last turn and what stays on the heap after the run.
import { type Contestant, allContestants, lookupTool } from "./contestants.js";
import {
  type BenchOptions,
  type ScenarioReport,
  collectGarbage,
  cpuMs,
  format,
  isMain,
  machineInfo,
  markdownTable,
  parseBenchOptions,
  percentile,
  publish,
} from "./harness.js";
import { DEFAULT_FINAL_TEXT, spawnMockProvider } from "./mock-provider.js";

const MB = 2 ** 20;

interface SessionResult {
  cpuEarly: number;
  cpuLate: number;
  wallEarly: number;
  wallLate: number;
  liveHeapMb: number;
  retainedHeapMb: number;
  totalSeconds: number;
}

/** Median of per-turn deltas over turns [from, to). */
function medianDelta(ticks: readonly number[], from: number, to: number): number {
  const deltas: number[] = [];
  for (let turn = Math.max(1, from); turn < Math.min(to, ticks.length); turn++) deltas.push(ticks[turn] - ticks[turn - 1]);
  return percentile(deltas, 0.5);
}

export async function runSessionScenario(options: BenchOptions, contestants: readonly Contestant[] = allContestants): Promise<ScenarioReport> {
  const machine = machineInfo();
  const turns = options.quick ? 200 : 1000;
  const warmupTurns = 50;
  const provider = await spawnMockProvider({ scripts: { session: { toolTurns: turns }, "session-warmup": { toolTurns: warmupTurns } } });
  const results = new Map<string, SessionResult>();
  try {
    for (const contestant of contestants) {
      let cpuTicks: number[] = [];
      let wallTicks: number[] = [];
      let liveHeap = 0;
      let lastTurn = -1;
      const tool = lookupTool((args) => {
        cpuTicks.push(cpuMs());
        wallTicks.push(performance.now());
        if (args.n === lastTurn) {
          // The last tool call: measure what is alive now (the whole history), then go on.
          collectGarbage();
          liveHeap = process.memoryUsage().heapUsed;
        }
        return `value ${args.n}.${args.i}`;
      });
      const warmup = await contestant.prepare({ baseURL: provider.baseURL, model: "session-warmup", stream: true, maxTurns: warmupTurns + 5, tool });
      if ((await warmup()) !== DEFAULT_FINAL_TEXT) throw new Error(`${contestant.name}: wrong final text in the warm-up session`);
      const conversation = await contestant.prepare({ baseURL: provider.baseURL, model: "session", stream: true, maxTurns: turns + 5, tool });
      cpuTicks = [];
      wallTicks = [];
      lastTurn = turns - 1;
      collectGarbage();
      const baseline = process.memoryUsage().heapUsed;
      const started = performance.now();
      const text = await conversation();
      const totalSeconds = (performance.now() - started) / 1000;
      if (text !== DEFAULT_FINAL_TEXT) throw new Error(`${contestant.name}: wrong final text ${JSON.stringify(text)}`);
      if (cpuTicks.length !== turns) throw new Error(`${contestant.name}: ${cpuTicks.length} tool calls, expected ${turns}`);
      collectGarbage();
      const retained = process.memoryUsage().heapUsed;
      results.set(contestant.name, {
        cpuEarly: medianDelta(cpuTicks, 5, 21),
        cpuLate: medianDelta(cpuTicks, turns - 15, turns),
        wallEarly: medianDelta(wallTicks, 5, 21),
        wallLate: medianDelta(wallTicks, turns - 15, turns),
        liveHeapMb: (liveHeap - baseline) / MB,
        retainedHeapMb: (retained - baseline) / MB,
        totalSeconds,
      });
    }
    const stats = await provider.stats();
    if (stats.errors > 0) throw new Error(`mock provider answered ${stats.errors} requests with errors: ${stats.lastError}`);
  } finally {
    await provider.close();
  }
  const floor = results.get("raw-fetch")!;
  const floorGrowth = floor.cpuLate - floor.cpuEarly;
  const agent = results.get("agentloop");
  const pick = (key: keyof SessionResult) => Object.fromEntries([...results].map(([name, result]) => [name, result[key]]));
  const agentGrowth = agent ? agent.cpuLate - agent.cpuEarly : undefined;
  return {
    id: "session",
    title: `4. A ${turns}-turn session`,
    machine,
    quick: options.quick,
    details: [
      markdownTable(
        [
          "contestant",
          "CPU ms/turn @10",
          `CPU ms/turn @${turns}`,
          "growth ms",
          "− floor @10",
          `− floor @${turns}`,
          "wall ms/turn @10",
          `wall ms/turn @${turns}`,
          `live heap @${turns} MB`,
          "retained after MB",
          "session s",
        ],
        contestants.map((contestant) => {
          const result = results.get(contestant.name)!;
          return [
            contestant.name,
            format(result.cpuEarly),
            format(result.cpuLate),
            format(result.cpuLate - result.cpuEarly),
            format(result.cpuEarly - floor.cpuEarly),
            format(result.cpuLate - floor.cpuLate),
            format(result.wallEarly),
            format(result.wallLate),
            format(result.liveHeapMb),
            format(result.retainedHeapMb),
            format(result.totalSeconds),
          ];
        }),
      ),
    ],
    summary: [
      { scenario: "4 session", metric: "CPU ms / turn @10", values: pick("cpuEarly") },
      {
        scenario: "4 session",
        metric: `CPU ms / turn @${turns}`,
        values: pick("cpuLate"),
        target: "growth ≤ 1.2× the floor's (history serialization)",
        met: agentGrowth === undefined ? undefined : agentGrowth <= 1.2 * Math.max(floorGrowth, 0.05),
      },
      { scenario: "4 session", metric: `live heap MB @${turns}`, values: pick("liveHeapMb") },
    ],
    notes: [
      "One streaming session per contestant (after a 50-turn warm-up session); each turn calls `lookup` once, and the tool call timestamps the turns.",
      "Per-turn figures are medians of turns 5–20 and of the last 15 turns. The raw floor's growth is the cost of serializing a longer history; a framework's own share is its figure minus the floor's.",
      "Live heap: after a forced GC at the last tool call, above the heap before the session. Retained: after the session, once its result is dropped.",
    ],
  };
}

if (isMain(import.meta.url)) {
  const options = parseBenchOptions();
  publish(await runSessionScenario(options), options);
}
