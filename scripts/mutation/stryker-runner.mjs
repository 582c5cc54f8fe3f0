// The mutation runner's Stryker test-runner plugin ("agentloop", loaded from this file by the
// configuration scripts/mutation.mjs writes). It keeps test processes alive across mutants:
//
// - Every test file is bundled once per sandbox with esbuild (as `npm test` does), its `node:test`
//   being scripts/mutation/harness.mjs, which keeps the file's tests so they can run again.
// - A test worker (scripts/mutation/worker.mjs, one node process per test file) loads a bundle once and
//   runs a selection of its tests for each mutant, switching the mutant on at run time
//   (globalThis.__stryker__.activeMutant; __STRYKER_ACTIVE_MUTANT__ for the processes a test starts).
//   Each Stryker worker keeps a few test workers (the files used last) and restarts one after
//   MAX_RUNS runs, after a timeout, or when a run fails unexpectedly.
// - Test ids are "<test file>: <suite> > <test>". The dry run loads each file in a new worker and
//   records what each test reaches (Stryker's currentTestId), what the file reaches while loading and
//   in its top-level `before` hooks ("setup"), what suites' hooks reach ("outside"), and what the node
//   processes a test starts reach (scripts/mutation/child-coverage.cjs): a mutant reached only in a
//   CLI child is tested too. "setup" and "outside" mutants are reported as covered by every test of the
//   file, so they run the whole file; none is reported static to Stryker.
//
// How a mutant is decided (per test file covering it, stopping at the first that detects it: first
// those that killed the same source file's earlier mutants, then the quickest; a file's run stops at
// its first failing test):
// - reached while the file loads ("setup"), or the file's tests failed twice without a mutant when run
//   again in one process (STALE_LIMIT): a new worker with the mutant active from its start runs the
//   selection (the whole file for "setup"), as the process-per-run runner did;
// - otherwise a warm worker runs the selected tests with the mutant switched on:
//   - a test fails: the tests up to it run again in that worker with no mutant; if they pass, the
//     mutant is killed; if not, the worker's state is to blame: the worker is restarted and the
//     mutant decided by new processes, as below;
//   - all pass: new processes decide (below), unless the worker ran nothing before this run: a warm
//     worker's earlier runs may have left module state (a value computed once and cached) that hides
//     the mutant, so a warm survival is never trusted alone;
//   - the hit limit is passed, or the run takes longer than the file's first run × timeoutFactor +
//     timeoutMS (the worker is killed and restarted): timeout.
// - "new processes decide" is the process-per-run runner's rule: a new worker with the mutant runs the
//   selection; if a test fails, whether the selection passes alone without the mutant (a new worker,
//   remembered per selection) says whether that failure counts; if it does not, the whole file decides.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { working } from "./process-tree.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const HARNESS = join(HERE, "harness.mjs");
const WORKER = join(HERE, "worker.mjs");
const CHILD_COVERAGE = join(HERE, "child-coverage.cjs");
/** A warm worker is restarted after this many runs (state a test leaves behind adds up). */
const MAX_RUNS = 100;
/** After this many failures without a mutant in a warm worker, a test file gets a new process per mutant. */
const STALE_LIMIT = 2;
/** A run idle this long past its tests' first run × timeoutFactor has hung (Worker.run; measured in docs/mutation.md); agentloop.idleMS sets another. */
const SOFT_MS = 2_000;
/** And this much more for a new worker (starting node before the bundle loads). */
const FRESH_MS = 1_000;
/** Warm workers kept per Stryker worker (the test files used last). */
const WARM_FILES = 4;

// Stryker's enums (@stryker-mutator/api/test-runner), as values: this file imports nothing of Stryker's.
const TestStatus = { Success: 0, Failed: 1, Skipped: 2 };
const DryRunStatus = { Complete: "complete", Error: "error", Timeout: "timeout" };
const MutantRunStatus = { Killed: "killed", Survived: "survived", Timeout: "timeout", Error: "error" };

function exists(path) {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** node:test, for the test files (not for the harness itself), is the harness. */
export const harnessPlugin = {
  name: "mutation-harness",
  setup(build) {
    build.onResolve({ filter: /^node:test$/ }, (args) => (args.importer === HARNESS ? { path: "node:test", external: true } : { path: HARNESS }));
  },
};

/**
 * `import "agentloop"` / `"agentloop/<x>"` (the examples) as tsconfig.json's `paths` map them, to the
 * sandbox's src/ (as test-file.mjs does for the first runner): the sandbox lies below node_modules,
 * where esbuild applies no tsconfig.json, and dist/ is not copied into it.
 */
const selfImport = {
  name: "agentloop-self-import",
  setup(build) {
    build.onResolve({ filter: /^agentloop(\/[\w-]+)?$/ }, (args) => {
      const path = join(process.cwd(), "src", args.path === "agentloop" ? "index.ts" : `${args.path.slice("agentloop/".length)}/index.ts`);
      return exists(path) ? { path } : undefined;
    });
  },
};

/** Bundles `entry` into `.mutation-build/<name>/` once per sandbox (a second worker finding it built reuses it). */
export async function bundled(entry, name, plugins = []) {
  const outdir = join(process.cwd(), ".mutation-build", name);
  const output = join(outdir, `${basename(entry).replace(/\.ts$/, "")}.mjs`);
  if (exists(output)) return output;
  const { nodeBundleOptions } = await import(join(process.cwd(), "scripts/esbuild-node.mjs"));
  const { build } = await import(join(process.cwd(), "node_modules/esbuild/lib/main.js"));
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

/** The name under which the harness records what suites' hooks reach (harness.mjs's OUTSIDE). */
const OUTSIDE = "\u0000outside";
const idOf = (file, name) => `${file}: ${name}`;

/** One test worker: a node process that loaded one test file. */
export class Worker {
  runs = 0;
  constructor(file, bundle, env, mutant) {
    this.file = file;
    this.childDir = mkdtempSync(join(tmpdir(), "agentloop-mutation-"));
    const nodeOptions = [process.env.NODE_OPTIONS, `--require ${CHILD_COVERAGE}`].filter(Boolean).join(" ");
    const workerEnv = { ...env, AGENTLOOP_MUTATION_CHILD_DIR: this.childDir, AGENTLOOP_MUTATION_WORKER: "1", NODE_OPTIONS: nodeOptions };
    delete workerEnv.__STRYKER_ACTIVE_MUTANT__;
    if (mutant !== undefined) workerEnv.__STRYKER_ACTIVE_MUTANT__ = mutant;
    this.fresh = mutant !== undefined;
    this.stderr = "";
    this.process = spawn(process.execPath, [WORKER, bundle], { env: workerEnv, stdio: ["ignore", "ignore", "pipe", "ipc"] });
    // A message sent as the worker dies fails here, not as an unhandled error of this process.
    this.process.on("error", () => {});
    this.process.stderr.setEncoding("utf8");
    this.process.stderr.on("data", (chunk) => {
      this.stderr = (this.stderr + chunk).slice(-4_000);
    });
    this.pending = new Map();
    this.nextId = 0;
    this.exited = new Promise((resolveExit) => this.process.once("exit", resolveExit));
    this.ready = new Promise((resolveReady, rejectReady) => {
      this.process.on("message", (message) => {
        if (message.type === "ready") resolveReady(message);
        else if (message.type === "error") rejectReady(new Error(`${file} did not load: ${message.message}`));
        else if (message.type === "result") {
          this.pending.get(message.id)?.(message);
          this.pending.delete(message.id);
        }
      });
      this.process.once("exit", (code, signal) => {
        rejectReady(new Error(`the worker of ${file} exited (${signal ?? code}) while loading: ${this.stderr}`));
        for (const settle of this.pending.values()) settle({ crashed: `the worker exited (${signal ?? code}): ${this.stderr.slice(-1_000)}` });
        this.pending.clear();
      });
    });
    this.ready.catch(() => {});
  }

  /**
   * Runs tests; resolves with the worker's answer, { timedOut: true } (the worker is then killed) or { crashed }.
   * `timeoutMs`: { soft, hard } (or one number for both): past `soft`, a worker whose processes are all asleep
   * (none running, no CPU time spent over a second: waiting for what never comes) has hung; one still working
   * gets until `hard`.
   */
  async run(request, timeoutMs) {
    const { soft, hard } = typeof timeoutMs === "number" ? { soft: timeoutMs, hard: timeoutMs } : timeoutMs;
    let loaded;
    try {
      loaded = await this.ready;
    } catch (error) {
      return { crashed: error.message };
    }
    this.loadMs = loaded.loadMs;
    if (!this.process.connected) return { crashed: `the worker of ${this.file} is gone: ${this.stderr.slice(-1_000)}` };
    this.runs++;
    const id = this.nextId++;
    let timer;
    const started = performance.now();
    const answer = new Promise((resolveAnswer) => {
      this.pending.set(id, resolveAnswer);
      const expire = async () => {
        timer = undefined;
        if (!this.pending.has(id)) return;
        const late = performance.now() - started;
        if (late < hard && (await working(this.process.pid))) {
          if (this.pending.has(id)) timer = setTimeout(expire, Math.max(0, Math.min(1_000, hard - (performance.now() - started))));
          return;
        }
        if (!this.pending.has(id)) return;
        this.pending.delete(id);
        this.kill();
        resolveAnswer({ timedOut: true, afterMs: performance.now() - started, idle: late < hard });
      };
      timer = setTimeout(expire, soft);
    });
    this.process.send({ type: "run", id, ...request });
    const result = await answer;
    clearTimeout(timer);
    return result;
  }

  kill() {
    this.killed = true;
    this.process.kill("SIGKILL");
    rmSync(this.childDir, { recursive: true, force: true });
  }

  /** Lets the file's top-level `after` hooks run (cleaning what they made), then ends the process. */
  async stop() {
    if (this.killed || !this.process.connected || this.process.exitCode !== null || this.process.signalCode !== null) return this.kill();
    try {
      this.process.send({ type: "stop" });
    } catch {}
    const timer = setTimeout(() => this.kill(), 3_000);
    await this.exited;
    clearTimeout(timer);
    rmSync(this.childDir, { recursive: true, force: true });
  }
}

function failed(answer) {
  return answer.outside.length > 0 || answer.results.some((result) => result.status === "failed");
}
function failureOf(answer) {
  const tests = answer.results.filter((result) => result.status === "failed");
  return [...tests.map((test) => `${test.name}: ${test.error}`), ...answer.outside.map((error) => `outside every test: ${error}`)].join("; ").slice(0, 2_000);
}

export class AgentloopTestRunner {
  static inject = ["options", "logger"];
  warm = new Map(); // test file → its warm worker (most recently used last)
  records = new Map(); // test file → what its dry run recorded
  alone = new Map(); // test file + selection → whether the selection passes without a mutant in a new process
  detections = new Map(); // source file → test file → mutants of it that test file killed
  stale = new Map(); // test file → how often a warm worker failed a selection without a mutant (its state)

  constructor(options, log) {
    this.options = options;
    this.log = log;
    this.settings = options.agentloop ?? {};
  }

  capabilities() {
    // A mutant reached while a test file loads is run in a new process by this runner itself (see
    // "setup" above), so Stryker never asks for a reload; it could.
    return { reloadEnvironment: true };
  }

  async init() {
    const patterns = this.settings.testFiles ?? [];
    // A plain path needs no glob (fs.globSync is Node 22's: Stryker runs under 24, a test of this file under 20).
    this.files = [...new Set(patterns.flatMap((pattern) => (/[*?[{]/.test(pattern) ? fs.globSync(pattern) : fs.existsSync(pattern) ? [pattern] : [])))].sort();
    if (this.files.length === 0) throw new Error(`no test file matches ${patterns.join(" ")}`);
    this.env = { ...process.env, AGENTLOOP_TEST_CLI: await bundled(join(process.cwd(), "src/cli/main.ts"), "cli") };
    this.recordsDir = join(process.cwd(), ".mutation-build", "records");
    mkdirSync(this.recordsDir, { recursive: true });
  }

  async dispose() {
    const rows = Object.entries(this.stats).sort((a, b) => b[1].ms - a[1].ms);
    if (rows.length > 0) this.log.info(`how mutants were decided (way: mutants, total s, s per mutant):\n${rows.map(([way, { mutants, ms }]) => `  ${way}: ${mutants}, ${(ms / 1000).toFixed(1)} s, ${(ms / 1000 / mutants).toFixed(2)} s`).join("\n")}`);
    await Promise.all([...this.warm.values()].map((worker) => worker.stop()));
    this.warm.clear();
  }

  bundleOf(file) {
    return bundled(join(process.cwd(), file), `harness/${file.replaceAll("/", "__").replace(/\.ts$/, "")}`, [harnessPlugin]);
  }

  /** The dry run: each test file in a new worker, all its tests, recording coverage. */
  async dryRun(options) {
    const files = options.testFiles?.length ? options.testFiles : this.files;
    const tests = [];
    const perTest = {};
    const queue = [...files];
    const recordFile = async (file) => {
      const worker = new Worker(file, await this.bundleOf(file), this.env);
      try {
        const answer = await worker.run({ record: true }, 30 * 60_000);
        if (answer.timedOut || answer.crashed) throw new Error(`${file}: ${answer.crashed ?? "timed out"}`);
        const record = this.recordOf(file, answer, worker.loadMs);
        writeFileSync(join(this.recordsDir, `${file.replaceAll("/", "__")}.json`), JSON.stringify(record));
        this.records.set(file, record);
        if (answer.outside.length > 0) throw new Error(`${file} failed outside every test: ${answer.outside.join("; ")}`);
        for (const result of answer.results) {
          const id = idOf(file, result.name);
          const base = { id, name: id, fileName: file, timeSpentMs: Math.round(result.ms) };
          tests.push(result.status === "failed" ? { ...base, status: TestStatus.Failed, failureMessage: result.error } : { ...base, status: result.status === "skipped" ? TestStatus.Skipped : TestStatus.Success });
          perTest[id] = record.reaches[result.name];
        }
        this.log.info(`dry run: ${file}: ${answer.results.length} tests, loaded in ${Math.round(worker.loadMs)} ms, ran in ${Math.round(answer.ms)} ms`);
      } finally {
        await worker.stop();
      }
    };
    const lanes = Array.from({ length: Math.max(1, this.options.concurrency ?? 1) }, async () => {
      while (queue.length > 0) await recordFile(queue.shift());
    });
    try {
      await Promise.all(lanes);
    } catch (error) {
      return { status: DryRunStatus.Error, errorMessage: error.message };
    }
    return { status: DryRunStatus.Complete, tests, mutantCoverage: { static: {}, perTest } };
  }

  /**
   * What a file's dry run says about it: what each test reaches (mutant id → times; with the children it
   * started, and with the file's setup and outside, which every test counts as reaching), timings.
   */
  recordOf(file, answer, loadMs) {
    const { setup, perTest, children, unreported } = answer.coverage;
    const add = (into, counts) => {
      for (const [id, count] of Object.entries(counts ?? {})) into[id] = (into[id] ?? 0) + count;
      return into;
    };
    const outside = add(add({}, perTest[OUTSIDE]), children[OUTSIDE]);
    const everyTest = add(add({}, setup), outside);
    const all = { ...everyTest };
    for (const name of new Set([...Object.keys(perTest), ...Object.keys(children)])) add(add(all, perTest[name]), children[name]);
    const reaches = {};
    const ms = {};
    for (const result of answer.results) {
      // A test that started a node process which left no coverage (killed first) may reach any of the file's mutants there.
      reaches[result.name] = unreported.includes(result.name) ? { ...all } : add(add(add({}, perTest[result.name]), children[result.name]), everyTest);
      ms[result.name] = result.ms;
    }
    return { file, units: answer.results.map((result) => result.name), setup: Object.keys(setup), outside: Object.keys(outside), reaches, ms, loadMs };
  }

  record(file) {
    let record = this.records.get(file);
    if (!record) {
      record = JSON.parse(readFileSync(join(this.recordsDir, `${file.replaceAll("/", "__")}.json`), "utf8"));
      this.records.set(file, record);
    }
    return record;
  }

  /**
   * The time a run may take: { soft, hard } (Worker.run): its tests' first run (+ loading, for a new worker)
   * × timeoutFactor, + agentloop.idleMS (SOFT_MS, 2 s) (+ FRESH_MS for a new worker: starting node) before an
   * idle run is a hang, + agentloop.timeoutMS (8 s) before a working one is. docs/mutation.md ("Speed") has the
   * measurements.
   */
  budget(record, selection, fresh) {
    const names = selection ?? record.units;
    const net = names.reduce((sum, name) => sum + (record.ms[name] ?? 0), 0) + (fresh ? record.loadMs : 0);
    const scaled = (this.options.timeoutFactor ?? 1.5) * net;
    const hard = Math.round(scaled + (this.settings.timeoutMS ?? 8_000));
    return { soft: Math.min(hard, Math.round(scaled + (this.settings.idleMS ?? SOFT_MS) + (fresh ? FRESH_MS : 0))), hard };
  }

  /** A file whose tests fail, without a mutant, when run again in one process (twice already) gets a new process per mutant. */
  reusable(file) {
    return (this.stale.get(file) ?? 0) < STALE_LIMIT;
  }

  async warmWorker(file) {
    let worker = this.warm.get(file);
    if (worker && (worker.runs >= MAX_RUNS || worker.process.exitCode !== null || worker.process.signalCode !== null)) {
      this.warm.delete(file);
      await worker.stop();
      worker = undefined;
    }
    if (worker) {
      this.warm.delete(file);
      this.warm.set(file, worker);
      return worker;
    }
    while (this.warm.size >= WARM_FILES) {
      const [oldest, old] = this.warm.entries().next().value;
      this.warm.delete(oldest);
      old.stop();
    }
    worker = new Worker(file, await this.bundleOf(file), this.env);
    this.warm.set(file, worker);
    return worker;
  }

  retire(file) {
    const worker = this.warm.get(file);
    this.warm.delete(file);
    worker?.stop();
  }

  /** How the mutants were decided (counts and milliseconds per way), logged when the runner stops. */
  stats = {};
  count(way, started) {
    const entry = (this.stats[way] ??= { mutants: 0, ms: 0 });
    entry.mutants++;
    entry.ms += Date.now() - started;
  }

  async mutantRun(options) {
    const started = Date.now();
    this.way = [];
    this.trace = [];
    const verdict = await this.decide(options);
    this.count(`${verdict.status}: ${this.way.filter((way) => !way.endsWith(".ts")).join(" → ") || "none"}`, started);
    // AGENTLOOP_MUTATION_TRACE=<file>: a line per mutant, to see where the time goes: id, file:line:column (the
    // repository's path, from 1 as the reports show them; the sandbox lies below its node_modules), mutator, verdict, the ways tried, milliseconds, and each test run (file, how, tests run,
    // their run ms / the same tests' first run ms).
    if (process.env.AGENTLOOP_MUTATION_TRACE) {
      const { id, fileName, location, mutatorName } = options.activeMutant;
      const runs = this.trace.map((run) => `${run.file}:${run.how}:${run.tests}:${Math.round(run.ms)}/${Math.round(run.firstMs)}`).join(" ");
      appendFileSync(process.env.AGENTLOOP_MUTATION_TRACE, `${id}\t${relative(process.cwd().split("/node_modules/")[0], fileName)}:${location.start.line + 1}:${location.start.column + 1}\t${mutatorName}\t${verdict.status}\t${this.way.join(" → ")}\t${Date.now() - started}\t${runs}\n`);
    }
    return verdict;
  }

  async decide(options) {
    const mutant = options.activeMutant.id;
    const byFile = new Map();
    for (const id of options.testFilter ?? this.files.flatMap((file) => this.record(file).units.map((name) => idOf(file, name)))) {
      const file = this.files.find((candidate) => id.startsWith(`${candidate}: `));
      if (!file) continue;
      const names = byFile.get(file) ?? new Set();
      names.add(id.slice(file.length + 2));
      byFile.set(file, names);
    }
    // The files covering the mutant, the quickest first (their selected tests' first run): any one that
    // detects the mutant decides, so the one likeliest to decide soonest goes first.
    const plans = [...byFile].map(([file, names]) => {
      const record = this.record(file);
      const whole = record.outside.includes(mutant) || record.setup.includes(mutant) || names.size >= record.units.length;
      const selection = whole ? undefined : record.units.filter((name) => names.has(name));
      const fresh = record.setup.includes(mutant) || !this.reusable(file);
      return { file, record, selection, cost: this.budget(record, selection, fresh).hard };
    });
    // Mutants of one source file tend to be detected by the same test file: the test files that detected
    // this source file's earlier mutants go first (most detections first), then the quickest.
    const detections = this.detections.get(options.activeMutant.fileName) ?? new Map();
    plans.sort((a, b) => (detections.get(b.file) ?? 0) - (detections.get(a.file) ?? 0) || a.cost - b.cost);
    let nrOfTests = 0;
    try {
      for (const { file, record, selection } of plans) {
        this.way.push(basename(file));
      const verdict = record.setup.includes(mutant) || !this.reusable(file) ? await this.decideFresh(file, selection, mutant) : await this.decideWarm(file, selection, mutant, options.hitLimit);
        nrOfTests += verdict.nrOfTests ?? 0;
        if (verdict.status !== MutantRunStatus.Survived) {
          if (verdict.status === MutantRunStatus.Killed) {
            if (!this.detections.has(options.activeMutant.fileName)) this.detections.set(options.activeMutant.fileName, new Map());
            const counts = this.detections.get(options.activeMutant.fileName);
            counts.set(file, (counts.get(file) ?? 0) + 1);
          }
          return verdict;
        }
      }
    } catch (error) {
      return { status: MutantRunStatus.Error, errorMessage: error?.stack ?? String(error) };
    }
    return { status: MutantRunStatus.Survived, nrOfTests };
  }

  killed(file, answer) {
    const killedBy = answer.results.filter((result) => result.status === "failed").map((result) => idOf(file, result.name));
    return { status: MutantRunStatus.Killed, killedBy: killedBy.length > 0 ? killedBy : answer.results.map((result) => idOf(file, result.name)).slice(0, 1), failureMessage: failureOf(answer), nrOfTests: answer.results.length };
  }

  /** A test run within its time budget, noted for the trace (the tests that ran, their time, their first run's). */
  async runTests(worker, record, request, how, fresh) {
    const started = performance.now();
    const answer = await worker.run(request, this.budget(record, request.selection, fresh));
    const ran = answer.results?.map((result) => result.name) ?? request.selection ?? record.units;
    const firstMs = ran.reduce((sum, name) => sum + (record.ms[name] ?? 0), 0) + (fresh ? record.loadMs : 0);
    const ms = answer.timedOut || answer.crashed || fresh ? performance.now() - started : answer.ms;
    this.trace?.push({ file: basename(record.file), how: answer.timedOut ? `${how}(${answer.idle ? "hung" : "timeout"})` : how, tests: ran.length, ms, firstMs });
    return answer;
  }

  async decideWarm(file, selection, mutant, hitLimit) {
    this.way.push("warm");
    const record = this.record(file);
    const worker = await this.warmWorker(file);
    const answer = await this.runTests(worker, record, { selection, mutant, hitLimit, bail: true }, "warm", false);
    if (answer.timedOut) {
      this.warm.delete(file);
      if (answer.idle) return { status: MutantRunStatus.Timeout, reason: `the tests of ${file} hung (${Math.round(answer.afterMs)} ms, idle)` };
      // Still working at the hard limit: a mutant's endless loop, or a warm process grown slower than its
      // first run (a test file's state piling up across runs; the machine's load): a new process decides, and
      // counts it a timeout only if it too runs past its own budget.
      this.way.push("slow");
      return this.decideFresh(file, selection, mutant);
    }
    if (answer.crashed) {
      this.retire(file);
      return this.decideFresh(file, selection, mutant);
    }
    if (hitLimit !== undefined && answer.hits > hitLimit) {
      this.retire(file);
      return { status: MutantRunStatus.Timeout, reason: `the mutant ran ${answer.hits} times (hit limit ${hitLimit})` };
    }
    if (!failed(answer)) {
      // A worker that ran nothing before this run is a new process with the mutant switched on after
      // loading (a mutant reached while loading never comes here): its survival is a new process's.
      if (answer.hits > 0 && worker.runs === 1) return { status: MutantRunStatus.Survived, nrOfTests: answer.results.length };
      // Otherwise an earlier run may have left state this run read instead of reaching the mutant's
      // effect (a value computed once per process and cached in module state; the mutant never
      // reached at all): new processes decide, and only their survival counts.
      this.way.push(answer.hits > 0 ? "survived warm" : "unreached");
      return this.decideFresh(file, selection, mutant);
    }
    // The tests up to the first that failed, again, without the mutant (its state is what they ran in).
    const ran = answer.results.map((result) => result.name);
    const prefix = answer.outside.length > 0 ? selection : ran;
    const check = await this.runTests(worker, record, { selection: prefix, bail: true }, "confirm", false);
    this.way.push("confirm");
    if (!check.timedOut && !check.crashed && !failed(check)) return this.killed(file, answer);
    this.stale.set(file, (this.stale.get(file) ?? 0) + 1);
    this.retire(file);
    return this.decideFresh(file, selection, mutant);
  }

  /** A new worker with `mutant` active from its start (scripts/mutation/confirm.mjs writes the mutant in instead). */
  async workerFor(file, mutant) {
    return new Worker(file, await this.bundleOf(file), this.env, mutant);
  }

  /** The process-per-run rule: new workers, the mutant active from their start. */
  async decideFresh(file, selection, mutant) {
    this.way.push("fresh");
    const record = this.record(file);
    const once = async (runSelection, runMutant) => {
      const worker = await this.workerFor(file, runMutant);
      try {
        return await this.runTests(worker, record, { selection: runSelection, bail: true }, runMutant === undefined ? "alone" : "fresh", true);
      } finally {
        // Its top-level `after` hooks clean up (temporary folders, servers) while the next run starts.
        worker.stop();
      }
    };
    const answer = await once(selection, mutant);
    if (answer.timedOut) return { status: MutantRunStatus.Timeout, reason: `the tests of ${file} hung (${Math.round(answer.afterMs)} ms, ${answer.idle ? "idle" : "working"})` };
    if (answer.crashed) return { status: MutantRunStatus.Killed, killedBy: [idOf(file, (selection ?? record.units)[0])], failureMessage: answer.crashed, nrOfTests: 1 };
    if (!failed(answer)) return { status: MutantRunStatus.Survived, nrOfTests: answer.results.length };
    if (!selection) return this.killed(file, answer);
    const key = `${file}\n${selection.join("\n")}`;
    if (!this.alone.has(key)) {
      this.way.push("alone");
      const check = await once(selection, undefined);
      this.alone.set(key, !check.timedOut && !check.crashed && !failed(check));
    }
    if (this.alone.get(key)) return this.killed(file, answer);
    this.way.push("whole file");
    const whole = await once(undefined, mutant);
    if (whole.timedOut) return { status: MutantRunStatus.Timeout, reason: `the tests of ${file} hung (${Math.round(whole.afterMs)} ms, ${whole.idle ? "idle" : "working"})` };
    if (whole.crashed) return { status: MutantRunStatus.Killed, killedBy: [idOf(file, record.units[0])], failureMessage: whole.crashed, nrOfTests: 1 };
    return failed(whole) ? this.killed(file, whole) : { status: MutantRunStatus.Survived, nrOfTests: whole.results.length };
  }
}

function createAgentloopTestRunner(options, logger) {
  return new AgentloopTestRunner(options, logger);
}
createAgentloopTestRunner.inject = ["options", "logger"];

export const strykerPlugins = [{ kind: "TestRunner", name: "agentloop", factory: createAgentloopTestRunner }];
export const strykerValidationSchema = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: {
    agentloop: {
      type: "object",
      description: "scripts/mutation/stryker-runner.mjs: the test files (globs) that may kill the mutants",
      properties: { testFiles: { type: "array", items: { type: "string" } }, timeoutMS: { type: "number" }, idleMS: { type: "number" } },
      additionalProperties: false,
    },
  },
};
