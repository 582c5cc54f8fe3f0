// Measurement helpers shared by the scenarios: alternating repetitions, statistics, command
// line options, machine facts and the JSON report each scenario hands to `run-all.ts`.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem } from "node:os";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

export interface BenchOptions {
  /** Short run: fewer repetitions and turns (a smoke check, not a measurement). */
  quick: boolean;
  /** Where to write the JSON report (`run-all.ts` sets it). */
  jsonPath?: string;
  /** Scenario 1: all contestants in this one process instead of a process each (`--shared-process`). */
  sharedProcess?: boolean;
  /** Scenario 1 in worker processes: the earlier method, one conversation per sample after a forced full GC (`--forced-gc`). */
  forcedGc?: boolean;
}

export function parseBenchOptions(argv: readonly string[] = process.argv.slice(2)): BenchOptions {
  const options: BenchOptions = { quick: false };
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index];
    if (argument === "--quick") options.quick = true;
    else if (argument === "--shared-process") options.sharedProcess = true;
    else if (argument === "--forced-gc") options.forcedGc = true;
    else if (argument === "--json") {
      options.jsonPath = argv[++index];
      if (!options.jsonPath) throw new Error("--json needs a file path");
    } else throw new Error(`unknown option ${argument} (expected --quick, --shared-process, --forced-gc or --json <file>)`);
  }
  return options;
}

// ---- statistics ----

export interface Spread {
  median: number;
  min: number;
  max: number;
  count: number;
}

export function percentile(values: readonly number[], fraction: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const position = (sorted.length - 1) * fraction;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low] + (sorted[high] - sorted[low]) * (position - low);
}

export function spread(values: readonly number[]): Spread {
  return { median: percentile(values, 0.5), min: Math.min(...values), max: Math.max(...values), count: values.length };
}

/** `1.23` with a precision that suits the magnitude. */
export function format(value: number, digits?: number): string {
  if (!Number.isFinite(value)) return "–";
  const abs = Math.abs(value);
  const precision = digits ?? (abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3);
  return value.toFixed(precision);
}

/** `1.23 (1.10–1.50)`: median and min–max. */
export function formatSpread(value: Spread, digits?: number): string {
  return `${format(value.median, digits)} (${format(value.min, digits)}–${format(value.max, digits)})`;
}

// ---- garbage collection and clocks ----

let collect: (() => void) | undefined;

/** Full garbage collection, so one contestant's garbage is not collected on another's clock. */
export function collectGarbage(): void {
  if (!collect) {
    const exposed = (globalThis as { gc?: () => void }).gc;
    if (exposed) collect = exposed;
    else {
      setFlagsFromString("--expose-gc");
      collect = runInNewContext("gc") as () => void;
    }
  }
  collect();
}

/** Process CPU time (user + system, all threads) in milliseconds. */
export function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

export interface Sample {
  wallMs: number;
  cpuMs: number;
}

/** Runs `fn` once and measures its wall and CPU time. */
export async function measure(fn: () => Promise<void>): Promise<Sample> {
  const cpuStart = cpuMs();
  const wallStart = performance.now();
  await fn();
  const wallMs = performance.now() - wallStart;
  return { wallMs, cpuMs: cpuMs() - cpuStart };
}

export interface Entrant {
  name: string;
  /** One repetition. Must check its own output and throw when it is wrong. */
  run(): Promise<void>;
  /** One measured repetition, when the entrant measures itself (in a process of its own: isolated.ts). */
  measured?(): Promise<Sample>;
}

/**
 * Runs every entrant `warmup` times, then `repetitions` rounds in which each entrant runs once;
 * the order rotates every round so no entrant always follows the same one. A full garbage
 * collection precedes every measured run.
 */
export async function alternate(entrants: readonly Entrant[], options: { warmup: number; repetitions: number }): Promise<Map<string, Sample[]>> {
  for (let round = 0; round < options.warmup; round++) for (const entrant of entrants) await entrant.run();
  const samples = new Map<string, Sample[]>(entrants.map((entrant) => [entrant.name, []]));
  for (let round = 0; round < options.repetitions; round++) {
    for (let offset = 0; offset < entrants.length; offset++) {
      const entrant = entrants[(round + offset) % entrants.length];
      if (entrant.measured) {
        samples.get(entrant.name)!.push(await entrant.measured());
        continue;
      }
      collectGarbage();
      // Let the collector's background sweeping finish before the clock starts.
      await new Promise((resolve) => setTimeout(resolve, 5));
      samples.get(entrant.name)!.push(await measure(() => entrant.run()));
    }
  }
  return samples;
}

// ---- machine and reports ----

export interface MachineInfo {
  cpu: string;
  cores: number;
  memoryGb: number;
  node: string;
  kernel: string;
  /** 1-minute load average when the scenario started (others sharing the machine show here). */
  loadAverage: number;
}

export function machineInfo(): MachineInfo {
  const processors = cpus();
  return {
    cpu: processors[0]?.model.trim() ?? "unknown",
    cores: processors.length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    kernel: release(),
    loadAverage: Number(loadavg()[0].toFixed(2)),
  };
}

/** One cell of the summary table: a contestant's median for one metric. */
export interface SummaryRow {
  scenario: string;
  metric: string;
  /** Median by contestant name. */
  values: Record<string, number>;
  /** Which contestant the ratio column divides agentloop by (default `raw-fetch`). */
  ratioTo?: string;
  target?: string;
  /** Whether agentloop met the target (undefined: no target or not measured). */
  met?: boolean;
}

export interface ScenarioReport {
  id: string;
  title: string;
  machine: MachineInfo;
  quick: boolean;
  /** Detailed tables (markdown), with min–max spreads. */
  details: string[];
  summary: SummaryRow[];
  notes: string[];
}

export function markdownTable(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** Prints a scenario's report and writes it as JSON when `--json` asked for it. */
export function publish(report: ScenarioReport, options: BenchOptions): void {
  console.log(`\n## ${report.title}${report.quick ? " (quick)" : ""}\n`);
  for (const detail of report.details) console.log(`${detail}\n`);
  for (const note of report.notes) console.log(`- ${note}`);
  if (options.jsonPath) writeFileSync(options.jsonPath, JSON.stringify(report, null, 2));
}

/** Runs a scenario's main when its file is the entry point. */
export function isMain(metaUrl: string): boolean {
  const entry = process.argv[1];
  return entry !== undefined && metaUrl === pathToFileURL(resolve(entry)).href;
}

/** `callgrind_control <option>` on this process (running under valgrind's callgrind): `--instr=on`, `--zero`, `--dump`. */
export function callgrindControlSelf(option: string): void {
  const result = spawnSync("callgrind_control", [option, String(process.pid)], { encoding: "utf8" });
  if (result.status !== 0 || !result.stdout.includes("OK")) throw new Error(`callgrind_control ${option}: ${result.stdout}${result.stderr}`);
}
