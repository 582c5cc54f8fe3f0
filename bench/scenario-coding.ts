// Scenario 8: the coding tools against the command-line floors. `grep` over this repository (the
// tool on ripgrep when installed, and its JavaScript search) against ripgrep and GNU grep run as
// processes, and `read_file` of a 1 MB file against `cat` and a bare `fs.readFile`.
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { grepTool, readFileTool, Workspace } from "../src/coding/index.js";
import type { Tool, } from "../src/tools/tool.js";
import { toolContext } from "../test/mcp/tool-context.js";
import { benchFile } from "./child-process.js";
import { alternate, type BenchOptions, type Entrant, formatSpread, isMain, machineInfo, markdownTable, parseBenchOptions, publish, type ScenarioReport, spread } from "./harness.js";

/** A word that occurs in a few hundred lines of the repository. */
const PATTERN = "defineTool";
/** Enough that the tool searches every file, as the command-line tools do. */
const ALL_RESULTS = 1_000_000;

const context = () => toolContext({ runId: "bench", toolCallId: "call", idempotencyKey: "bench:call", toolName: "bench" });

async function callTool(tool: Tool, args: Record<string, unknown>): Promise<string> {
  const output = (await tool.execute(args, context())) as string | { content: string; isError?: boolean };
  if (typeof output === "string") return output;
  if (output.isError) throw new Error(`${tool.name} failed: ${output.content}`);
  return output.content;
}

function run(command: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, maxBuffer: 256 * 1024 * 1024 }, (error, stdout) => {
      // grep and rg exit 1 when nothing matched: an empty result, which the checks below refuse.
      if (error && (error as { code?: number }).code !== 1) reject(error);
      else resolve(stdout);
    });
  });
}

/** CPU time of this process's ended children (user + system, ms), from /proc (10 ms ticks). */
function childrenCpuMs(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 16 and 17 of /proc/[pid]/stat (cutime, cstime), counted from the state field (3).
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = Number(spawnSync("getconf", ["CLK_TCK"]).stdout?.toString().trim()) || 100;

/** Wraps an entrant so the CPU of the processes it starts is recorded too (warm-up runs dropped later). */
function withChildren(entrant: Entrant, log: Map<string, number[]>): Entrant {
  log.set(entrant.name, []);
  return {
    name: entrant.name,
    run: async () => {
      const before = childrenCpuMs();
      await entrant.run();
      log.get(entrant.name)!.push(childrenCpuMs() - before);
    },
  };
}

const has = (command: string) => spawnSync(command, ["--version"], { stdio: "ignore" }).status === 0;
const lineCount = (text: string) => text.split("\n").filter((line) => line !== "").length;

export async function runCodingScenario(options: BenchOptions): Promise<ScenarioReport> {
  const machine = machineInfo();
  const repository = benchFile("..");
  const folder = mkdtempSync(join(tmpdir(), "agentloop-bench-coding-"));
  const warmup = options.quick ? 1 : 3;
  const repetitions = options.quick ? 3 : 15;
  try {
    // --- grep over the repository: same files for everyone (dot files too; not node_modules, .git) ---
    const grep = grepTool(new Workspace({ root: repository }), { ripgrep: false });
    const grepAuto = grepTool(new Workspace({ root: repository }));
    const ours = await callTool(grep, { pattern: PATTERN, max_results: ALL_RESULTS });
    const expected = lineCount(ours);
    const ripgrep = has("rg");
    const check = (name: string, output: string) => {
      if (lineCount(output) !== expected) throw new Error(`${name} found ${lineCount(output)} lines, agentloop grep ${expected}`);
    };
    const grepEntrants: Entrant[] = [
      { name: "agentloop grep (JavaScript)", run: async () => check("agentloop grep", await callTool(grep, { pattern: PATTERN, max_results: ALL_RESULTS })) },
      {
        name: "GNU grep -rn",
        run: async () => check("grep", await run("grep", ["-rnI", "--exclude-dir=node_modules", "--exclude-dir=.git", PATTERN, "."], repository)),
      },
    ];
    if (ripgrep) {
      grepEntrants.push({ name: "agentloop grep (ripgrep)", run: async () => check("agentloop grep on rg", await callTool(grepAuto, { pattern: PATTERN, max_results: ALL_RESULTS })) });
      grepEntrants.push({
        name: "ripgrep",
        run: async () => check("rg", await run("rg", ["-n", "--no-heading", "--no-ignore", "--hidden", "-g", "!node_modules/", "-g", "!.git/", PATTERN, "."], repository)),
      });
    }
    const childCpu = new Map<string, number[]>();
    const grepSamples = await alternate(
      grepEntrants.map((entrant) => withChildren(entrant, childCpu)),
      { warmup, repetitions },
    );

    // --- read_file of a 1 MB file (the whole file: limit past its lines) ---
    const line = "const value = computeSomething(alpha, beta, gamma); // 64 chars\n";
    const big = join(folder, "big.ts");
    writeFileSync(big, line.repeat(Math.ceil(1_048_576 / line.length)));
    const size = readFileSync(big).length;
    const lines = size / line.length;
    const read = readFileTool(new Workspace({ root: folder }));
    const readEntrants: Entrant[] = [
      {
        name: "agentloop read_file",
        run: async () => {
          const text = await callTool(read, { file_path: "big.ts", limit: 1_000_000 });
          if (!text.endsWith(`${lines} | ${line.trimEnd()}`)) throw new Error("read_file did not return the whole file");
        },
      },
      {
        name: "cat",
        run: async () => {
          if ((await run("cat", [big], folder)).length !== size) throw new Error("cat returned a different size");
        },
      },
      {
        name: "fs.readFile",
        run: async () => {
          if ((await (await import("node:fs/promises")).readFile(big, "utf8")).length !== size) throw new Error("readFile returned a different size");
        },
      },
    ];
    const readSamples = await alternate(
      readEntrants.map((entrant) => withChildren(entrant, childCpu)),
      { warmup, repetitions },
    );

    const wall = (samples: Map<string, Array<{ wallMs: number }>>, name: string) => spread(samples.get(name)!.map((sample) => sample.wallMs));
    /** CPU of this process plus the processes it started, per measured run (the warm-up runs come first in the log). */
    const cpu = (samples: Map<string, Array<{ cpuMs: number }>>, name: string) => {
      const children = childCpu.get(name)!.slice(warmup);
      return spread(samples.get(name)!.map((sample, index) => sample.cpuMs + (children[index] ?? 0)));
    };
    const table = (samples: Map<string, Array<{ wallMs: number; cpuMs: number }>>, entrants: Entrant[]) =>
      markdownTable(
        ["contestant", "wall ms", "CPU ms (this process + the processes it started)"],
        entrants.map((entrant) => [entrant.name, formatSpread(wall(samples, entrant.name)), formatSpread(cpu(samples, entrant.name))]),
      );
    const grepFloor = ripgrep ? "ripgrep" : "GNU grep -rn";
    return {
      id: "coding",
      title: "8. Coding tools: grep and read_file against the command line",
      machine,
      quick: options.quick,
      details: [
        `grep for "${PATTERN}" over this repository (${expected} matching lines; node_modules and .git skipped, dot files and ignored files searched by all):\n\n${table(grepSamples, grepEntrants)}`,
        `read_file of a ${(size / 1_048_576).toFixed(2)} MB file of ${lines} lines, whole (numbered lines):\n\n${table(readSamples, readEntrants)}`,
      ],
      summary: [
        {
          scenario: "8 coding tools",
          metric: `grep over the repository, wall ms, JavaScript search (floor: ${grepFloor})`,
          values: { "raw-fetch": wall(grepSamples, grepFloor).median, agentloop: wall(grepSamples, "agentloop grep (JavaScript)").median },
        },
        {
          scenario: "8 coding tools",
          metric: `grep over the repository, CPU ms, JavaScript search (floor: ${grepFloor})`,
          values: { "raw-fetch": cpu(grepSamples, grepFloor).median, agentloop: cpu(grepSamples, "agentloop grep (JavaScript)").median },
        },
        ...(ripgrep
          ? [
              {
                scenario: "8 coding tools",
                metric: "grep over the repository, CPU ms, on ripgrep (floor: ripgrep)",
                values: { "raw-fetch": cpu(grepSamples, "ripgrep").median, agentloop: cpu(grepSamples, "agentloop grep (ripgrep)").median },
              },
            ]
          : []),
        {
          scenario: "8 coding tools",
          metric: "read_file of 1 MB, wall ms (floor: cat)",
          values: { "raw-fetch": wall(readSamples, "cat").median, agentloop: wall(readSamples, "agentloop read_file").median },
        },
        {
          scenario: "8 coding tools",
          metric: "read_file of 1 MB, CPU ms (floor: cat)",
          values: { "raw-fetch": cpu(readSamples, "cat").median, agentloop: cpu(readSamples, "agentloop read_file").median },
        },
      ],
      notes: [
        `Medians (min–max) of ${repetitions} rounds after ${warmup} warm-up rounds, contestants in rotating order, a forced GC before each. CPU is this process's (\`process.cpuUsage()\`) plus its ended children's (cutime + cstime of /proc/self/stat, 10 ms ticks): on a shared machine it moves less than wall time. The tools are called in this process (\`tool.execute\`, as the loop calls them, without the loop's truncation); the command-line floors are started as processes each time (their start is part of their time, as it is when a program shells out to them).`,
        ripgrep ? "ripgrep: Debian's `ripgrep` package (`apt-get install ripgrep`)." : "ripgrep is not installed on this machine: its row is left out (`apt-get install ripgrep`).",
        "agentloop's grep runs on ripgrep when `rg` is installed (`agentloop grep (ripgrep)`: the tool's own rg process, its output parsed) and otherwise searches in JavaScript (`agentloop grep (JavaScript)`, forced here with `ripgrep: false`: tinyglobby lists the files, they are read 32 at a time, a file is split into lines only when its whole text matches); every run's match count is checked against the tool's.",
      ],
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  const options = parseBenchOptions();
  publish(await runCodingScenario(options), options);
}
