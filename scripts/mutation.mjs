// Mutation testing with StrykerJS: `npm run mutation [-- <folder or file> ...] [options]`.
//
//   npm run mutation                         every folder below (one Stryker run each, in turn)
//   npm run mutation -- src/coding           one folder; src/coding/patch.ts: one file
//   npm run mutation -- --since main         only the files changed since a git ref (committed or not)
//   npm run mutation -- --incremental        reuse the last run's results where neither the mutant's
//                                            code nor its tests changed (reports/mutation/*.incremental.json;
//                                            when there is none, as in a fresh clone, the committed baseline
//                                            scripts/mutation/baseline/*.incremental.json.gz is unpacked there first)
//   --concurrency N (default 1)              test processes at once
//   --runner agentloop|tap (default agentloop) see below
//   --tests <test file or glob>              (repeatable) only these candidate tests, not the folder's:
//                                            quicker, and the score a lower bound
//   --list                                   print what would be mutated, run nothing
//   npm run mutation -- --report [reports or folders] [--markdown]
//                                            the score per folder and file merged from Stryker JSON
//                                            reports (default reports/mutation; scripts/mutation/scores.mjs)
//   npm run mutation -- --confirm <report.json> [--out <path>] [--mutant <id> ...] [<source file> ...]
//                                            re-checks a report's survivors in new processes, writes the
//                                            corrected verdicts (scripts/mutation/confirm.mjs)
//   npm run mutation -- --baseline <reports or folders>
//                                            writes the committed baseline, one incremental file per folder,
//                                            merged from those reports (scripts/mutation/baseline.mjs)
//
// Stryker (@stryker-mutator/core, its TAP runner) needs a newer node than the project's (20), so both
// and Node 24 (the npm registry's `node` package) are installed on first use into
// node_modules/.cache/agentloop-mutation/tools, at the versions pinned below; nothing of it is a
// dependency of the project, and `npm test` never runs it. Stryker runs at a low CPU priority (nice).
//
// How a mutant is tested: Stryker copies the repository into a sandbox and writes every mutant of the
// chosen files into it at once, each behind a switch read at run time (globalThis.__stryker__.activeMutant;
// the __STRYKER_ACTIVE_MUTANT__ environment variable for the processes the tests start). Stryker's first
// run records which tests reach each mutant; a mutant then runs only those. The default runner
// (--runner agentloop, scripts/mutation/stryker-runner.mjs) keeps one test process per test file
// alive across mutants, runs the selected tests again in it for each mutant, and sees the coverage
// of the node processes a test starts; --runner tap is the first runner (Stryker's TAP runner, a node
// process per mutant and test file, scripts/mutation/test-file.mjs), kept to compare verdicts with.
// A folder's candidate test files are listed in FOLDERS. docs/mutation.md says more.
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { gunzipSync } from "node:zlib";
import { dirname, join, relative, resolve } from "node:path";
import { environmentValue, stopRun, workingFolder } from "./mutation/process-tree.mjs";
import { markChangedParts, partsFileOf, recordParts } from "./mutation/test-parts.mjs";

const VERSIONS = { node: "24.21.0", stryker: "9.6.1" };

/** The folders measured, each with the test files that may kill its mutants (globs, repository-relative). */
const FOLDERS = {
  "src/coding": ["test/coding/**/*.test.ts", "test/cli/code.test.ts", "test/cli/coding-render.test.ts"],
  "src/mcp": ["test/mcp/**/*.test.ts", "test/prompty/mcp.test.ts"],
  "src/loop": ["test/loop/**/*.test.ts"],
  // The loop's shapes and the approval broker, below src/loop and src/tools: the loop's tests cover them.
  "src/contracts": ["test/loop/**/*.test.ts"],
  // The tests that run durable agents in the test process (DBOS launched once per file, each test's
  // runs its own: they run again in a warm worker) and the crash tests (child processes killed with
  // SIGKILL: the recovery promises). The serve/replica tests (test/durable/serve*, replicas, runs-cli,
  // fetch) test src/server's durable mode through replicas started once per file, a new process per
  // mutant: left out, so this folder's score is a lower bound of what the whole suite catches.
  "src/durable": [
    "test/durable/handle*.test.ts",
    "test/durable/approval*.test.ts",
    "test/durable/api.test.ts",
    "test/durable/durable.test.ts",
    "test/durable/example-crash.test.ts",
    "test/durable/mutation-*.test.ts",
  ],
  // All but start-postgres.test.ts, which tests scripts/start-postgres.sh, not src/memory, and fails in
  // Stryker's environment (its first run then stops the whole run). Globs here take no "!" exclusions.
  "src/memory": ["test/memory/[!s]*.test.ts", "test/memory/session-*.test.ts", "test/memory/stored-*.test.ts"],
  // The UI protocols' and the studio's routes are tested beside their clients (the browser test excepted: slow, and a page's view of the same routes).
  "src/server": ["test/server/**/*.test.ts", "test/ui/server.test.ts", "test/ui/client-tools.test.ts", "test/ui/endings.test.ts", "test/ui/wire-paths.test.ts", "test/studio/routes.test.ts"],
};
/** Files of those folders with nothing to mutate (re-exports only). */
const NOT_MUTATED = ["src/coding/index.ts", "src/durable/index.ts", "src/mcp/index.ts", "src/memory/index.ts", "src/server/index.ts"];

/** agentloop: test processes kept alive across mutants (scripts/mutation/stryker-runner.mjs); tap: a process per mutant and test file. */
const RUNNERS = ["agentloop", "tap"];

const ROOT = resolve(".");
const TOOLS = join(ROOT, "node_modules/.cache/agentloop-mutation/tools");
const REPORTS = join(ROOT, "reports/mutation");

function usage(message) {
  console.error(`npm run mutation: ${message}\nusage: npm run mutation -- [src/<folder>|src/<folder>/<file>.ts ...] [--since <git ref>] [--incremental] [--concurrency N] [--runner agentloop|tap] [--tests <test file or glob> ...] [--list]\n       npm run mutation -- --report [<report.json or folder> ...] [--markdown] [--survivors]\nfolders: ${Object.keys(FOLDERS).join(", ")}`);
  process.exit(2);
}

function parseArgs(argv) {
  const options = { targets: [], since: undefined, incremental: false, concurrency: 1, runner: "agentloop", tests: [] };
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index];
    if (arg === "--since") {
      options.since = argv[++index];
      if (!options.since) usage("--since needs a git ref (a branch, a tag, a commit)");
    } else if (arg === "--tests") {
      const glob = argv[++index];
      if (!glob) usage("--tests needs a test file or glob (repository-relative)");
      options.tests.push(glob);
    } else if (arg === "--incremental") options.incremental = true;
    else if (arg === "--list") options.list = true;
    else if (arg === "--runner") {
      options.runner = argv[++index];
      if (!RUNNERS.includes(options.runner)) usage(`--runner is one of ${RUNNERS.join(", ")}`);
    }
    else if (arg === "--concurrency") {
      options.concurrency = Number(argv[++index]);
      if (!Number.isInteger(options.concurrency) || options.concurrency < 1) usage("--concurrency needs a whole number ≥ 1");
    } else if (arg.startsWith("-")) usage(`unknown option ${arg}`);
    else options.targets.push(relative(ROOT, resolve(arg)));
  }
  return options;
}

/** Groups the chosen targets by folder: { folder → files to mutate (globs) }. */
function chooseFiles({ targets, since }) {
  const chosen = new Map();
  const wanted = targets.length > 0 ? targets : Object.keys(FOLDERS);
  for (const target of wanted) {
    const folder = Object.keys(FOLDERS).find((name) => target === name || target.startsWith(`${name}/`));
    if (!folder) usage(`${target} is not one of the measured folders or a file in one`);
    if (!existsSync(target)) usage(`${target} does not exist`);
    const files = chosen.get(folder) ?? [];
    files.push(target === folder ? `${folder}/**/*.ts` : target);
    chosen.set(folder, files);
  }
  if (since === undefined) return chosen;
  // --since: only the files changed since the ref (committed, staged, or not), within the chosen targets.
  let changed;
  try {
    const diff = execFileSync("git", ["diff", "--name-only", since, "--", "src"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const untracked = execFileSync("git", ["ls-files", "--others", "--exclude-standard", "--", "src"], { encoding: "utf8" });
    changed = `${diff}\n${untracked}`.split("\n").filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts") && existsSync(file));
  } catch (error) {
    usage(`git could not compare with ${since}: ${String(error.stderr ?? error.message).trim()}`);
  }
  const narrowed = new Map();
  for (const [folder, files] of chosen) {
    const inside = changed.filter((file) => files.some((target) => (target.endsWith("**/*.ts") ? file.startsWith(`${folder}/`) : file === target)));
    if (inside.length > 0) narrowed.set(folder, inside);
  }
  return narrowed;
}

/** Installs Node 24 and Stryker into the tools folder if they are not there yet; returns their paths. */
function tools() {
  const node = join(TOOLS, "node_modules/node/bin/node");
  const stryker = join(TOOLS, "node_modules/@stryker-mutator/core/bin/stryker.js");
  const installed = () => {
    try {
      const version = (name) => JSON.parse(readFileSync(join(TOOLS, "node_modules", name, "package.json"), "utf8")).version;
      return existsSync(node) && version("node") === VERSIONS.node && version("@stryker-mutator/core") === VERSIONS.stryker && version("@stryker-mutator/tap-runner") === VERSIONS.stryker;
    } catch {
      return false;
    }
  };
  if (!installed()) {
    console.log(`# installing node ${VERSIONS.node} and StrykerJS ${VERSIONS.stryker} into ${relative(ROOT, TOOLS)} (first use)`);
    mkdirSync(TOOLS, { recursive: true });
    // Its own package.json, so npm installs here and not into the project.
    if (!existsSync(join(TOOLS, "package.json"))) writeFileSync(join(TOOLS, "package.json"), '{ "name": "agentloop-mutation-tools", "private": true }\n');
    execFileSync(
      "npm",
      ["install", "--no-audit", "--no-fund", "--no-save", "--prefix", TOOLS, `node@${VERSIONS.node}`, `@stryker-mutator/core@${VERSIONS.stryker}`, `@stryker-mutator/tap-runner@${VERSIONS.stryker}`],
      { stdio: "inherit" },
    );
    if (!installed()) {
      console.error(`npm run mutation: the install into ${TOOLS} did not leave node ${VERSIONS.node} and Stryker ${VERSIONS.stryker} there`);
      process.exit(1);
    }
  }
  return { node, stryker };
}

/**
 * The candidate test files of a folder's run: the folder's (FOLDERS), or only those `--tests` names
 * (a quicker run whose score is a lower bound: a test left out might have detected a survivor).
 */
const testFilesOf = (folder, options) => (options.tests.length > 0 ? options.tests : FOLDERS[folder]);

/** The Stryker configuration of one folder's run. */
function configOf(folder, mutate, options) {
  const name = folder.replaceAll("/", "-");
  const testFiles = testFilesOf(folder, options);
  const runner =
    options.runner === "tap"
      ? { testRunner: "tap", tap: { testFiles, nodeArgs: ["--test-reporter=tap", "scripts/mutation/test-file.mjs"], forceBail: true } }
      : {
          testRunner: "agentloop",
          plugins: ["@stryker-mutator/*", join(ROOT, "scripts/mutation/stryker-runner.mjs")],
          // The runner times each of its test runs itself: past their first run × timeoutFactor + 2 s a run whose
          // processes are all asleep has hung, a working one gets until + agentloop.timeoutMS (stryker-runner.mjs's
          // budget); a mutant may need several runs (a kill confirmed, new processes), so Stryker's own timer is only a safety net.
          agentloop: { testFiles, timeoutMS: 8_000 },
          dryRunTimeoutMinutes: 60,
        };
  return {
    ...runner,
    coverageAnalysis: "perTest",
    mutate: [...mutate, "!**/*.test.ts", ...NOT_MUTATED.map((file) => `!${file}`)],
    concurrency: options.concurrency,
    // The TAP runner: a mutant's run taking longer than its tests' first run × 1.5 + 8 s is a timeout (an infinite
    // loop, a hang): Stryker counts it as detected. Enough slack for a shared machine without paying long for each.
    timeoutMS: options.runner === "tap" ? 8_000 : 600_000,
    timeoutFactor: 1.5,
    // The first run (every candidate test file, coverage recorded) of a folder with slow tests (src/durable's
    // DBOS runs on PostgreSQL) takes longer than Stryker's default 5 minutes on the shared machine.
    dryRunTimeoutMinutes: 30,
    // Nothing type-checks the sandbox (esbuild strips the types): no "// @ts-nocheck" added to every file (a fixture read by a test would show it).
    disableTypeChecks: false,
    // Outside the repository proper (a sandbox holds a copy of biome.json and tsconfig.json: biome would see a second root).
    tempDirName: "node_modules/.cache/agentloop-mutation/sandboxes",
    ignorePatterns: ["/bench", "/dist", "/reports", "/.exp", "/.agentloop", "/coverage", "/.mutation-build", "*.cpuprofile"],
    reporters: ["progress-append-only", "clear-text", "json", "html"],
    clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
    jsonReporter: { fileName: `reports/mutation/${name}.json` },
    htmlReporter: { fileName: `reports/mutation/${name}.html` },
    incremental: options.incremental,
    incrementalFile: `reports/mutation/${name}.incremental.json`,
    thresholds: { high: 90, low: 80, break: null },
    cleanTempDir: true,
  };
}

/** The score of a Stryker JSON report: killed (and timed out) over killed + survived + no coverage. */
function scoreOf(reportFile) {
  const counts = {};
  const report = JSON.parse(readFileSync(reportFile, "utf8"));
  for (const file of Object.values(report.files)) for (const mutant of file.mutants) counts[mutant.status] = (counts[mutant.status] ?? 0) + 1;
  const detected = (counts.Killed ?? 0) + (counts.Timeout ?? 0);
  const undetected = (counts.Survived ?? 0) + (counts.NoCoverage ?? 0);
  return { counts, score: detected + undetected === 0 ? 100 : (100 * detected) / (detected + undetected) };
}

/** The sandboxes and scratch folders of a run's processes (noted before they are killed: Stryker leaves them then). */
function leftovers(pids) {
  const folders = new Set();
  const sandboxes = join(ROOT, "node_modules/.cache/agentloop-mutation/sandboxes");
  for (const pid of pids) {
    const cwd = workingFolder(pid);
    if (cwd?.startsWith(`${sandboxes}/`)) folders.add(join(sandboxes, cwd.slice(sandboxes.length + 1).split("/")[0]));
    const scratch = environmentValue(pid, "AGENTLOOP_MUTATION_CHILD_DIR");
    if (scratch?.startsWith(tmpdir())) folders.add(scratch);
  }
  return folders;
}

const SIGNALS = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 };

/**
 * Runs Stryker (or, for the wrapper's own tests, AGENTLOOP_MUTATION_STRYKER: a script run in its place
 * under the current node, given the configuration file) in a process group of its own. Stopping this
 * script (Ctrl-C, SIGTERM, SIGHUP, or its parent gone: `npm run` killed) stops the whole run, every process
 * of it (scripts/mutation/process-tree.mjs), and removes the sandbox Stryker would have left.
 */
function runStryker(node, stryker, configFile) {
  const env = { ...process.env, PATH: `${join(TOOLS, "node_modules/node/bin")}:${process.env.PATH}` };
  delete env.AGENTLOOP_TEST_CLI;
  // Every process of the run inherits it (unless a test gives one an environment of its own): how they are found.
  const marker = `AGENTLOOP_MUTATION_RUN=${process.pid}-${Date.now()}`;
  env.AGENTLOOP_MUTATION_RUN = marker.split("=")[1];
  const standIn = process.env.AGENTLOOP_MUTATION_STRYKER;
  const command = standIn ? [process.execPath, standIn, configFile] : ["nice", "-n", "10", node, stryker, "run", configFile];
  return new Promise((resolveExit) => {
    const child = spawn(command[0], command.slice(1), { stdio: "inherit", env, detached: true });
    let stopping = false;
    const parent = process.ppid;
    const stop = async (reason) => {
      if (stopping) return;
      stopping = true;
      console.error(`\nnpm run mutation: stopping (${reason}): Stryker and every process of its run`);
      let folders = new Set();
      await stopRun(child.pid, marker, { beforeKill: (pids) => (folders = leftovers(pids)) });
      for (const folder of folders) rmSync(folder, { recursive: true, force: true });
      process.exit(128 + (SIGNALS[reason] ?? SIGNALS.SIGHUP));
    };
    for (const name of Object.keys(SIGNALS)) process.on(name, stop);
    // `npm run mutation` killed (its shell then too) leaves this script to init: stop as if signalled.
    const orphaned = setInterval(() => process.ppid !== parent && stop("the parent process is gone"), 250);
    child.on("error", (error) => {
      console.error(`npm run mutation: could not start Stryker: ${error.message}`);
      resolveExit(1);
    });
    child.on("close", (code, signal) => {
      if (stopping) return;
      clearInterval(orphaned);
      for (const name of Object.keys(SIGNALS)) process.off(name, stop);
      resolveExit(code ?? (signal ? 1 : 0));
    });
  });
}

if (process.argv.includes("--baseline")) {
  // The committed incremental baseline (scripts/mutation/baseline/), merged from earlier runs' JSON reports: nothing is run.
  const { main } = await import("./mutation/baseline.mjs");
  process.exit(main(process.argv.slice(2)));
}
if (process.argv.includes("--confirm")) {
  // An existing report's survivors checked again in new processes (scripts/mutation/confirm.mjs).
  const { main } = await import("./mutation/confirm.mjs");
  process.exit(await main(process.argv.slice(2)));
}
if (process.argv.includes("--report")) {
  // The scores of earlier runs, merged (a file's latest run counts): nothing is run.
  const { main } = await import("./mutation/scores.mjs");
  const rest = process.argv.slice(2).filter((arg) => arg !== "--report");
  process.exit(main(rest.some((arg) => !arg.startsWith("-")) ? rest : [...rest, REPORTS]));
}
const options = parseArgs(process.argv.slice(2));
const chosen = chooseFiles(options);
if (chosen.size === 0) {
  console.log(`# no source file of the measured folders changed since ${options.since}: nothing to mutate`);
  process.exit(0);
}
if (options.list) {
  for (const [folder, mutate] of chosen) console.log(`${folder}: ${mutate.join(" ")}`);
  process.exit(0);
}
// A stand-in for Stryker (AGENTLOOP_MUTATION_STRYKER, the wrapper's tests) needs neither the tools nor dist/.
const { node, stryker } = process.env.AGENTLOOP_MUTATION_STRYKER ? {} : tools();
// Tests that run the examples (test/durable/example-crash.test.ts) import the package by its name,
// which resolves to this repository's dist/: built once if missing (a fresh clone), as npm run build does.
if (!process.env.AGENTLOOP_MUTATION_STRYKER && !existsSync(join(ROOT, "dist/src/index.js"))) {
  console.log("# building dist/ (the examples' tests import the package by its name; first use)");
  execFileSync("npm", ["run", "build", "--silent"], { stdio: "inherit" });
}
mkdirSync(REPORTS, { recursive: true });
const rows = [];
let status = 0;
for (const [folder, mutate] of chosen) {
  const name = folder.replaceAll("/", "-");
  const configFile = join(ROOT, "node_modules/.cache/agentloop-mutation", `${name}.config.json`);
  mkdirSync(dirname(configFile), { recursive: true });
  // --incremental from a fresh clone: the committed baseline of a whole-folder run on main, if any, is
  // the "last run" (Stryker never writes the baseline itself: only reports/mutation/, which git ignores).
  const incrementalFile = join(REPORTS, `${name}.incremental.json`);
  const baseline = join(ROOT, "scripts/mutation/baseline", `${name}.incremental.json.gz`);
  if (options.incremental && !existsSync(incrementalFile) && existsSync(baseline)) {
    writeFileSync(incrementalFile, gunzipSync(readFileSync(baseline)));
    const baselineParts = join(ROOT, "scripts/mutation/baseline", `${name}.test-parts.json`);
    if (existsSync(baselineParts)) copyFileSync(baselineParts, partsFileOf(incrementalFile));
    console.log(`# ${folder}: no earlier run here; reusing the baseline ${relative(ROOT, baseline)}`);
  }
  // A test whose imported parts changed since the last run: Stryker sees only the test file itself (test-parts.mjs).
  if (options.incremental) {
    const marked = markChangedParts(ROOT, incrementalFile);
    if (marked.length > 0) console.log(`# ${folder}: ${marked.length} test file(s) whose imported parts changed since the last run, their results run again: ${marked.join(" ")}`);
  }
  writeFileSync(configFile, `${JSON.stringify(configOf(folder, mutate, options), null, 2)}\n`);
  console.log(`\n# ${folder}: mutating ${mutate.join(" ")} (tests: ${testFilesOf(folder, options).join(" ")})`);
  const started = Date.now();
  const exit = await runStryker(node, stryker, configFile);
  const minutes = (Date.now() - started) / 60_000;
  if (exit !== 0) {
    status = exit;
    rows.push(`${folder}\tStryker failed (exit ${exit}) after ${minutes.toFixed(1)} min`);
    continue;
  }
  if (options.incremental && existsSync(incrementalFile)) recordParts(ROOT, incrementalFile);
  const { counts, score } = scoreOf(join(ROOT, `reports/mutation/${folder.replaceAll("/", "-")}.json`));
  rows.push(`${folder}\t${score.toFixed(1)} %\t${minutes.toFixed(1)} min\t${JSON.stringify(counts)}`);
}
console.log(`\n# mutation score per folder (killed + timed out over all but ignored/compile errors), wall time\n${rows.join("\n")}`);
process.exit(status);
