// Scenario 8: the coding tools against the command-line floors. `grep` over this repository (the
// JavaScript search the tool runs when it is called) against ripgrep (when installed) and GNU grep
// run as processes, and `read_file` of a 1 MB file against `cat` and a bare `fs.readFile`.
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { grepTool, readFileTool, Workspace } from "../src/coding/index.js";
import type { Tool, ToolContext } from "../src/tools/tool.js";
import { benchFile } from "./child-process.js";
import { alternate, type BenchOptions, type Entrant, formatSpread, isMain, machineInfo, markdownTable, parseBenchOptions, publish, type ScenarioReport, spread } from "./harness.js";

/** A word that occurs in a few hundred lines of the repository. */
const PATTERN = "defineTool";
/** Enough that the tool searches every file, as the command-line tools do. */
const ALL_RESULTS = 1_000_000;

function context(): ToolContext {
  return {
    signal: new AbortController().signal,
    runId: "bench",
    toolCallId: "call",
    idempotencyKey: "bench:call",
    toolName: "bench",
    step: 1,
    inputs: {},
    depth: 0,
    agentPath: [],
    progress() {},
    nested() {},
    services: {},
  };
}

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
    const grep = grepTool(new Workspace({ root: repository }));
    const ours = await callTool(grep, { pattern: PATTERN, max_results: ALL_RESULTS });
    const expected = lineCount(ours);
    const ripgrep = has("rg");
    const check = (name: string, output: string) => {
      if (lineCount(output) !== expected) throw new Error(`${name} found ${lineCount(output)} lines, agentloop grep ${expected}`);
    };
    const grepEntrants: Entrant[] = [
      { name: "agentloop grep", run: async () => check("agentloop grep", await callTool(grep, { pattern: PATTERN, max_results: ALL_RESULTS })) },
      {
        name: "GNU grep -rn",
        run: async () => check("grep", await run("grep", ["-rnI", "--exclude-dir=node_modules", "--exclude-dir=.git", PATTERN, "."], repository)),
      },
    ];
    if (ripgrep) {
      grepEntrants.push({
        name: "ripgrep",
        run: async () => check("rg", await run("rg", ["-n", "--no-heading", "--no-ignore", "--hidden", "-g", "!node_modules/", "-g", "!.git/", PATTERN, "."], repository)),
      });
    }
    const grepSamples = await alternate(grepEntrants, { warmup, repetitions });

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
    const readSamples = await alternate(readEntrants, { warmup, repetitions });

    const wall = (samples: Map<string, Array<{ wallMs: number }>>, name: string) => spread(samples.get(name)!.map((sample) => sample.wallMs));
    const cpu = (samples: Map<string, Array<{ cpuMs: number }>>, name: string) => spread(samples.get(name)!.map((sample) => sample.cpuMs));
    const table = (samples: Map<string, Array<{ wallMs: number; cpuMs: number }>>, entrants: Entrant[], inProcess: (name: string) => boolean) =>
      markdownTable(
        ["contestant", "wall ms", "CPU ms (this process)"],
        entrants.map((entrant) => [entrant.name, formatSpread(wall(samples, entrant.name)), inProcess(entrant.name) ? formatSpread(cpu(samples, entrant.name)) : "(a child process)"]),
      );
    const grepFloor = ripgrep ? "ripgrep" : "GNU grep -rn";
    return {
      id: "coding",
      title: "8. Coding tools: grep and read_file against the command line",
      machine,
      quick: options.quick,
      details: [
        `grep for "${PATTERN}" over this repository (${expected} matching lines; node_modules and .git skipped, dot files and ignored files searched by all):\n\n${table(grepSamples, grepEntrants, (name) => name.startsWith("agentloop"))}`,
        `read_file of a ${(size / 1_048_576).toFixed(2)} MB file of ${lines} lines, whole (numbered lines):\n\n${table(readSamples, readEntrants, (name) => name !== "cat")}`,
      ],
      summary: [
        {
          scenario: "8 coding tools",
          metric: `grep over the repository ms (floor: ${grepFloor})`,
          values: { "raw-fetch": wall(grepSamples, grepFloor).median, agentloop: wall(grepSamples, "agentloop grep").median },
        },
        {
          scenario: "8 coding tools",
          metric: "read_file of 1 MB ms (floor: cat)",
          values: { "raw-fetch": wall(readSamples, "cat").median, agentloop: wall(readSamples, "agentloop read_file").median },
        },
      ],
      notes: [
        `Medians (min–max) of ${repetitions} rounds after ${warmup} warm-up rounds, contestants in rotating order, a forced GC before each. The tools are called in this process (\`tool.execute\`, as the loop calls them, without the loop's truncation); the command-line floors are started as processes each time (their start is part of their time, as it is when a program shells out to them).`,
        ripgrep ? "ripgrep: Debian's `ripgrep` package (`apt-get install ripgrep`)." : "ripgrep is not installed on this machine: its row is left out (`apt-get install ripgrep`).",
        "agentloop's grep is the JavaScript search (tinyglobby lists the files, each is read and its lines tested with the RegExp); its matches equal the floors' (checked every run).",
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
