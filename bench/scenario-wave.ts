// Scenario 2: one wave of 16 tool calls that each take 50 ms. The wave's wall time runs from the
// first tool starting to the next model request leaving the process: dispatch, the slowest
// tool, collecting the results and building the next request.
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { type Contestant, allContestants, lookupTool } from "./contestants.js";
import {
  type BenchOptions,
  type ScenarioReport,
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
import { spawnMockProvider } from "./mock-provider.js";

const WAVE_SIZE = 16;
const TOOL_MS = 50;
const FINAL_TEXT = "Sixteen values, all in.";

export async function runWaveScenario(options: BenchOptions, contestants: readonly Contestant[] = allContestants): Promise<ScenarioReport> {
  const machine = machineInfo();
  const provider = await spawnMockProvider({ scripts: { wave: { toolTurns: 1, toolsPerTurn: WAVE_SIZE, finalText: FINAL_TEXT } } });
  // Requests are timestamped as node creates them: fetch (undici) and node:http each publish one
  // diagnostics-channel message per request, whatever client library sits on top.
  let requestTimes: number[] = [];
  const onRequest = () => void requestTimes.push(performance.now());
  const channels = ["undici:request:create", "http.client.request.start"];
  for (const channel of channels) subscribe(channel, onRequest);
  const waves = new Map<string, { wall: number[]; startSpread: number[] }>();
  try {
    let starts: number[] = [];
    const tool = lookupTool(async (args) => {
      starts.push(performance.now());
      await new Promise((resolve) => setTimeout(resolve, TOOL_MS));
      return `value ${args.n}.${args.i}`;
    });
    const entrants = [];
    for (const contestant of contestants) {
      const conversation = await contestant.prepare({ baseURL: provider.baseURL, model: "wave", stream: true, maxTurns: 5, tool });
      const record = { wall: [] as number[], startSpread: [] as number[] };
      waves.set(contestant.name, record);
      entrants.push({
        name: contestant.name,
        async run() {
          starts = [];
          requestTimes = [];
          const text = await conversation();
          if (text !== FINAL_TEXT) throw new Error(`${contestant.name}: wrong final text ${JSON.stringify(text)}`);
          if (starts.length !== WAVE_SIZE) throw new Error(`${contestant.name}: ${starts.length} tool calls, expected ${WAVE_SIZE}`);
          if (requestTimes.length !== 2) throw new Error(`${contestant.name}: ${requestTimes.length} model requests, expected 2`);
          record.wall.push(requestTimes[1] - Math.min(...starts));
          record.startSpread.push(Math.max(...starts) - Math.min(...starts));
        },
      });
    }
    const repetitions = options.quick ? 3 : 20;
    await alternate(entrants, { warmup: options.quick ? 1 : 3, repetitions });
    for (const record of waves.values()) {
      // Only the measured runs count (the warm-up runs come first).
      record.wall.splice(0, record.wall.length - repetitions);
      record.startSpread.splice(0, record.startSpread.length - repetitions);
    }
    const stats = await provider.stats();
    if (stats.errors > 0) throw new Error(`mock provider answered ${stats.errors} requests with errors: ${stats.lastError}`);
  } finally {
    for (const channel of channels) unsubscribe(channel, onRequest);
    await provider.close();
  }
  const medians = Object.fromEntries([...waves].map(([name, record]) => [name, spread(record.wall).median]));
  const agent = medians.agentloop;
  return {
    id: "wave",
    title: `2. One wave of ${WAVE_SIZE} tools × ${TOOL_MS} ms`,
    machine,
    quick: options.quick,
    details: [
      markdownTable(
        ["contestant", "wave wall ms", "over slowest tool ms", "first→last tool start ms"],
        contestants.map((contestant) => {
          const record = waves.get(contestant.name)!;
          const wall = spread(record.wall);
          return [contestant.name, formatSpread(wall), format(wall.median - TOOL_MS, 2), formatSpread(spread(record.startSpread))];
        }),
      ),
    ],
    summary: [
      {
        scenario: "2 wave",
        metric: `wave wall ms (${WAVE_SIZE} × ${TOOL_MS} ms tools)`,
        values: medians,
        target: `≤ ${TOOL_MS + 10} ms`,
        met: agent === undefined ? undefined : agent <= TOOL_MS + 10,
      },
    ],
    notes: [
      "Wave wall time: from the first tool call starting to the next model request being sent (timestamped when node creates the request: the `undici:request:create` and `http.client.request.start` diagnostics channels).",
      "Streaming responses; the 16 calls arrive in one model response.",
    ],
  };
}

if (isMain(import.meta.url)) {
  const options = parseBenchOptions();
  publish(await runWaveScenario(options), options);
}
