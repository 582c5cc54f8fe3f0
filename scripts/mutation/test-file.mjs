// Runs one test file for StrykerJS's TAP runner, which scripts/mutation.mjs configures to start
//   node -r <stryker hook> --test-reporter=tap scripts/mutation/test-file.mjs <test file>
// in Stryker's sandbox (whose sources carry every mutant at once, each switched on by the
// __STRYKER_ACTIVE_MUTANT__ environment variable, which child processes inherit).
//
// As scripts/run-tests.mjs does for `npm test`, the test file is bundled with esbuild (npm packages
// external) and run as plain node, and so is the CLI the tests start as a child process
// (AGENTLOOP_TEST_CLI). The sandbox's sources do not change between mutants, so each bundle is built
// once per sandbox and reused by every mutant's run of that file.
//
// Test selection within a file (scripts/mutation/node-test-shim.mjs): the first run (Stryker's dry
// run, no mutant active) records which mutants each test of the file reaches; a
// mutant's run then runs only the units that reach it, or the whole file when the mutant is reached
// outside every unit (while loading, in a hook); a test that starts a node process (which may run
// the mutant: coverage is not seen across processes) is selected for every mutant. A unit that fails when run without the
// others (it needs an earlier one's state) must not count as a kill: when a selected run fails, the
// same selection is run once without the mutant (remembered per selection); if that fails too, the
// whole file is run with the mutant instead, and that run decides.
//
// The test runs in a child process of this one, with Stryker's hook; what it reports to the hook
// (coverage, hit counts) is handed to this process's hook, which Stryker reads.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { nodeBundleOptions } from "../esbuild-node.mjs";

const root = resolve(".");
const builds = join(root, ".mutation-build");
const shim = fileURLToPath(new URL("./node-test-shim.mjs", import.meta.url));
const namespace = process.env.STRYKER_NAMESPACE || "__stryker__";

function exists(path) {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}
function readJson(path, fallback) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return fallback;
  }
}
/** Writes aside, then renames into place: a reader never sees half a file. */
function writeJson(path, value) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.${process.pid}`, JSON.stringify(value));
  renameSync(`${path}.${process.pid}`, path);
}

/** node:test, for the test files (not for the shim itself), is the shim. */
const nodeTestShim = {
  name: "node-test-shim",
  setup(build) {
    build.onResolve({ filter: /^node:test$/ }, (args) => (args.importer === shim ? { path: "node:test", external: true } : { path: shim }));
  },
};

/**
 * `import "agentloop"` / `"agentloop/<x>"` (the examples) as tsconfig.json's `paths` map them, to
 * src/: the sandbox lies below node_modules, where esbuild applies no tsconfig.json, and the
 * package's own exports (dist/) are not in the sandbox (nor would they carry the mutants).
 */
const selfImport = {
  name: "agentloop-self-import",
  setup(build) {
    build.onResolve({ filter: /^agentloop(\/[\w-]+)?$/ }, (args) => {
      const path = join(root, "src", args.path === "agentloop" ? "index.ts" : `${args.path.slice("agentloop/".length)}/index.ts`);
      return exists(path) ? { path } : undefined;
    });
  },
};

/** Bundles `entry` into `.mutation-build/<name>/` once (a second worker finding it built reuses it); returns the bundle's path. */
async function bundled(entry, name, plugins = []) {
  const outdir = join(builds, name);
  const output = join(outdir, `${basename(entry).replace(/\.ts$/, "")}.mjs`);
  if (exists(output)) return output;
  const { build } = await import("esbuild");
  const partial = `${outdir}.partial-${process.pid}`;
  mkdirSync(dirname(partial), { recursive: true });
  await build({ ...nodeBundleOptions, plugins: [...nodeBundleOptions.plugins, selfImport, ...plugins], entryPoints: [entry], outdir: partial });
  try {
    renameSync(partial, outdir);
  } catch {
    rmSync(partial, { recursive: true, force: true });
  }
  return output;
}

/** The hook file Stryker preloaded into this process (`-r <hook>`), to preload into the test's. */
function strykerHook() {
  const args = process.execArgv;
  for (let index = 0; index < args.length - 1; index++) if (args[index] === "-r" || args[index] === "--require") return args[index + 1];
  return undefined;
}

/**
 * Runs the test bundle in a child process; resolves with its exit status, its TAP output, and what
 * it left for Stryker's hook. `only`: the unit names to run; `mutant`: false runs with no mutant.
 */
function runTests(bundle, { only, record, mutant = true }) {
  const env = { ...process.env };
  delete env.AGENTLOOP_MUTATION_ONLY;
  delete env.AGENTLOOP_MUTATION_RECORD;
  if (only) env.AGENTLOOP_MUTATION_ONLY = JSON.stringify(only);
  if (record) env.AGENTLOOP_MUTATION_RECORD = record;
  if (!mutant) {
    delete env.__STRYKER_ACTIVE_MUTANT__;
    delete env.STRYKER_HIT_LIMIT;
  }
  const hook = strykerHook();
  const args = [...(hook ? ["-r", hook] : []), "--test-reporter=tap", bundle];
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    const kill = () => child.kill("SIGKILL");
    process.once("exit", kill);
    const out = [];
    const err = [];
    child.stdout.on("data", (chunk) => out.push(chunk));
    child.stderr.on("data", (chunk) => err.push(chunk));
    child.on("close", (code, signal) => {
      process.off("exit", kill);
      const left = join(process.cwd(), `stryker-output-${child.pid}.json`);
      const stryker = readJson(left, undefined);
      rmSync(left, { force: true });
      resolveRun({ status: code ?? (signal ? 1 : 0), stdout: Buffer.concat(out), stderr: Buffer.concat(err), stryker });
    });
  });
}

/** Reports a run as this process's own: its output, and its coverage and hit count to Stryker's hook. */
function finish(run) {
  if (run.stryker && globalThis[namespace]) Object.assign(globalThis[namespace], run.stryker);
  process.stderr.write(run.stderr);
  process.stdout.write(run.stdout, () => process.exit(run.status));
}

const testFile = resolve(process.argv[2] ?? "");
if (!process.argv[2] || !exists(testFile)) {
  console.error(`scripts/mutation/test-file.mjs: no test file ${JSON.stringify(process.argv[2] ?? "")}`);
  process.exit(2);
}
process.env.AGENTLOOP_TEST_CLI = await bundled(join(root, "src/cli/main.ts"), "cli");
const name = relative(root, testFile).replaceAll("/", "__").replace(/\.ts$/, "");
const bundle = await bundled(testFile, `tests/${name}`, [nodeTestShim]);
const unitsFile = join(builds, "units", `${name}.json`);
mkdirSync(dirname(unitsFile), { recursive: true });
const mutant = process.env.__STRYKER_ACTIVE_MUTANT__;

if (!mutant) {
  // The dry run: the whole file, recording what each unit reaches.
  finish(await runTests(bundle, { record: unitsFile }));
} else {
  const recorded = readJson(unitsFile, undefined);
  const only = recorded && !recorded.outside.includes(mutant) ? recorded.units.filter((unit) => unit.spawns || unit.ids.includes(mutant)).map((unit) => unit.name) : undefined;
  if (!only || only.length === 0 || only.length === recorded.units.length) {
    finish(await runTests(bundle, {}));
  } else {
    const selected = await runTests(bundle, { only });
    if (selected.status === 0) finish(selected);
    else {
      const verdicts = join(builds, "alone", `${name}.json`);
      const key = createHash("sha256").update(JSON.stringify(only)).digest("hex").slice(0, 16);
      let passesAlone = readJson(verdicts, {})[key];
      if (passesAlone === undefined) {
        passesAlone = (await runTests(bundle, { only, mutant: false })).status === 0;
        writeJson(verdicts, { ...readJson(verdicts, {}), [key]: passesAlone });
      }
      finish(passesAlone ? selected : await runTests(bundle, {}));
    }
  }
}
