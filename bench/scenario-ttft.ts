// Scenario 3: time to the first answer token, through each contestant's loop, against the raw
// stream read with fetch. The answer streams in 24 chunks 1 ms apart, so a contestant that
// buffers the answer shows up as ~25 ms late.
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

const ANSWER =
  "The first token of this answer should reach the caller as soon as it leaves the server, not after the rest of these twenty-four words have arrived.";

export async function runTtftScenario(options: BenchOptions, contestants: readonly Contestant[] = allContestants): Promise<ScenarioReport> {
  const machine = machineInfo();
  const provider = await spawnMockProvider({ scripts: { answer: { toolTurns: 0, finalText: ANSWER, chunkDelayMs: 1 } } });
  const firstTokens = new Map<string, number[]>();
  const repetitions = options.quick ? 5 : 40;
  try {
    const tool = lookupTool(() => {
      throw new Error("the answer script calls no tool");
    });
    const entrants = [];
    for (const contestant of contestants) {
      const conversation = await contestant.prepare({ baseURL: provider.baseURL, model: "answer", stream: true, maxTurns: 3, tool });
      const times: number[] = [];
      firstTokens.set(contestant.name, times);
      entrants.push({
        name: contestant.name,
        async run() {
          let first = -1;
          let streamed = "";
          const started = performance.now();
          const text = await conversation({
            onTextDelta(delta) {
              if (first < 0) first = performance.now() - started;
              streamed += delta;
            },
          });
          if (text !== ANSWER || streamed !== ANSWER) throw new Error(`${contestant.name}: wrong answer ${JSON.stringify(text)} / streamed ${JSON.stringify(streamed)}`);
          times.push(first);
        },
      });
    }
    await alternate(entrants, { warmup: options.quick ? 2 : 10, repetitions });
    for (const times of firstTokens.values()) times.splice(0, times.length - repetitions);
    const stats = await provider.stats();
    if (stats.errors > 0) throw new Error(`mock provider answered ${stats.errors} requests with errors: ${stats.lastError}`);
  } finally {
    await provider.close();
  }
  const medians = Object.fromEntries([...firstTokens].map(([name, times]) => [name, spread(times).median]));
  const floor = medians["raw-fetch"];
  return {
    id: "ttft",
    title: "3. Time to first answer token",
    machine,
    quick: options.quick,
    details: [
      markdownTable(
        ["contestant", "first token ms", "− raw ms"],
        contestants.map((contestant) => [contestant.name, formatSpread(spread(firstTokens.get(contestant.name)!)), format(medians[contestant.name] - floor, 2)]),
      ),
    ],
    summary: [
      {
        scenario: "3 TTFT",
        metric: "first answer token ms",
        values: medians,
        target: "≤ raw + 1 ms",
        met: medians.agentloop === undefined ? undefined : medians.agentloop <= floor + 1,
      },
    ],
    notes: ["From calling the contestant to its first final-answer text delta; no tool turn before the answer (the whole loop is still set up)."],
  };
}

if (isMain(import.meta.url)) {
  const options = parseBenchOptions();
  publish(await runTtftScenario(options), options);
}
