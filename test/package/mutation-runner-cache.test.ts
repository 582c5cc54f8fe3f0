// The mutation runner's plugin (scripts/mutation/stryker-runner.mjs) does not trust a warm worker's
// survival: a value cached in module state by an earlier run hides a mutant of the code that computes
// it (src/memory/sqlite/driver.ts's `gcFunction === undefined` made `false` survived so), so a warm
// survivor is decided again by new processes. Driven as Stryker drives it over a sample file.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const sample = "test/package/fixtures/mutation-cache-sample.ts";

type Verdict = { status: string; killedBy?: string[] };
type Runner = {
  init(): Promise<void>;
  dryRun(options: object): Promise<{ status: string; errorMessage?: string }>;
  mutantRun(options: object): Promise<Verdict>;
  dispose(): Promise<void>;
};

const mutant = (id: string) => ({
  activeMutant: { id, fileName: join(root, "src/x.ts"), location: { start: { line: 0, column: 0 }, end: { line: 0, column: 1 } }, mutatorName: "sample" },
  testFilter: [`${sample}: the cached answer`],
});

test("a mutant hidden by a value an earlier run cached in the warm worker is killed by a new process; a harmless one survives", { timeout: 60_000 }, async () => {
  process.chdir(root); // the plugin bundles from the working folder (a sandbox under Stryker)
  rmSync(join(root, ".mutation-build/harness", sample.replaceAll("/", "__").replace(/\.ts$/, "")), { recursive: true, force: true });
  const { AgentloopTestRunner } = (await import(join(root, "scripts/mutation/stryker-runner.mjs"))) as { AgentloopTestRunner: new (options: object, log: object) => Runner };
  const runner = new AgentloopTestRunner({ agentloop: { testFiles: [sample], timeoutMS: 8_000 }, timeoutFactor: 1.5, concurrency: 1 }, { info() {} });
  await runner.init();
  try {
    const dry = await runner.dryRun({});
    assert.equal(dry.status, "complete", dry.errorMessage);
    // The warm worker's first run computes and caches the answer.
    assert.equal((await runner.mutantRun(mutant("harmless"))).status, "survived");
    // Switched on in that worker, the mutant reads the cached answer and passes; a new process fails.
    const hidden = await runner.mutantRun(mutant("cache-check"));
    assert.equal(hidden.status, "killed", JSON.stringify(hidden));
    assert.deepEqual(hidden.killedBy, [`${sample}: the cached answer`]);
    // A true survivor, decided by a new process after warm runs, still survives.
    assert.equal((await runner.mutantRun(mutant("harmless"))).status, "survived");
  } finally {
    await runner.dispose();
  }
});

test("--confirm writes a mutant in as Stryker's tree holds it: an expression parenthesized, a block as is", async () => {
  const { withMutant } = (await import(join(root, "scripts/mutation/confirm.mjs"))) as { withMutant: (source: string, location: object, replacement: string, mutator: string) => string };
  const source = "function f(a, b, c) {\n  if (!a && b && c) return 1;\n}\n";
  // src/mcp/toolset.ts's mutant 463 written by hand without the parentheses was another mutant (`||` binds looser).
  const at = (line: number, column: number, endColumn: number) => ({ start: { line, column }, end: { line, column: endColumn } });
  assert.equal(withMutant(source, at(2, 7, 14), "!a || b", "LogicalOperator"), "function f(a, b, c) {\n  if ((!a || b) && c) return 1;\n}\n");
  assert.equal(withMutant(source, { start: { line: 1, column: 21 }, end: { line: 3, column: 2 } }, "{}", "BlockStatement"), "function f(a, b, c) {}\n");
});

test("--confirm refuses what is not a report, naming it; a report without survivors is written back unchanged", async () => {
  const { mkdtempSync, readFileSync, writeFileSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { main } = (await import(join(root, "scripts/mutation/confirm.mjs"))) as { main: (argv: string[]) => Promise<number> };
  const dir = mkdtempSync(join(tmpdir(), "confirm-"));
  try {
    const errors: string[] = [];
    const error = console.error;
    console.error = (message: string) => errors.push(message);
    try {
      assert.equal(await main(["--confirm", join(dir, "missing.json")]), 2);
      writeFileSync(join(dir, "other.json"), JSON.stringify({ schemaVersion: "1" }));
      assert.equal(await main(["--confirm", join(dir, "other.json")]), 2);
    } finally {
      console.error = error;
    }
    assert.match(errors[0], /missing\.json is not a readable JSON report/);
    assert.match(errors[1], /other\.json is not a Stryker JSON report/);
    const report = { files: { "src/x.ts": { source: "x", mutants: [{ id: "1", status: "Killed", coveredBy: ["0"], killedBy: ["0"] }] } }, testFiles: { "test/x.test.ts": { tests: [{ id: "0", name: "test/x.test.ts: t" }] } } };
    writeFileSync(join(dir, "report.json"), JSON.stringify(report));
    assert.equal(await main(["--confirm", join(dir, "report.json"), "--out", join(dir, "out.json")]), 0);
    assert.deepEqual(JSON.parse(readFileSync(join(dir, "out.json"), "utf8")), report);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
