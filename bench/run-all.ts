// Runs the benchmark scenarios, each in its own process (`--expose-gc`, a clean heap), and prints
// one table of medians and ratios. Writes the whole report to bench/last-run.md.
//
//   npm run bench                          # everything (a few minutes on 2 cores)
//   npm run bench -- --quick               # short run: a smoke check, not a measurement
//   npm run bench -- loop ttft             # only the scenarios whose id contains a filter
//   npm run bench -- --update-readme       # also put the report into bench/README.md
import { spawnSync } from "node:child_process";
import { bundle } from "./child-process.js";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type ScenarioReport, type SummaryRow, format, markdownTable } from "./harness.js";

const SCENARIOS = [
  { id: "loop", file: "scenario-loop.ts" },
  { id: "wave", file: "scenario-wave.ts" },
  { id: "ttft", file: "scenario-ttft.ts" },
  { id: "session", file: "scenario-session.ts" },
  { id: "server", file: "scenario-server.ts" },
  { id: "memory", file: "scenario-memory.ts" },
  { id: "startup", file: "scenario-startup.ts" },
  { id: "coding", file: "scenario-coding.ts" },
  { id: "studio", file: "scenario-studio.ts" },
  { id: "instructions", file: "scenario-instructions.ts" },
] as const;

const COLUMNS = ["raw-fetch", "raw-http", "openai-sdk", "agentloop", "agentloop-sdk", "vercel-ai", "openai-agents"] as const;
const PEERS = ["vercel-ai", "openai-agents"];
const README_START = "<!-- last-run:start -->";
const README_END = "<!-- last-run:end -->";

function parseArguments(argv: readonly string[]) {
  const options = { quick: false, updateReadme: false, filters: [] as string[] };
  for (const argument of argv) {
    if (argument === "--quick") options.quick = true;
    else if (argument === "--update-readme") options.updateReadme = true;
    else if (argument.startsWith("-")) throw new Error(`unknown option ${argument} (expected --quick, --update-readme or scenario ids: ${SCENARIOS.map((s) => s.id).join(", ")})`);
    else options.filters.push(argument);
  }
  const unknown = options.filters.filter((filter) => !SCENARIOS.some((scenario) => scenario.id.includes(filter)));
  if (unknown.length > 0) throw new Error(`no scenario matches ${unknown.join(", ")} (scenarios: ${SCENARIOS.map((s) => s.id).join(", ")})`);
  return options;
}

function summaryTable(rows: readonly SummaryRow[]): string {
  return markdownTable(
    ["scenario", "metric", "floor", ...COLUMNS.slice(1), "agentloop ÷ floor", "agentloop ÷ raw-http", "agentloop ÷ fastest peer", "target", "met"],
    rows.map((row) => {
      const value = (name: string) => row.values[name];
      const agent = value("agentloop");
      const floor = value("raw-fetch");
      const rawHttp = value("raw-http");
      const peers = PEERS.map(value).filter((entry): entry is number => entry !== undefined);
      return [
        row.scenario,
        row.metric,
        ...COLUMNS.map((name) => (value(name) === undefined ? "" : format(value(name)))),
        agent !== undefined && floor !== undefined ? format(agent / floor, 2) : "",
        agent !== undefined && rawHttp !== undefined ? format(agent / rawHttp, 2) : "",
        agent !== undefined && peers.length > 0 ? format(agent / Math.min(...peers), 2) : "",
        row.target ?? "",
        row.met === undefined ? "" : row.met ? "yes" : "**no**",
      ];
    }),
  );
}

async function main(): Promise<number> {
  const options = parseArguments(process.argv.slice(2));
  const selected = SCENARIOS.filter((scenario) => options.filters.length === 0 || options.filters.some((filter) => scenario.id.includes(filter)));
  const directory = mkdtempSync(join(tmpdir(), "agentloop-bench-"));
  const reports: ScenarioReport[] = [];
  const failures: string[] = [];
  const started = Date.now();
  try {
    for (const scenario of selected) {
      const jsonPath = join(directory, `${scenario.id}.json`);
      // Each scenario runs as bundled JavaScript (esbuild, no TypeScript loader): agentloop is
      // measured as the compiled package runs, like the peers' JavaScript (tsx would add its
      // `__name` helpers to our functions only).
      const script = await bundle(fileURLToPath(new URL(scenario.file, import.meta.url)));
      const result = spawnSync(process.execPath, ["--expose-gc", script, ...(options.quick ? ["--quick"] : []), "--json", jsonPath], {
        stdio: "inherit",
        env: { ...process.env, AGENTLOOP_BENCH_DIR: fileURLToPath(new URL(".", import.meta.url)) },
      });
      if (result.status !== 0) {
        failures.push(`${scenario.id} (exit ${result.status ?? result.signal})`);
        continue;
      }
      reports.push(JSON.parse(readFileSync(jsonPath, "utf8")) as ScenarioReport);
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
  if (reports.length === 0) {
    console.error(`\nno scenario finished: ${failures.join(", ")}`);
    return 1;
  }
  const machine = reports[0].machine;
  const loads = reports.map((report) => `${report.id} ${report.machine.loadAverage}`).join(", ");
  const command = `npm run bench${options.quick || options.filters.length > 0 ? ` -- ${[...(options.quick ? ["--quick"] : []), ...options.filters].join(" ")}` : ""}`;
  const table = summaryTable(reports.flatMap((report) => report.summary));
  const header = [
    `Measured ${new Date(started).toISOString().replace(/\.\d+Z$/, "Z")} with \`${command}\` (${((Date.now() - started) / 1000).toFixed(0)} s)${options.quick ? ", QUICK run: smoke check only" : ""}.`,
    `Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGb} GB, Node ${machine.node}, Linux ${machine.kernel}. 1-minute load average at each scenario's start: ${loads}.`,
  ];
  const report = [
    ...header,
    "",
    "Medians. The floor column is the raw fetch loop (1–4), the bare node:http server (5), the in-process store (6) and ripgrep or `cat` (8).",
    "",
    table,
    "",
    ...reports.flatMap((entry) => [`### ${entry.title}${entry.quick ? " (quick)" : ""}`, "", ...entry.details.flatMap((detail) => [detail, ""]), ...entry.notes.map((note) => `- ${note}`), ""]),
    ...(failures.length > 0 ? [`Failed scenarios: ${failures.join(", ")}`, ""] : []),
  ].join("\n");
  console.log(`\n# Summary\n\n${header.join("\n")}\n\n${table}\n`);
  if (failures.length > 0) console.error(`failed scenarios: ${failures.join(", ")}`);
  const lastRun = fileURLToPath(new URL("last-run.md", import.meta.url));
  writeFileSync(lastRun, `# Last benchmark run\n\n${report}`);
  console.log(`report written to ${lastRun}`);
  if (options.updateReadme) {
    const readmePath = fileURLToPath(new URL("README.md", import.meta.url));
    const readme = readFileSync(readmePath, "utf8");
    const from = readme.indexOf(README_START);
    const to = readme.indexOf(README_END);
    if (from < 0 || to < from) throw new Error(`bench/README.md has no ${README_START} … ${README_END} block`);
    writeFileSync(readmePath, `${readme.slice(0, from + README_START.length)}\n${report}\n${readme.slice(to)}`);
    console.log(`bench/README.md updated`);
  }
  return failures.length > 0 ? 1 : 0;
}

process.exitCode = await main();
