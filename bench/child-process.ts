// Starting the benchmark's helper processes (mock provider, servers) and reading their facts.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeBundleOptions } from "../scripts/esbuild-node.mjs";

/**
 * The bench folder. A bundled scenario (see `bundle`) runs from the cache folder, where its own
 * URL says nothing about where the bench files are: `run-all.ts` tells it (`AGENTLOOP_BENCH_DIR`).
 */
const BENCH_DIR = process.env.AGENTLOOP_BENCH_DIR ?? fileURLToPath(new URL(".", import.meta.url));
const CACHE = join(BENCH_DIR, "../node_modules/.cache/agentloop-bench/");

/** The absolute path of a file of the bench folder. */
export function benchFile(name: string): string {
  return join(BENCH_DIR, name);
}

/**
 * Bundles a TypeScript entry point to plain JavaScript (esbuild, which tsx already brings), so
 * the child runs without a TypeScript loader and its RSS is the program's own. Packages stay
 * external; the bundle lives under node_modules/.cache so they resolve as usual.
 */
export function bundle(entry: string): Promise<string> {
  // Once per entry and process: the contestants' workers share one bundle.
  let built = bundles.get(entry);
  if (!built) {
    built = bundleOnce(entry);
    bundles.set(entry, built);
  }
  return built;
}

const bundles = new Map<string, Promise<string>>();

async function bundleOnce(entry: string): Promise<string> {
  const { build } = await import("esbuild");
  const name = entry.split("/").pop()!.replace(/\.ts$/, "");
  // Code splitting keeps every dynamic import() lazy (its own chunk), as in the compiled package,
  // so modules the program loads only on demand do not count in its RSS.
  const outdir = `${CACHE}${name}`;
  // No source-import-meta plugin here: a bench child's entry checks that import.meta.url is the file node ran.
  await build({ ...nodeBundleOptions, plugins: [], entryPoints: [entry], outdir, logLevel: "error" });
  return `${outdir}/${name}.mjs`;
}

export interface ChildHandle {
  pid: number;
  /** The port it printed (`listening on <port>`). */
  port: number;
  /** The pid the child printed after the port (`pid <pid>`), else the spawned process's. */
  ownPid: number;
  /** Ends the child by closing its stdin (its lifeline); resolves when it exited. */
  close(): Promise<void>;
  /** Writes `line` to the child's stdin and resolves with the next line it prints (see `announce`'s `gc`). */
  ask(line: string): Promise<string>;
}

/**
 * Starts `entry` (a bench/*.ts file) with `args` and waits for it to print `listening on <port>`.
 * The child must exit when its stdin closes, so it never outlives this process.
 */
export async function startChild(
  entry: string,
  args: readonly string[] = [],
  env: Record<string, string> = {},
  /** A command that runs node (e.g. `["valgrind", "--tool=callgrind"]`), and node options of its own. */
  wrap: { prefix?: readonly string[]; nodeArgs?: readonly string[] } = {},
): Promise<ChildHandle> {
  const script = await bundle(benchFile(entry));
  // BENCH_CHILD_NODE_ARGS: node options for the children only (e.g. `--max-semi-space-size=8`), to compare.
  const nodeArgs = [...(process.env.BENCH_CHILD_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== ""), ...(wrap.nodeArgs ?? [])];
  const [command, ...prefix] = [...(wrap.prefix ?? []), process.execPath];
  const child: ChildProcess = spawn(command, [...prefix, ...nodeArgs, script, ...args], { stdio: ["pipe", "pipe", "inherit"], env: { ...process.env, ...env } });
  let ownPid = child.pid ?? -1;
  const port = await new Promise<number>((resolve, reject) => {
    let output = "";
    const onData = (data: Buffer) => {
      output += data.toString("utf8");
      const match = /listening on (\d+)(?: pid (\d+))?\n/.exec(output);
      if (match) {
        child.stdout?.off("data", onData);
        if (match[2]) ownPid = Number(match[2]);
        resolve(Number(match[1]));
      }
    };
    child.stdout?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`${entry} exited with code ${code} before listening: ${output}`)));
    child.once("error", reject);
  });
  return {
    pid: child.pid ?? -1,
    port,
    ownPid,
    ask: (line) =>
      new Promise<string>((resolve, reject) => {
        let output = "";
        const onData = (data: Buffer) => {
          output += data.toString("utf8");
          const end = output.indexOf("\n");
          if (end < 0) return;
          child.stdout?.off("data", onData);
          child.off("exit", onExit);
          resolve(output.slice(0, end));
        };
        const onExit = (code: number | null) => reject(new Error(`${entry} exited with code ${code} before answering "${line}"`));
        child.stdout?.on("data", onData);
        child.once("exit", onExit);
        child.stdin?.write(`${line}\n`);
      }),
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.stdin?.end();
      }),
  };
}

/** Resident set size of a process in MB (`VmRSS`, or `VmHWM` for its peak). */
export function memoryMb(pid: number, field: "VmRSS" | "VmHWM" = "VmRSS"): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** CPU time (user + system) of a process in ms, from /proc (clock ticks of 10 ms). */
export function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU time of a process's main thread (its JavaScript thread) in ms: the scheduler's count in ns (/proc schedstat), not 10 ms ticks. */
export function mainThreadCpuMs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
}
