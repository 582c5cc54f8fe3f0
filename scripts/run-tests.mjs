// Runs every *.test.ts under src/ and test/ with node's test runner.
// Usage: node scripts/run-tests.mjs [--checks] [filter-substring ...]
//
// Through tsx, every test process and every CLI child it starts pays ~0.6–1 s of CPU for the loader
// and for compiling the sources it imports (more on a fresh machine, whose tsx cache is cold): on
// the 2-core CI machine that was a third of the suite. So the runner compiles once, at the start of
// every run (never reused: a stale build is impossible), with esbuild, into a folder of its own under
// node_modules/.cache (where the bundles' imports of npm packages resolve):
// - every test file, bundled (npm packages stay external; code splitting keeps lazy import()s lazy
//   and shares the sources' chunks between test files), run as plain node with source maps;
// - src/cli/main.ts, for the tests that start the CLI as a child process (AGENTLOOP_TEST_CLI).
// A module's `import.meta.url` (and .dirname, .filename) keeps naming its source file, so fixtures
// next to a test are found.
// AGENTLOOP_TEST_TSX=1 runs the sources through tsx instead (as does a failed build, which says so).
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { nodeBundleOptions } from "./esbuild-node.mjs";

function find(dir, out = []) {
  let entries = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    if (name === "node_modules") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) find(path, out);
    else if (name.endsWith(".test.ts")) out.push(path);
  }
  return out;
}

const ROOT = resolve(".");
const CACHE = resolve("node_modules/.cache/agentloop-test");

/** Compiles the CLI and the test files for this run; returns their paths, or undefined (with the reason printed) to use tsx. */
async function compile(testFiles) {
  // Folders left by runs that were killed (a live run's folder is younger than a day).
  try {
    for (const name of readdirSync(CACHE)) {
      const path = join(CACHE, name);
      if (Date.now() - statSync(path).mtimeMs > 86_400_000) rmSync(path, { recursive: true, force: true });
    }
  } catch {}
  const outdir = join(CACHE, `run-${process.pid}-${Date.now()}`);
  try {
    const { build } = await import("esbuild");
    mkdirSync(outdir, { recursive: true });
    const started = performance.now();
    await Promise.all([
      build({ ...nodeBundleOptions, entryPoints: ["src/cli/main.ts"], outdir: join(outdir, "cli") }),
      build({ ...nodeBundleOptions, entryPoints: testFiles, outdir: join(outdir, "tests"), outbase: ROOT, sourcemap: "linked" }),
    ]);
    console.log(`# sources compiled with esbuild for this run (${Math.round(performance.now() - started)} ms): test files and CLI children run as plain node`);
    return {
      outdir,
      cli: join(outdir, "cli", "main.mjs"),
      tests: testFiles.map((file) => join(outdir, "tests", relative(ROOT, file).replace(/\.ts$/, ".mjs"))),
    };
  } catch (error) {
    rmSync(outdir, { recursive: true, force: true });
    console.log(`# sources through tsx (the esbuild build failed: ${String(error?.message ?? error).split("\n")[0]})`);
    return undefined;
  }
}

/**
 * Files that start child processes (the CLI, MCP servers, DBOS) run longest; they start first, so
 * the run does not end with one of them alone on the machine. The weight is how often a file starts
 * a process or a server, read from its source.
 */
const STARTS = /\b(?:spawnCli|runCli|cliArgs|tsChild|spawn|spawnSync|execFile|connectMcp|everythingStdio|startEverythingHttp|durableAgent|serve)\(/g;
function weightOf(file) {
  return readFileSync(file, "utf8").match(STARTS)?.length ?? 0;
}
function byWeight(files) {
  const weight = new Map(files.map((file) => [file, weightOf(file)]));
  return [...files].sort((a, b) => weight.get(b) - weight.get(a));
}

/**
 * A test process costs ~0.2–0.5 s of CPU before its first test (node, the test runner, the modules
 * the file imports: the validator, the SDKs, the loop), and most files are small: a hundred such
 * processes were a third of the suite's CPU. So the files that need nothing of their own process
 * run several to a process ("groups": one entry importing them, their tests one after another),
 * while a file runs alone when it starts processes or servers (weight above), changes process-wide
 * state (the environment, a global OpenTelemetry provider, process handlers, the working folder, mock
 * timers), uses DBOS (one per process), measures time closely, or says so with the comment
 * `agentloop-test: own process`.
 */
const OWN_PROCESS =
  /agentloop-test: own process|process\.env\.[A-Za-z_]+ =|process\.env\[[^\]]+\] =|Object\.assign\(process\.env|setGlobal|registerGlobal|\.register\(|mock\.timers|process\.on\(|process\.once\(|process\.chdir|process\.exitCode|@dbos-inc|durable/;
const GROUPS = 6;

/** Splits the files into those that run alone and groups (each a list of files) of similar size. */
function grouped(files) {
  const alone = [];
  const groupable = [];
  for (const file of files) {
    const source = readFileSync(file, "utf8");
    if (weightOf(file) > 0 || OWN_PROCESS.test(source) || file.includes("durable")) alone.push(file);
    else groupable.push({ file, size: source.length });
  }
  if (groupable.length < 4) return { alone: files, groups: [] };
  const groups = Array.from({ length: Math.min(GROUPS, Math.ceil(groupable.length / 4)) }, () => ({ files: [], size: 0 }));
  // The largest file first into the smallest group: groups of about equal length.
  for (const { file, size } of groupable.sort((a, b) => b.size - a.size)) {
    const smallest = groups.reduce((a, b) => (b.size < a.size ? b : a));
    smallest.files.push(file);
    smallest.size += size;
  }
  return { alone, groups: groups.map((group) => group.files.sort()) };
}

/** Writes one entry per group (importing its files) into `dir`; returns their paths. */
function writeGroupEntries(groups, dir) {
  mkdirSync(dir, { recursive: true });
  return groups.map((files, index) => {
    const entry = join(dir, `group-${index + 1}.test.ts`);
    const imports = files.map((file) => `import ${JSON.stringify(resolve(file))};`).join("\n");
    writeFileSync(entry, `// The test files of group ${index + 1} (scripts/run-tests.mjs), in one process.\n${imports}\n`);
    return entry;
  });
}

const args = process.argv.slice(2);
const withChecks = args.includes("--checks");
const filters = args.filter((arg) => arg !== "--checks");
const matched = [...find("src"), ...find("test")].filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)));
if (matched.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}
// The files that start processes first, then the groups (each runs ~10 s), then the rest.
const { alone, groups } = grouped(matched);
const entriesDir = join(CACHE, `groups-${process.pid}-${Date.now()}`);
const sorted = byWeight(alone);
const heavy = sorted.filter((file) => weightOf(file) >= 3);
const files = [...heavy, ...writeGroupEntries(groups, entriesDir), ...sorted.slice(heavy.length)];
if (groups.length > 0) console.log(`# ${alone.length} test files in a process each, ${matched.length - alone.length} in ${groups.length} shared processes`);

/** Runs a command; resolves with its exit status and (when `capture`) its output. */
function run(command, commandArgs, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, commandArgs, { stdio: options.capture ? ["ignore", "pipe", "pipe"] : "inherit", env: options.env ?? process.env });
    let output = "";
    child.stdout?.on("data", (chunk) => (output += chunk));
    child.stderr?.on("data", (chunk) => (output += chunk));
    child.on("error", (error) => resolve({ status: 1, output: `${output}${error.message}\n` }));
    child.on("close", (code, signal) => resolve({ status: code ?? (signal ? 1 : 0), output }));
  });
}

// --checks (npm test): the type-check and the lint run beside the tests, at a lower CPU priority, so
// they use the moments the tests wait on their child processes; their output comes after the tests'.
const checks = withChecks
  ? [
      { name: "type-check (tsc)", done: run("nice", ["-n", "10", process.execPath, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json", "--noEmit"], { capture: true }) },
      { name: "lint (biome check)", done: run("nice", ["-n", "10", "node_modules/@biomejs/biome/bin/biome", "check", "."], { capture: true }) },
    ]
  : [];

const built = process.env.AGENTLOOP_TEST_TSX === "1" ? undefined : await compile(files);
const env = { ...process.env };
delete env.AGENTLOOP_TEST_CLI;
if (built) env.AGENTLOOP_TEST_CLI = built.cli;
// AGENTLOOP_TEST_TIMES=<file>: also write each file's time there (scripts/file-times-reporter.mjs).
const reporters = process.env.AGENTLOOP_TEST_TIMES
  ? ["--test-reporter=spec", "--test-reporter-destination=stdout", "--test-reporter=./scripts/file-times-reporter.mjs", `--test-reporter-destination=${process.env.AGENTLOOP_TEST_TIMES}`]
  : [];
const runner = built ? ["--enable-source-maps"] : ["--import", "tsx"];
let status = 1;
try {
  const tests = await run(process.execPath, [...runner, "--test", "--test-concurrency=4", "--test-timeout=300000", ...reporters, ...(built?.tests ?? files)], { env });
  status = tests.status;
} finally {
  if (built) rmSync(built.outdir, { recursive: true, force: true });
  rmSync(entriesDir, { recursive: true, force: true });
}
for (const check of checks) {
  const { status: checkStatus, output } = await check.done;
  console.log(`\n# ${check.name}: ${checkStatus === 0 ? "passed" : "FAILED"}`);
  if (checkStatus !== 0 || output.trim()) console.log(output.trimEnd());
  if (checkStatus !== 0) status ||= checkStatus;
}
process.exit(status);
