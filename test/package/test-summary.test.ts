// `npm test`'s closing summary (scripts/test-summary-reporter.mjs): node's test runner run as a child
// process on a fixture with one of each outcome, its summary read back and printed.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
// @ts-expect-error: a plain .mjs script without types
import { formatSummary } from "../../scripts/test-summary-reporter.mjs";

const reporter = new URL("../../scripts/test-summary-reporter.mjs", import.meta.url).href;
const fixture = fileURLToPath(new URL("./fixtures/summary-sample.mjs", import.meta.url));

test("the summary counts each outcome, times the files and repeats each failure with where it is and why", () => {
  const scratch = mkdtempSync(join(tmpdir(), "agentloop-summary-"));
  try {
    const destination = join(scratch, "summary.json");
    // A test runner of its own, not a child reporting to this one (node marks its test processes so).
    const env = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    const run = spawnSync(process.execPath, ["--test", `--test-reporter=${reporter}`, `--test-reporter-destination=${destination}`, fixture], { encoding: "utf8", env, timeout: 60_000 });
    assert.equal(run.status, 1, "the fixture fails");
    const summary = JSON.parse(readFileSync(destination, "utf8"));
    assert.deepEqual(summary.counts, { tests: 6, passed: 1, failed: 2, skipped: 1, todo: 1, cancelled: 1 });
    assert.equal(summary.files.length, 1);
    assert.equal(summary.files[0].file, fixture);
    assert.deepEqual(
      summary.failures.map((failure: { name: string }) => failure.name),
      ["outer › inner › fails with a message", "broken hook"],
    );
    assert.match(summary.failures[0].location, /summary-sample\.mjs:8:5$/);
    assert.match(summary.failures[0].message, /2 !== 3/);
    assert.match(summary.failures[1].message, /the fixture's hook broke/);

    const text = formatSummary(summary, { seconds: 2.5, files: 1, status: 1, name: (file: string) => file.replace(/^.*\//, "") });
    const lines: string[] = text.split("\n");
    assert.equal(lines[1], "# 6 tests in 1 files: 1 passed, 2 failed, 1 skipped, 1 todo, 1 cancelled · 2.5 s");
    assert.ok(lines.includes("#   ✗ outer › inner › fails with a message"));
    assert.ok(lines.includes("#     at summary-sample.mjs:8:5"));
    assert.ok(lines.includes("#   ✗ broken hook"));
    assert.ok(lines.some((line) => line.includes("the fixture's hook broke")));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

test("without a summary (the runner died first) it says so, with the status", () => {
  assert.match(formatSummary(undefined, { seconds: 1, files: 3, status: 7 }), /# summary: none \(the test runner ended with status 7 before reporting\)/);
});
