// Preloaded (NODE_OPTIONS=--require) into every node process a test starts under the mutation runner
// (scripts/mutation/worker.mjs sets it): a CLI, a child script, a `serve` replica. Such a child runs
// the active mutant too (it inherits __STRYKER_ACTIVE_MUTANT__), but Stryker's coverage and hit count
// live in the test's process. This writes the child's into AGENTLOOP_MUTATION_CHILD_DIR/<pid>.json
// (every 200 ms when it changed, at exit, and on SIGTERM/SIGINT/SIGHUP), which the worker adds to the test that started it:
// { ids: the mutants the child reached (id → times), hits: how often it ran the active mutant }.
"use strict";
const dir = process.env.AGENTLOOP_MUTATION_CHILD_DIR;
if (dir && process.env.AGENTLOOP_MUTATION_WORKER !== "1") {
  const { renameSync, writeFileSync } = require("node:fs");
  const { join } = require("node:path");
  const name = process.env.STRYKER_NAMESPACE || "__stryker__";
  globalThis[name] ??= {};
  const ns = globalThis[name];
  ns.hitCount = 0; // Stryker's instrumentation counts the active mutant's hits only when this is set.
  let last = "";
  // At exit always (the worker then knows the child reported, even nothing); before, once there is something.
  const flush = (exiting) => {
    const coverage = ns.mutantCoverage;
    const ids = { ...coverage?.static };
    for (const perTest of Object.values(coverage?.perTest ?? {})) for (const [id, count] of Object.entries(perTest)) ids[id] = (ids[id] ?? 0) + count;
    if (Object.keys(ids).length === 0 && !ns.hitCount && exiting !== true) return;
    const text = JSON.stringify({ ids, hits: ns.hitCount ?? 0 });
    if (text === last) return;
    last = text;
    const file = join(dir, `${process.pid}.json`);
    try {
      writeFileSync(`${file}.partial`, text);
      renameSync(`${file}.partial`, file);
    } catch {}
  };
  setInterval(flush, 200).unref();
  process.on("exit", () => flush(true));
  // A child stopped by a signal (an MCP stdio server closed with SIGTERM) never sees "exit": write
  // first, then, if nothing else of the process listens to that signal, die of it as it would have.
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
    const onSignal = () => {
      flush(true);
      if (process.listenerCount(signal) === 1) {
        process.removeListener(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
}
