// A test worker of the mutation runner (scripts/mutation/stryker-runner.mjs starts it, one per test
// file): `node worker.mjs <bundle>` loads the test file's bundle once (its `node:test` is
// scripts/mutation/harness.mjs, which keeps the test tree), then answers the runner's messages:
//   { type: "run", id, selection?: [names], mutant?: id, hitLimit?, record?, bail? }
//     runs the selected tests (all when absent) with `mutant` switched on (Stryker's mutation switching
//     is a run-time check of globalThis.__stryker__.activeMutant; child processes read
//     __STRYKER_ACTIVE_MUTANT__) and answers { type: "result", id, results, outside, hits, coverage? };
//   { type: "stop" }: runs the file's top-level `after` hooks and exits.
// It says { type: "ready", loadMs } once loaded, or { type: "error", message } if loading failed.
// A mutant active from the start (the environment variable set when the worker was started) is the
// runner's "fresh" worker, for mutants reached while the file loads.
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";

const bundle = process.argv[2];
const childDir = process.env.AGENTLOOP_MUTATION_CHILD_DIR;
// The coverage preload (NODE_OPTIONS) skips this process, not the tests' children.
delete process.env.AGENTLOOP_MUTATION_WORKER;
const namespace = process.env.STRYKER_NAMESPACE || "__stryker__";
globalThis[namespace] ??= {};
const ns = globalThis[namespace];
const fresh = process.env.__STRYKER_ACTIVE_MUTANT__;
process.on("disconnect", () => process.exit(1));

// Which test started which node process (a child's coverage file is named by its pid).
const spawnedBy = new Map();
const spawnCount = new Map();
const reportedPids = new Set();
const childProcess = createRequire(import.meta.url)("node:child_process");
for (const method of ["spawn", "spawnSync", "execFile", "execFileSync", "fork", "exec", "execSync"]) {
  const original = childProcess[method];
  const noted = (call) =>
    function (file, ...rest) {
      const result = call.call(this, file, ...rest);
      const test = ns.currentTestId;
      if (test && (method === "fork" || file === process.execPath)) {
        spawnCount.set(test, (spawnCount.get(test) ?? 0) + 1);
        // promisify(execFile)'s promise carries its process as `child`.
        const pid = result?.pid ?? result?.child?.pid;
        if (pid) spawnedBy.set(pid, test);
      }
      return result;
    };
  childProcess[method] = noted(original);
  // `promisify(execFile)` resolves { stdout, stderr } through execFile's own promisified form: keep it.
  const custom = original[promisify.custom];
  if (custom) childProcess[method][promisify.custom] = noted(custom);
}
syncBuiltinESMExports();

/** Reads (and removes) the children's coverage files: [{ pid, ids, hits }]. */
function childReports() {
  if (!childDir) return [];
  const reports = [];
  for (const name of readdirSync(childDir)) {
    if (!name.endsWith(".json")) continue;
    const path = join(childDir, name);
    try {
      reports.push({ pid: Number(name.slice(0, -5)), ...JSON.parse(readFileSync(path, "utf8")) });
      rmSync(path, { force: true });
    } catch {}
  }
  return reports;
}

let harness;
const started = performance.now();
try {
  await import(pathToFileURL(bundle).href);
  harness = globalThis.__agentloopHarness;
  if (!harness) throw new Error(`${bundle} did not load the mutation harness (is node:test bundled as scripts/mutation/harness.mjs?)`);
  process.send({ type: "ready", loadMs: performance.now() - started, units: harness.units() });
} catch (error) {
  process.send({ type: "error", message: error?.stack ?? String(error) });
  process.disconnect?.();
}

let queue = Promise.resolve();
process.on("message", (message) => {
  queue = queue.then(() => handle(message));
});

async function handle(message) {
  if (message.type === "stop") {
    await Promise.race([harness?.teardown(), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    process.exit(0);
  }
  if (message.type !== "run") return;
  const { id, selection, mutant, hitLimit, record, bail } = message;
  childReports();
  if (!fresh) {
    ns.activeMutant = mutant;
    if (mutant === undefined) delete process.env.__STRYKER_ACTIVE_MUTANT__;
    else process.env.__STRYKER_ACTIVE_MUTANT__ = mutant;
  }
  ns.hitCount = 0;
  ns.hitLimit = hitLimit ?? undefined;
  // A child's file holds its totals so far (rewritten as it runs): the latest per child counts.
  const byChild = new Map(); // pid → { owner, ids: mutant id → times, hits }
  const collect = (test) => {
    for (const report of childReports()) {
      reportedPids.add(report.pid);
      const owner = byChild.get(report.pid)?.owner ?? spawnedBy.get(report.pid) ?? test ?? harness.OUTSIDE;
      byChild.set(report.pid, { owner, ids: report.ids ?? {}, hits: report.hits ?? 0 });
    }
  };
  const startedRun = performance.now();
  // The channel must not keep the event loop alive during a run: a test whose promise can no longer
  // settle fails when the loop empties, as under node:test.
  process.channel?.unref();
  const { results, outside } = await harness.run(selection ? new Set(selection) : undefined, { record, bail, onTestEnd: record ? collect : undefined });
  process.channel?.ref();
  collect(undefined);
  const hits = (ns.hitCount ?? 0) + [...byChild.values()].reduce((sum, child) => sum + child.hits, 0);
  ns.hitCount = undefined;
  ns.hitLimit = undefined;
  if (!fresh) {
    ns.activeMutant = undefined;
    delete process.env.__STRYKER_ACTIVE_MUTANT__;
  }
  const answer = { type: "result", id, results, outside, hits, ms: performance.now() - startedRun };
  if (record) {
    const coverage = ns.mutantCoverage ?? { static: {}, perTest: {} };
    answer.coverage = {
      // Each: mutant id → times reached.
      setup: coverage.static,
      perTest: coverage.perTest,
      children: {},
      // Tests that started more node processes than left coverage (killed before they could write it).
      unreported: [...spawnCount].filter(([test, count]) => count > [...spawnedBy].filter(([pid, owner]) => owner === test && reportedPids.has(pid)).length).map(([test]) => test),
    };
    for (const { owner, ids } of byChild.values()) {
      const into = (answer.coverage.children[owner] ??= {});
      for (const [reached, count] of Object.entries(ids)) into[reached] = (into[reached] ?? 0) + count;
    }
  }
  process.send(answer);
}
