// Runs every *.test.ts under src/ and test/ with node's test runner.
// Usage: node scripts/run-tests.mjs [--checks] [filter-substring ...]
// The packed-tarball test (test/package/tarball.test.ts: a tsc build, `npm pack` and an npm install,
// a minute or more of a 2-core machine) runs only when a filter names it: `npm run test:package`,
// which .ci/run runs after `npm test`, so `npm test` stays within its 3 minutes.
//
// Through tsx, every test process and every CLI child it starts pays ~0.6–1 s of CPU for the loader
// and for compiling the sources it imports (more on a fresh machine, whose tsx cache is cold): on
// the 2-core CI machine that was a third of the suite. So the runner compiles once, at the start of
// every run (never reused: a stale build is impossible), with esbuild, into a folder of its own under
// node_modules/.cache (where the bundles' imports of npm packages resolve):
// - every test file, bundled (npm packages stay external; code splitting keeps lazy import()s lazy
//   and shares the sources' chunks between test files), run as plain node with source maps;
// - src/cli/main.ts, for the tests that start the CLI as a child process (AGENTLOOP_TEST_CLI), with
//   the npm packages of its common paths bundled in (cliBundleOptions in scripts/esbuild-node.mjs);
// - the MCP servers the tests start, each into one file with its npm packages (AGENTLOOP_TEST_MCP_SERVERS,
//   scripts/mcp-test-servers.mjs).
// A module's `import.meta.url` (and .dirname, .filename) keeps naming its source file, so fixtures
// next to a test are found.
// AGENTLOOP_TEST_TSX=1 runs the sources through tsx instead (as does a failed build, which says so).
//
// AGENTLOOP_TEST_TIMELINE=<file> records the run's timeline there (scripts/record-duration.mjs, loaded
// into every test process: its start, end, own CPU and its finished children's; every test's duration
// from the summary reporter) and prints what bounds the run's wall time after the summary: the files
// still running once the last has started, and the files whose wall most exceeds their CPU (waits:
// timers, polls, child processes starting, or a loaded machine) with their longest tests, which in a
// file run one after another (scripts/test-timeline.mjs; `node scripts/test-timeline.mjs <file>`
// prints a saved one). Before each run, the cache folders that killed runs and test processes left
// behind (their process gone) are removed (scripts/test-cache.mjs).
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { cliBundleOptions, nodeBundleOptions } from "./esbuild-node.mjs";
import { buildMcpTestServers } from "./mcp-test-servers.mjs";
import { removeLeftovers } from "./test-cache.mjs";
import { formatSummary } from "./test-summary-reporter.mjs";

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

/** Where a test file's bundle goes, below the run's `tests` folder: `<rank>/<path>` without the extension. */
function outName(file, rank) {
  return `${String(rank).padStart(3, "0")}/${relative(ROOT, file).replace(/\.ts$/, "")}`;
}

/** Compiles the CLI and the test files for this run; returns their paths, or undefined (with the reason printed) to use tsx. */
async function compile(testFiles) {
  const outdir = join(CACHE, `run-${process.pid}-${Date.now()}`);
  try {
    const { build } = await import("esbuild");
    mkdirSync(outdir, { recursive: true });
    const started = performance.now();
    const [mcpServers] = await Promise.all([
      // The MCP servers the tests start, each bundled into one file (~half their start's CPU;
      // scripts/mcp-test-servers.mjs). If that build fails, the tests start them from their sources.
      buildMcpTestServers(join(outdir, "mcp-servers")).then(
        () => join(outdir, "mcp-servers"),
        (error) => console.log(`# MCP test servers from their sources (their esbuild build failed: ${String(error?.message ?? error).split("\n")[0]})`),
      ),
      build({ ...cliBundleOptions(), entryPoints: ["src/cli/main.ts"], outdir: join(outdir, "cli") }),
      // The studio page, for the servers the tests start (AGENTLOOP_STUDIO_ASSETS).
      import("./build-studio.mjs").then(({ buildStudio }) => buildStudio(join(outdir, "studio"), { minify: false })),
      // node --test runs its files in the order of their paths: a rank in front keeps ours.
      build({ ...nodeBundleOptions, entryPoints: testFiles.map((file, rank) => ({ in: file, out: outName(file, rank) })), outdir: join(outdir, "tests"), sourcemap: "linked" }),
    ]);
    console.log(`# sources compiled with esbuild for this run (${Math.round(performance.now() - started)} ms): test files and CLI children run as plain node`);
    return {
      outdir,
      cli: join(outdir, "cli", "main.mjs"),
      studio: join(outdir, "studio"),
      mcpServers,
      tests: testFiles.map((file, rank) => join(outdir, "tests", `${outName(file, rank)}.mjs`)),
    };
  } catch (error) {
    rmSync(outdir, { recursive: true, force: true });
    console.log(`# sources through tsx (the esbuild build failed: ${String(error?.message ?? error).split("\n")[0]})`);
    return undefined;
  }
}

/**
 * The files run longest first (the longest-processing-time rule), so the run does not end with one
 * long file alone on the machine. A file's length is its process's wall time in
 * scripts/test-durations.txt (`AGENTLOOP_TEST_TIMES=scripts/test-durations.txt npm test` refreshes it,
 * through scripts/record-duration.mjs); a file not listed there is guessed from how often it starts a
 * process or a server.
 */
const STARTS = /\b(?:spawnCli|runCli|cliArgs|tsChild|spawn|spawnSync|execFile|connectMcp|everythingStdio|startEverythingHttp|durableAgent|serve)\(/g;
const sources = new Map();
/** A test file's source, read once. */
function sourceOf(file) {
  let source = sources.get(file);
  if (source === undefined) sources.set(file, (source = readFileSync(file, "utf8")));
  return source;
}
function weightOf(file) {
  return sourceOf(file).match(STARTS)?.length ?? 0;
}
const recorded = new Map();
try {
  for (const line of readFileSync("scripts/test-durations.txt", "utf8").split("\n")) {
    const [seconds, file] = line.split("\t");
    if (file) recorded.set(file, Math.max(recorded.get(file) ?? 0, Number(seconds)));
  }
} catch {}
function lengthOf(file) {
  return recorded.get(relative(ROOT, file)) ?? 1 + 2 * weightOf(file);
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

/** Splits the files into those that run alone and groups (each a list of files) of about equal length. */
function grouped(files) {
  const alone = [];
  const groupable = [];
  for (const file of files) {
    if (weightOf(file) > 0 || OWN_PROCESS.test(sourceOf(file))) alone.push(file);
    else groupable.push({ file, length: recorded.get(relative(ROOT, file)) ?? 1 });
  }
  // AGENTLOOP_TEST_GROUPS=0: every file in its own process (to tell whether a failure comes from sharing one).
  if (groupable.length < 4 || process.env.AGENTLOOP_TEST_GROUPS === "0") return { alone: files, groups: [] };
  const groups = Array.from({ length: Math.min(GROUPS, Math.ceil(groupable.length / 4)) }, () => ({ files: [], length: 0 }));
  // The longest file first into the shortest group.
  for (const { file, length } of groupable.sort((a, b) => b.length - a.length)) {
    const shortest = groups.reduce((a, b) => (b.length < a.length ? b : a));
    shortest.files.push(file);
    shortest.length += length;
  }
  // A file alone pays ~1 s to start a process; in a group its tests take about half their time alone.
  return { alone, groups: groups.map((group) => ({ files: group.files.sort(), length: group.length / 2 })) };
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

/** A test file's path as the reader knows it: a bundled file's source (`<rank>/<path>.mjs`), or a group's entry. */
function displayName(file) {
  const path = relative(ROOT, file.startsWith("file:") ? new URL(file).pathname : file);
  const bundled = /agentloop-test\/run-[^/]+\/tests\/\d+\/(.+)\.mjs$/.exec(file);
  if (bundled) return `${bundled[1]}.ts`;
  const group = /groups-[^/]+\/(group-\d+)\.test\.ts$/.exec(file);
  if (group) return `${group[1]} (${groups[Number(group[1].slice(6)) - 1]?.files.length ?? "?"} files in one process)`;
  return path;
}

const args = process.argv.slice(2);
const withChecks = args.includes("--checks");
const filters = args.filter((arg) => arg !== "--checks");
const ONLY_WHEN_NAMED = ["test/package/tarball.test.ts", "test/package/mutation-stop-stryker.test.ts"];
const matched = [...find("src"), ...find("test")].filter((file) =>
  filters.length === 0 ? !ONLY_WHEN_NAMED.some((slow) => file.endsWith(slow)) : filters.some((f) => file.includes(f)),
);
if (matched.length === 0) {
  console.error("no test files matched");
  process.exit(1);
}
const { alone, groups } = grouped(matched);
const entriesDir = join(CACHE, `groups-${process.pid}-${Date.now()}`);
const files = [
  ...alone.map((file) => ({ file, length: lengthOf(file) })),
  ...writeGroupEntries(groups.map((group) => group.files), entriesDir).map((file, index) => ({ file, length: groups[index].length })),
]
  .sort((a, b) => b.length - a.length)
  .map(({ file }) => file);
if (groups.length > 0) console.log(`# ${alone.length} test files in a process each, ${matched.length - alone.length} in ${groups.length} shared processes`);

/** A test process's or test event's file as record-duration.mjs names it: a bundle's source, or `group-<n>`. */
function timelineName(file) {
  const path = file.startsWith("file:") ? new URL(file).pathname : file;
  const bundled = /agentloop-test\/run-[^/]+\/tests\/\d+\/(.+)\.mjs$/.exec(path);
  if (bundled) return `${bundled[1]}.ts`;
  const group = /groups-[^/]+\/(group-\d+)\.test\.ts$/.exec(path);
  return group ? group[1] : relative(ROOT, path);
}

/** Writes the run's timeline (JSON) to `out`, from the processes' rows and the summary's durations; prints what bounds the run. */
async function writeTimeline(out, rowsFile, summary) {
  let processes = [];
  try {
    processes = readFileSync(rowsFile, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line));
  } catch {}
  for (const row of processes) {
    const group = /^group-(\d+)$/.exec(row.file);
    if (group) row.files = (groups[Number(group[1]) - 1]?.files ?? []).map((file) => relative(ROOT, file));
  }
  const tests = (summary?.durations ?? []).map((test) => ({ ...test, file: timelineName(test.file) }));
  const data = { concurrency: Number(process.env.AGENTLOOP_TEST_CONCURRENCY ?? 4), processes, tests };
  writeFileSync(out, `${JSON.stringify(data, null, 1)}\n`);
  const { formatTimeline } = await import("./test-timeline.mjs");
  timelineText = `${formatTimeline(data)}\n# (the timeline: ${relative(ROOT, out)})`;
}
let timelineText = "";

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

// --checks: the type-check and the lint run beside the tests, at a lower CPU priority, so
// they use the moments the tests wait on their child processes; their output comes after the tests'.
const checks = withChecks
  ? [
      { name: "type-check (tsc)", done: run("nice", ["-n", "10", process.execPath, "node_modules/typescript/bin/tsc", "-p", "tsconfig.json", "--noEmit"], { capture: true }) },
      { name: "lint (biome check)", done: run("nice", ["-n", "10", "node_modules/@biomejs/biome/bin/biome", "check", "."], { capture: true }) },
    ]
  : [];

removeLeftovers(CACHE);
const built = process.env.AGENTLOOP_TEST_TSX === "1" ? undefined : await compile(files);
const env = { ...process.env };
delete env.AGENTLOOP_TEST_CLI;
if (built) env.AGENTLOOP_TEST_CLI = built.cli;
delete env.AGENTLOOP_TEST_MCP_SERVERS;
if (built) env.AGENTLOOP_STUDIO_ASSETS = built.studio;
if (built?.mcpServers) env.AGENTLOOP_TEST_MCP_SERVERS = built.mcpServers;
// AGENTLOOP_TEST_TIMES=<file>: also write each test process's wall time there, longest first
// (scripts/record-duration.mjs; as scripts/test-durations.txt it orders the next runs).
const times = process.env.AGENTLOOP_TEST_TIMES ? resolve(process.env.AGENTLOOP_TEST_TIMES) : undefined;
let previousTimes = "";
if (times) {
  try {
    previousTimes = readFileSync(times, "utf8");
  } catch {}
  writeFileSync(times, "");
  env.AGENTLOOP_TEST_TIMES = times;
}
// AGENTLOOP_TEST_TIMELINE=<file>: the run's timeline there as JSON (each test process's start, end and
// CPU, scripts/record-duration.mjs; every test's duration), and what bounds the run's wall time printed
// after the summary (scripts/test-timeline.mjs).
const timeline = process.env.AGENTLOOP_TEST_TIMELINE ? resolve(process.env.AGENTLOOP_TEST_TIMELINE) : undefined;
const timelineRows = join(entriesDir, "timeline.jsonl");
if (timeline) env.AGENTLOOP_TEST_TIMELINE = timelineRows;
const runner = [...(built ? ["--enable-source-maps"] : ["--import", "tsx"]), ...(times || timeline ? ["--import", "./scripts/record-duration.mjs"] : [])];
// Node's own report as it runs (spec on a terminal, TAP otherwise, as node --test chooses), and a
// summary (scripts/test-summary-reporter.mjs) into a file, printed after the run.
mkdirSync(entriesDir, { recursive: true });
const summaryFile = join(entriesDir, "summary.json");
const reporters = [
  `--test-reporter=${process.stdout.isTTY ? "spec" : "tap"}`,
  "--test-reporter-destination=stdout",
  `--test-reporter=${new URL("./test-summary-reporter.mjs", import.meta.url).href}`,
  `--test-reporter-destination=${summaryFile}`,
];
const started = performance.now();
let status = 1;
let summary;
try {
  const tests = await run(process.execPath, [...runner, "--test", ...reporters, `--test-concurrency=${process.env.AGENTLOOP_TEST_CONCURRENCY ?? 4}`, "--test-timeout=300000", ...(built?.tests ?? files)], { env });
  status = tests.status;
  try {
    summary = JSON.parse(readFileSync(summaryFile, "utf8"));
  } catch {}
  if (timeline) await writeTimeline(timeline, timelineRows, summary);
} finally {
  if (built) rmSync(built.outdir, { recursive: true, force: true });
  rmSync(entriesDir, { recursive: true, force: true });
}
console.log(`\n${formatSummary(summary, { seconds: (performance.now() - started) / 1000, files: matched.length, status, name: displayName })}`);
if (timelineText) console.log(timelineText);
if (times) {
  // This run's times, and the earlier ones of files it did not run alone (a group's files, filtered out).
  const rows = new Map();
  for (const line of `${previousTimes}\n${readFileSync(times, "utf8")}`.split("\n")) {
    const [seconds, file] = line.split("\t");
    if (file) rows.set(file, seconds);
  }
  const sorted = [...rows].sort((a, b) => Number(b[1]) - Number(a[1]));
  writeFileSync(times, sorted.map(([file, seconds]) => `${seconds}\t${file}\n`).join(""));
}
for (const check of checks) {
  const { status: checkStatus, output } = await check.done;
  console.log(`\n# ${check.name}: ${checkStatus === 0 ? "passed" : "FAILED"}`);
  if (checkStatus !== 0 || output.trim()) console.log(output.trimEnd());
  if (checkStatus !== 0) status ||= checkStatus;
}
process.exit(status);
