// node:test as a test file sees it during mutation testing (scripts/mutation/test-file.mjs bundles
// every test file with `node:test` pointing here). A file's tests ("units": every test() or it(),
// named with their suites, "suite > test"; a test's subtests t.test() are part of it) are the grain
// of test selection:
// - AGENTLOOP_MUTATION_RECORD=<file>: writes there, at exit, which mutants each unit reached and which
//   were reached outside every unit (while the file loads, in hooks, or after);
// - AGENTLOOP_MUTATION_ONLY=<JSON list of unit names>: runs only those units, the others skipped.
// Everything else is node:test itself.
import { writeFileSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import * as real from "node:test";
import { promisify } from "node:util";

export * from "node:test";

// Ends with the process that started it (scripts/mutation/test-file.mjs, ended by Stryker on a timeout).
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(1);
}, 1000).unref();

const only = process.env.AGENTLOOP_MUTATION_ONLY ? new Set(JSON.parse(process.env.AGENTLOOP_MUTATION_ONLY)) : undefined;
const recordFile = process.env.AGENTLOOP_MUTATION_RECORD;
const namespace = process.env.STRYKER_NAMESPACE || "__stryker__";

/** The instrumented sources' coverage counts (mutant id → times reached), created if none was yet. */
function counts() {
  const ns = (globalThis[namespace] ??= {});
  ns.mutantCoverage ??= { static: {}, perTest: {} };
  return ns.mutantCoverage.static;
}
function snapshot() {
  return recordFile ? { ...counts() } : undefined;
}
function reachedSince(before, into) {
  for (const [id, count] of Object.entries(counts())) if (before[id] !== count) into.add(id);
}

const units = new Map(); // unit name → ids reached while it ran
const outside = new Set();
let mark = snapshot();
const running = new Set();
// A test that starts a node process may reach a mutant there (a CLI, a child script): coverage is
// not seen across processes, so such a test ("spawns") is selected for every mutant its file reaches.
const spawning = new Set();
if (recordFile) {
  const childProcess = createRequire(import.meta.url)("node:child_process");
  for (const method of ["spawn", "spawnSync", "execFile", "execFileSync", "fork"]) {
    const original = childProcess[method];
    const noted = (call) =>
      function (file, ...rest) {
        if (method === "fork" || file === process.execPath) for (const name of running) spawning.add(name);
        return call.call(this, file, ...rest);
      };
    childProcess[method] = noted(original);
    // `promisify(execFile)` resolves { stdout, stderr } through execFile's own promisified form: keep it.
    const custom = original[promisify.custom];
    if (custom) childProcess[method][promisify.custom] = noted(custom);
  }
  syncBuiltinESMExports();
}
function unitStarted(name) {
  if (!recordFile) return undefined;
  running.add(name);
  reachedSince(mark, outside);
  return snapshot();
}
function unitEnded(name, started) {
  if (!recordFile || !started) return;
  running.delete(name);
  const ids = units.get(name) ?? new Set();
  reachedSince(started, ids);
  units.set(name, ids);
  mark = snapshot();
}
if (recordFile) {
  process.on("exit", () => {
    reachedSince(mark, outside);
    writeFileSync(recordFile, JSON.stringify({ outside: [...outside], units: [...units].map(([name, ids]) => ({ name, ids: [...ids], spawns: spawning.has(name) })) }));
  });
}

/** node:test's (name?, options?, fn?) arguments, normalized. */
function parse(args) {
  let [name, options, fn] = args;
  if (typeof name === "function") [name, options, fn] = [name.name, {}, name];
  else if (typeof name === "object" && name !== null) [name, options, fn] = [undefined, name, options];
  if (typeof options === "function") [options, fn] = [{}, options];
  return { name: name ?? fn?.name ?? "<anonymous>", options: options ?? {}, fn };
}

/** A test's name below its suites' ("suite > test"): the same in the recording run and in a selected run. */
const suites = [];
function fullName(name) {
  return [...suites, name].join(" > ");
}

function wrapTest(register) {
  const wrapped = (...args) => {
    const { name: own, options, fn } = parse(args);
    const name = fullName(own);
    if (only && !only.has(name)) return register(own, { ...options, skip: "not reaching the active mutant" }, fn);
    if (typeof fn !== "function") return register(own, options, fn);
    let body;
    if (fn.length >= 2) {
      body = function (context, done) {
        const started = unitStarted(name);
        return fn.call(this, context, (error) => {
          unitEnded(name, started);
          done(error);
        });
      };
    } else {
      body = async function (context) {
        const started = unitStarted(name);
        try {
          return await fn.call(this, context);
        } finally {
          unitEnded(name, started);
        }
      };
    }
    return register(own, options, body);
  };
  return Object.assign(wrapped, { skip: register.skip, todo: register.todo, only: register.only });
}

function wrapSuite(register) {
  const wrapped = (...args) => {
    const { name, options, fn } = parse(args);
    if (typeof fn !== "function") return register(name, options, fn);
    return register(name, options, function (...suiteArgs) {
      suites.push(name);
      try {
        return fn.apply(this, suiteArgs);
      } finally {
        suites.pop();
      }
    });
  };
  return Object.assign(wrapped, { skip: register.skip, todo: register.todo, only: register.only });
}

export const test = wrapTest(real.test);
export const it = wrapTest(real.it);
export const describe = wrapSuite(real.describe);
export const suite = wrapSuite(real.suite);
const defaultTest = wrapTest(real.default);
for (const key of Object.keys(real.default)) if (!(key in defaultTest)) defaultTest[key] = real.default[key];
Object.assign(defaultTest, { test, it, describe, suite });
export default defaultTest;
