// The mutation runner's plugin (scripts/mutation/stryker-runner.mjs) tells a hung test run from a slow
// one: past its first run × 1.5 + agentloop.idleMS (2 s unless set), a run whose processes are all asleep
// is a timeout at once; one still working (CPU) runs on until the hard limit (first run × 1.5 +
// agentloop.timeoutMS) and keeps its verdict. The plugin is driven as Stryker drives it (init, dry run,
// mutant runs) over a sample file, with smaller limits than a mutation run's (the same rules, less waiting).
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const sample = "test/package/fixtures/mutation-hang-sample.ts";

type Verdict = { status: string; reason?: string };
type Runner = {
  init(): Promise<void>;
  dryRun(options: object): Promise<{ status: string; errorMessage?: string }>;
  mutantRun(options: object): Promise<Verdict>;
  dispose(): Promise<void>;
};

/**
 * The plugin over the sample file, its dry run done; `timeoutMS`: the hard limit past the first run × 1.5;
 * `idleMS`: the soft one (an idle run past it has hung), the plugin's own 2 s when not given.
 */
async function startRunner(timeoutMS: number, idleMS?: number): Promise<Runner> {
  process.chdir(root); // the plugin bundles from the working folder (a sandbox under Stryker)
  const { AgentloopTestRunner } = (await import(join(root, "scripts/mutation/stryker-runner.mjs"))) as { AgentloopTestRunner: new (options: object, log: object) => Runner };
  const runner = new AgentloopTestRunner({ agentloop: { testFiles: [sample], timeoutMS, ...(idleMS === undefined ? {} : { idleMS }) }, timeoutFactor: 1.5, concurrency: 1 }, { info() {} });
  await runner.init();
  const dry = await runner.dryRun({});
  assert.equal(dry.status, "complete", dry.errorMessage);
  return runner;
}

/** A mutant run of the sample's second test with the "mutant" `id` switched on. */
const mutant = (id: string) => ({
  activeMutant: { id, fileName: join(root, "src/x.ts"), location: { start: { line: 0, column: 0 }, end: { line: 0, column: 1 } }, mutatorName: "sample" },
  testFilter: [`${sample}: hangs or works long`],
});

test("an idle hang is a timeout soon after the soft limit; a run working past it survives", { timeout: 120_000 }, async () => {
  // A bundle of the sample from an earlier run of this test would be reused as is: made afresh.
  rmSync(join(root, ".mutation-build/harness", sample.replaceAll("/", "__").replace(/\.ts$/, "")), { recursive: true, force: true });
  // Idle past 0.5 s is a hang (a mutation run's 2 s: the same rule).
  const runner = await startRunner(8_000, 500);
  try {
    let started = Date.now();
    const idle = await runner.mutantRun(mutant("idle"));
    const idleMs = Date.now() - started;
    assert.equal(idle.status, "timeout", JSON.stringify(idle));
    assert.match(idle.reason ?? "", /hung \(\d+ ms, idle\)/);
    // 0.5 s and the one-second look at the processes, far from the 8 s hard limit.
    assert.ok(idleMs < 6_000, `an idle hang took ${idleMs} ms to be called one`);

    started = Date.now();
    const busy = await runner.mutantRun(mutant("busy"));
    assert.equal(busy.status, "survived", JSON.stringify(busy));
    assert.ok(Date.now() - started >= 1_500);
  } finally {
    await runner.dispose();
  }
});

test("a warm run still working at the hard limit goes to a new process: survived if that one runs in time, a timeout if it too runs on", { timeout: 120_000 }, async () => {
  // A 1.5 s hard limit past the first run × 1.5, to keep the test short (a new worker's run of the quick
  // test, once loaded, took 0.3 s at most past its first run × 1.5 at load 14–18: docs/mutation.md, "Speed").
  const runner = await startRunner(1_500);
  try {
    // 3 s of work in the warm worker, none in a new one: the warm run is cut at its limit, the new process passes.
    const slow = await runner.mutantRun(mutant("slow-warm"));
    assert.equal(slow.status, "survived", JSON.stringify(slow));
    const endless = await runner.mutantRun(mutant("endless"));
    assert.equal(endless.status, "timeout", JSON.stringify(endless));
    assert.match(endless.reason ?? "", /hung \(\d+ ms, working\)/);
  } finally {
    await runner.dispose();
  }
});
