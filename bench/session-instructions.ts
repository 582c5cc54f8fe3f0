// Scenario 4 counted in instructions: the growth of a long session's per-turn cost, from turns
// 10–20 to the last 10 turns, for the floor and agentloop, each in its own process under
// `valgrind --tool=callgrind --instr-atstart=no`. The contestant's tool turns counting on and
// zeroes it at turn 10, dumps it at turn 20, and the same over the last ten turns: the two dumps
// are the instructions of ten turns each, early and late (the mock provider runs in its own
// process, not counted). Repeats on a loaded machine where CPU time per turn does not.
//
//   node --import tsx bench/session-instructions.ts [turns=1000] [contestant ...]
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundle } from "./child-process.js";
import { allContestants, lookupTool } from "./contestants.js";
import { callgrindControlSelf, format, markdownTable } from "./harness.js";
import { DEFAULT_FINAL_TEXT, spawnMockProvider } from "./mock-provider.js";

const SPAN = 10;

/** In the child (under callgrind): one warm-up session, then the counted one. */
async function child(name: string, turns: number): Promise<void> {
  const contestant = allContestants.find((entry) => entry.name === name);
  if (!contestant) throw new Error(`unknown contestant ${name}`);
  const marks = new Map<number, string>([
    [10, "--zero"],
    [10 + SPAN, "--dump"],
    [turns - 1 - SPAN, "--zero"],
    [turns - 1, "--dump"],
  ]);
  let counting = false;
  const provider = await spawnMockProvider({ scripts: { session: { toolTurns: turns }, warmup: { toolTurns: 100 } } });
  try {
    const tool = lookupTool((args) => {
      const mark = counting ? marks.get(args.n) : undefined;
      if (mark === "--zero") callgrindControlSelf("--instr=on");
      if (mark) callgrindControlSelf(mark);
      return `value ${args.n}.${args.i}`;
    });
    const warmup = await contestant.prepare({ baseURL: provider.baseURL, model: "warmup", stream: true, maxTurns: 110, tool });
    if ((await warmup()) !== DEFAULT_FINAL_TEXT) throw new Error("wrong warm-up answer");
    const session = await contestant.prepare({ baseURL: provider.baseURL, model: "session", stream: true, maxTurns: turns + 5, tool });
    counting = true;
    if ((await session()) !== DEFAULT_FINAL_TEXT) throw new Error("wrong answer");
  } finally {
    await provider.close();
  }
}

async function parent(turns: number, names: readonly string[]): Promise<void> {
  const script = await bundle(fileURLToPath(import.meta.url));
  const directory = mkdtempSync(join(tmpdir(), "agentloop-session-callgrind-"));
  const rows: string[][] = [];
  const growth = new Map<string, number>();
  try {
    for (const name of names) {
      const out = join(directory, `${name}.out`);
      const result = spawnSync("valgrind", ["-q", "--tool=callgrind", "--instr-atstart=no", `--callgrind-out-file=${out}`, process.execPath, script, "--child", name, String(turns)], {
        stdio: ["ignore", "inherit", "inherit"],
        env: { ...process.env, AGENTLOOP_BENCH_DIR: fileURLToPath(new URL(".", import.meta.url)) },
      });
      if (result.status !== 0) throw new Error(`${name}: exit ${result.status ?? result.signal}`);
      const dumps = readdirSync(directory)
        .filter((file) => file.startsWith(`${name}.out.`))
        .sort((a, b) => Number(a.split(".").pop()) - Number(b.split(".").pop()));
      const [early, late] = dumps.map((file) => Number(/^summary:\s+(\d+)/m.exec(readFileSync(join(directory, file), "utf8"))![1]) / SPAN);
      growth.set(name, late - early);
      rows.push([name, format(early / 1e6, 3), format(late / 1e6, 3), format((late - early) / 1e6, 3)]);
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  const floor = growth.get(names[0])!;
  console.log(
    markdownTable(
      ["contestant", `M instructions / turn, turns 10–${10 + SPAN}`, `last ${SPAN} turns of ${turns}`, "growth (M)", `growth ÷ ${names[0]}`],
      rows.map((row) => [...row, format(growth.get(row[0])! / floor, 2)]),
    ),
  );
}

const argv = process.argv.slice(2);
if (argv[0] === "--child") await child(argv[1], Number(argv[2]));
else await parent(Number(argv[0] ?? 1000), argv.length > 1 ? argv.slice(1) : ["raw-fetch", "raw-http", "agentloop", "agentloop-sdk"]);
