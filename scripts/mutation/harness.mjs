// node:test as a test file sees it under the mutation runner's test workers (scripts/mutation/worker.mjs;
// scripts/mutation/stryker-runner.mjs bundles every test file with `node:test` pointing here).
// Instead of running the tests once, as node:test does, it keeps the file's test tree (suites, tests,
// hooks) so that a worker can load the file once and run any selection of its tests again and again,
// one run per mutant. A test's name is its suites' names and its own ("suite > test"), as in
// node-test-shim.mjs. What it supports is what this repository's tests use: test/it, describe/suite,
// before/after/beforeEach/afterEach, the skip/todo/timeout options, a test's context (name, signal,
// mock, skip(), todo(), diagnostic(), after(), test() for a subtest) and callback-style tests.
//
// Semantics of a run (`run(selection)`):
// - the file's top-level `before` hooks run once per process (at its first run), its top-level `after`
//   hooks when the worker is told to stop: they set up and tear down what the whole file shares;
// - a suite's `before`/`after` hooks run in every run that selects one of its tests;
// - a test fails when it throws, rejects, times out (its `timeout` option), or when an uncaught
//   exception or unhandled rejection happens while it runs; one happening outside every test fails the run;
// - a test whose promise is still pending when the event loop has nothing left to do fails, as under
//   node:test (the worker's channel does not keep the loop alive during a run).
// Coverage: while a test (with its beforeEach/afterEach hooks) runs, Stryker's `currentTestId` is the
// test's name, so the instrumented sources record what it reaches under that name; a suite's hooks
// record under OUTSIDE; the file's loading and its top-level `before` hooks record in `static` (SETUP).
import * as real from "node:test";

export const mock = real.mock;
export const OUTSIDE = "\u0000outside";

const namespace = process.env.STRYKER_NAMESPACE || "__stryker__";
const ns = () => (globalThis[namespace] ??= {});

function newSuite(name, parent, options = {}) {
  return { kind: "suite", name, parent, options, children: [], before: [], after: [], beforeEach: [], afterEach: [], names: parent ? [...parent.names, ...(name === undefined ? [] : [name])] : [] };
}
const root = newSuite(undefined, undefined);
let current = root;
const pendingSuites = [];

/** node:test's (name?, options?, fn?) arguments, normalized (as node-test-shim.mjs does). */
function parse(args) {
  let [name, options, fn] = args;
  if (typeof name === "function") [name, options, fn] = [name.name, {}, name];
  else if (typeof name === "object" && name !== null) [name, options, fn] = [undefined, name, options];
  if (typeof options === "function") [options, fn] = [{}, options];
  return { name: name ?? fn?.name ?? "<anonymous>", options: options ?? {}, fn };
}

function registerTest(extra) {
  return (...args) => {
    const { name, options, fn } = parse(args);
    const merged = { ...options, ...extra };
    const skip = merged.skip || merged.todo || typeof fn !== "function";
    current.children.push({ kind: "test", name, fullName: [...current.names, name].join(" > "), options: merged, fn, skip: Boolean(skip), suite: current });
  };
}
function registerSuite(extra) {
  return (...args) => {
    const { name, options, fn } = parse(args);
    const suite = newSuite(name, current, { ...options, ...extra });
    current.children.push(suite);
    if (typeof fn !== "function") return;
    const outer = current;
    current = suite;
    try {
      const result = fn();
      if (result && typeof result.then === "function") pendingSuites.push(result);
    } finally {
      current = outer;
    }
  };
}
function withVariants(register) {
  const plain = register({});
  return Object.assign(plain, { skip: register({ skip: true }), todo: register({ todo: true }), only: register({}) });
}
function registerHook(kind) {
  return (fn, options = {}) => {
    current[kind].push({ fn, options });
  };
}

export const test = withVariants(registerTest);
export const it = test;
export const describe = withVariants(registerSuite);
export const suite = describe;
export const before = registerHook("before");
export const after = registerHook("after");
export const beforeEach = registerHook("beforeEach");
export const afterEach = registerHook("afterEach");
const defaultTest = registerTest({});
Object.assign(defaultTest, { test, it, describe, suite, before, after, beforeEach, afterEach, mock, skip: test.skip, todo: test.todo, only: test.only });
export default defaultTest;

// ---------------------------------------------------------------------------------------------------
// Running.

class Skipped extends Error {}
const MockTracker = real.mock.constructor;

/** Errors thrown or rejected outside the code being awaited (node:test fails the test they happen in). */
const stray = [];
/** Those that happened between tests, during the current run. */
const between = [];
process.on("uncaughtException", (error) => stray.push(error));
process.on("unhandledRejection", (error) => stray.push(error));

/** Calls a test or hook function (callback style too), within its timeout; resolves when it ends. */
function call(fn, context, timeout) {
  let timer;
  const body = new Promise((resolve, reject) => {
    if (fn.length >= 2) {
      fn.call(context, context, (error) => (error ? reject(error) : resolve()));
    } else {
      Promise.resolve(fn.call(context, context)).then(resolve, reject);
    }
  });
  if (!(timeout > 0 && Number.isFinite(timeout))) return body;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`test timed out after ${timeout}ms`)), timeout);
  });
  return Promise.race([body, expired]).finally(() => clearTimeout(timer));
}

/** A test's context: what this repository's tests use of node:test's TestContext. */
function contextOf(name, fullName) {
  const controller = new AbortController();
  const afters = [];
  let mockTracker;
  const context = {
    name,
    fullName,
    signal: controller.signal,
    get mock() {
      mockTracker ??= new MockTracker();
      return mockTracker;
    },
    skip(message) {
      context.skipped = message ?? true;
    },
    todo(message) {
      context.skipped = message ?? true;
    },
    diagnostic() {},
    plan() {},
    after(fn) {
      afters.push(fn);
    },
    async test(...args) {
      const { name: own, options, fn } = parse(args);
      if (options.skip || options.todo || typeof fn !== "function") return;
      const child = contextOf(own, `${fullName} > ${own}`);
      try {
        await call(fn, child, options.timeout);
      } finally {
        await child.end();
      }
    },
    async end() {
      const errors = [];
      for (const fn of afters.reverse()) {
        try {
          await call(fn, context);
        } catch (error) {
          errors.push(error);
        }
      }
      mockTracker?.reset();
      controller.abort();
      if (errors.length > 0) throw errors[0];
    },
  };
  return context;
}

function message(error) {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/** The tests of `suite` (at any depth) a selection runs. */
function selectedIn(suite, selection) {
  return suite.children.some((child) => (child.kind === "suite" ? selectedIn(child, selection) : !child.skip && (!selection || selection.has(child.fullName))));
}

let setupDone = false;
let running = false;
let pendingBeforeExit;
process.on("beforeExit", () => {
  // Nothing left to do while a test's promise is pending: it never settles (node:test fails it so).
  if (running && pendingBeforeExit) pendingBeforeExit(new Error("the test's promise is still pending but the event loop has nothing left to do"));
});

/** Awaits `promise`, failing if the event loop empties first. */
function awaitLive(promise) {
  return new Promise((resolve, reject) => {
    pendingBeforeExit = reject;
    promise.then(resolve, reject);
  }).finally(() => {
    pendingBeforeExit = undefined;
  });
}

async function runHooks(hooks, context) {
  for (const hook of hooks) await awaitLive(call(hook.fn, context, hook.options?.timeout));
}

/**
 * Runs the selected tests (`selection`: a Set of full names, or undefined for all) in file order;
 * `bail`: none after the first that fails.
 * Resolves with each test's outcome and the errors that happened outside every test.
 */
export async function run(selection, { record = false, bail = false, onTestEnd } = {}) {
  const results = [];
  const outside = [];
  const stryker = ns();
  running = true;
  between.length = 0;
  stray.length = 0;
  try {
    await Promise.all(pendingSuites.splice(0));
    if (!setupDone) {
      setupDone = true;
      stryker.currentTestId = undefined;
      try {
        await runHooks(root.before, contextOf("<before>", "<before>"));
      } catch (error) {
        root.failed = error;
      }
    }
    await runSuite(root, selection, { record, bail, onTestEnd }, results, root.failed);
    // Let what the last test left behind settle (a late rejection fails the run, as it fails the file).
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 5));
    outside.push(...between.splice(0).map(message), ...stray.splice(0).map(message));
  } catch (error) {
    outside.push(message(error));
  } finally {
    running = false;
    stryker.currentTestId = undefined;
  }
  return { results, outside };
}

async function runSuite(suite, selection, options, results, inheritedFailure) {
  const { record } = options;
  if (!selectedIn(suite, selection)) return;
  const stryker = ns();
  let failure = inheritedFailure;
  if (suite !== root && !failure) {
    stryker.currentTestId = record ? OUTSIDE : undefined;
    try {
      await runHooks(suite.before, contextOf(suite.name, suite.names.join(" > ")));
    } catch (error) {
      failure = error;
    }
  }
  for (const child of suite.children) {
    if (child.kind === "suite") await runSuite(child, selection, options, results, failure);
    else if (!child.skip && (!selection || selection.has(child.fullName))) {
      // bail: after a failure, the rest is skipped (the suites' `after` hooks still run, to clean up).
      if (options.bail && results.some((result) => result.status === "failed")) continue;
      results.push(await runTest(child, record, failure));
      options.onTestEnd?.(child.fullName);
    }
  }
  if (suite !== root) {
    stryker.currentTestId = record ? OUTSIDE : undefined;
    try {
      await runHooks(suite.after, contextOf(suite.name, suite.names.join(" > ")));
    } catch (error) {
      const last = results.at(-1);
      if (last && !last.error) Object.assign(last, { status: "failed", error: `after hook: ${message(error)}` });
    }
  }
}

/** The suites from the outermost to `suite`. */
function chain(suite) {
  const suites = [];
  for (let at = suite; at; at = at.parent) suites.unshift(at);
  return suites;
}

async function runTest(test, record, inheritedFailure) {
  const started = performance.now();
  const stryker = ns();
  between.push(...stray.splice(0));
  if (inheritedFailure) return { name: test.fullName, status: "failed", ms: 0, error: `a before hook failed: ${message(inheritedFailure)}` };
  stryker.currentTestId = record ? test.fullName : undefined;
  const context = contextOf(test.name, test.fullName);
  const suites = chain(test.suite);
  // `failed`, not `error !== undefined`: a test that throws `undefined` fails, as under node:test.
  let failed = false;
  let error;
  const fail = (thrown) => {
    if (!failed) error = thrown;
    failed = true;
  };
  try {
    for (const suite of suites) await runHooks(suite.beforeEach, context);
    await awaitLive(call(test.fn, context, test.options.timeout));
  } catch (thrown) {
    fail(thrown);
  }
  try {
    await context.end();
  } catch (thrown) {
    fail(thrown);
  }
  for (const suite of suites.reverse()) {
    try {
      await runHooks(suite.afterEach, context);
    } catch (thrown) {
      fail(thrown);
    }
  }
  if (stray.length > 0) fail(stray.splice(0)[0]);
  stryker.currentTestId = undefined;
  const ms = performance.now() - started;
  if (error instanceof Skipped || (context.skipped && !failed)) return { name: test.fullName, status: "skipped", ms };
  return failed ? { name: test.fullName, status: "failed", ms, error: message(error) } : { name: test.fullName, status: "passed", ms };
}

/** The file's tests, by full name (those not skipped). */
export function units() {
  const names = [];
  const walk = (suite) => {
    for (const child of suite.children) {
      if (child.kind === "suite") walk(child);
      else if (!child.skip) names.push(child.fullName);
    }
  };
  walk(root);
  return [...new Set(names)];
}

/** Runs the file's top-level `after` hooks (the worker is stopping). */
export async function teardown() {
  if (!setupDone) return;
  for (const hook of root.after) {
    try {
      await call(hook.fn, contextOf("<after>", "<after>"), hook.options?.timeout);
    } catch {}
  }
}

globalThis.__agentloopHarness = { run, units, teardown, OUTSIDE };
