// Scenario 7: cold start of the compiled CLI (`node dist/src/cli/main.js`, what `agentloop` runs),
// paired with a bare `node -e 0` started the same way, and `agentloop serve` on the default
// embedded store from a new folder until it reports ready.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchFile, memoryMb } from "./child-process.js";
import { type BenchOptions, type ScenarioReport, formatSpread, isMain, machineInfo, markdownTable, parseBenchOptions, publish, spread } from "./harness.js";

const TARGET_HELP_MS = 100;
const TARGET_RUN_MS = 200;
const TARGET_READY_MS = 1000;

const repository = benchFile("..");
const cli = join(repository, "dist", "src", "cli", "main.js");

/** Compiles the package (`tsc -p tsconfig.build.json`), as `npm install` does through `prepare`. */
function build(): void {
  const result = spawnSync(process.execPath, [join(repository, "node_modules", "typescript", "bin", "tsc"), "-p", join(repository, "tsconfig.build.json")], {
    cwd: repository,
    stdio: "inherit",
  });
  if (result.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed (exit ${result.status})`);
}

/** Clean variables: no agent or memory settings from the caller's environment. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!/^(MEMORY_|AGENT_|MODEL_|MCP_|PEER_|DEBUG_MOCK|TOOL_CALL_MODE|AGENTIC_LOOP)/.test(key)) env[key] = value;
  return { ...env, NO_COLOR: "1", ...extra };
}

interface Command {
  name: string;
  args: string[];
}

/**
 * Preloaded into every measured process (the floor too): at exit it writes the process's CPU time
 * (user + system, µs) to file descriptor 3. CPU time is what a busy shared machine inflates least.
 */
const CPU_PRELOAD = `data:text/javascript,${encodeURIComponent(
  'import { writeSync } from "node:fs"; process.on("exit", () => { const u = process.cpuUsage(); try { writeSync(3, String(u.user + u.system)); } catch {} });',
)}`;

/** Wall and CPU time of one process from spawn to exit, in ms; throws when it fails. */
function timed(command: Command, cwd: string): { wall: number; cpu: number } {
  const started = performance.now();
  const result = spawnSync(process.execPath, ["--import", CPU_PRELOAD, ...command.args], { cwd, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe", "pipe"] });
  const wall = performance.now() - started;
  if (result.status !== 0) throw new Error(`${command.name} exited with ${result.status}: ${result.stderr.toString().slice(0, 500)}`);
  return { wall, cpu: Number(result.output[3]?.toString() ?? Number.NaN) / 1000 };
}

/** `agentloop serve --port 0 --json` in `cwd` (no memory settings: the default store there), until it prints `ready`. */
async function serveUntilReady(cwd: string): Promise<{ readyMs: number; rssMb: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, [cli, "serve", "--port", "0", "--host", "127.0.0.1", "--json"], {
    cwd,
    env: cleanEnv({ DEBUG_MOCK_RESPONSES: '["ready"]' }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  try {
    const readyMs = await new Promise<number>((resolve, reject) => {
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString("utf8");
        if (/"event":"ready"/.test(output)) resolve(performance.now() - started);
      });
      let errors = "";
      child.stderr.on("data", (chunk: Buffer) => {
        errors += chunk.toString("utf8");
      });
      child.once("exit", (code) => reject(new Error(`agentloop serve exited with ${code} before it was ready: ${errors.slice(0, 500)}`)));
    });
    return { readyMs, rssMb: memoryMb(child.pid!, "VmRSS") };
  } finally {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
}

export async function runStartupScenario(options: BenchOptions): Promise<ScenarioReport> {
  const machine = machineInfo();
  build();
  const folder = mkdtempSync(join(tmpdir(), "agentloop-bench-startup-"));
  const commands: Command[] = [
    { name: "node -e 0", args: ["-e", "0"] },
    { name: "agentloop --help", args: [cli, "--help"] },
    { name: 'agentloop run "hi" --mock \'["hello"]\'', args: [cli, "run", "hi", "--mock", '["hello"]'] },
  ];
  const samples = options.quick ? 5 : 20;
  const times = new Map<string, number[]>(commands.map((command) => [command.name, []]));
  const cpuTimes = new Map<string, number[]>(commands.map((command) => [command.name, []]));
  const readies: Array<{ readyMs: number; rssMb: number }> = [];
  try {
    // One warm-up of each: the files are in the page cache for every measured start.
    for (const command of commands) timed(command, folder);
    for (let sample = 0; sample < samples; sample++) {
      // Rotated, so no command always runs right after the same one.
      for (let offset = 0; offset < commands.length; offset++) {
        const command = commands[(sample + offset) % commands.length];
        const { wall, cpu } = timed(command, folder);
        times.get(command.name)!.push(wall);
        cpuTimes.get(command.name)!.push(cpu);
      }
    }
    for (let start = 0; start < (options.quick ? 2 : 5); start++) {
      const fresh = mkdtempSync(join(folder, "serve-"));
      readies.push(await serveUntilReady(fresh));
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
  /** Sample k of a command minus sample k of `node -e 0` (same round), then the median. */
  const addedIn = (samplesOf: Map<string, number[]>, name: string) => {
    const node = samplesOf.get(commands[0].name)!;
    return spread(samplesOf.get(name)!.map((ms, index) => ms - node[index]));
  };
  const added = (name: string) => addedIn(times, name);
  const help = added(commands[1].name);
  const run = added(commands[2].name);
  const ready = spread(readies.map((entry) => entry.readyMs));
  const readyRss = spread(readies.map((entry) => entry.rssMb));
  return {
    id: "startup",
    title: "7. Cold start",
    machine,
    quick: options.quick,
    details: [
      markdownTable(
        ["command", "wall ms", "added over node -e 0 ms", "CPU ms", "CPU added ms", "target (wall added)"],
        commands.map((command, index) => [
          command.name,
          formatSpread(spread(times.get(command.name)!)),
          index === 0 ? "" : formatSpread(added(command.name)),
          formatSpread(spread(cpuTimes.get(command.name)!)),
          index === 0 ? "" : formatSpread(addedIn(cpuTimes, command.name)),
          index === 1 ? `≤ +${TARGET_HELP_MS} ms` : index === 2 ? `≤ +${TARGET_RUN_MS} ms` : "",
        ]),
      ),
      markdownTable(
        ["server", "ready ms", "RSS when ready MB", "target"],
        [["agentloop serve, default embedded store, new folder", formatSpread(ready), formatSpread(readyRss), `ready < ${TARGET_READY_MS} ms`]],
      ),
    ],
    summary: [
      {
        scenario: "7 cold start",
        metric: "agentloop --help ms over node -e 0",
        values: { agentloop: help.median },
        target: `≤ ${TARGET_HELP_MS} ms`,
        met: help.median <= TARGET_HELP_MS,
      },
      {
        scenario: "7 cold start",
        metric: "agentloop run --mock ms over node -e 0",
        values: { agentloop: run.median },
        target: `≤ ${TARGET_RUN_MS} ms`,
        met: run.median <= TARGET_RUN_MS,
      },
      {
        scenario: "7 cold start",
        metric: "agentloop serve (default store) ready ms",
        values: { agentloop: ready.median },
        target: `< ${TARGET_READY_MS} ms`,
        met: ready.median < TARGET_READY_MS,
      },
    ],
    notes: [
      "CPU: user + system time of the process (all its threads), written by a preload at exit; the wall target is the issue's, CPU shows how much of the wall a busy machine added.",
      `The compiled package (\`tsc -p tsconfig.build.json\`, run first), started as \`node dist/src/cli/main.js …\` in a new folder: ${samples} samples of each command in rotating order after one warm-up each; "added" pairs each sample with the \`node -e 0\` of the same round, then the median (min–max).`,
      "`agentloop serve`: from spawn to its `ready` line (`--json`), in a new folder each time (the default store's file is created), with no memory settings; then SIGTERM. RSS after 200 concurrent streams: scenario 5's embedded row.",
    ],
  };
}

if (isMain(import.meta.url)) {
  const options = parseBenchOptions();
  publish(await runStartupScenario(options), options);
}
