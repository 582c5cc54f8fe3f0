// `npm test`'s closing summary (scripts/test-summary-reporter.mjs): node's test runner run as a child
// process on a fixture with one of each outcome, its summary read back and printed. Its timeline
// (AGENTLOOP_TEST_TIMELINE: scripts/record-duration.mjs, scripts/test-timeline.mjs) and the cleanup
// of the folders killed runs leave (scripts/test-cache.mjs).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
// @ts-expect-error: a plain .mjs script without types
import { formatSummary } from "../../scripts/test-summary-reporter.mjs";
// @ts-expect-error: a plain .mjs script without types
import { formatTimeline } from "../../scripts/test-timeline.mjs";
// @ts-expect-error: a plain .mjs script without types
import { removeLeftovers } from "../../scripts/test-cache.mjs";

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

test("the timeline: each test process's start, end, own CPU and its children's, the timers that ran out, and each test's duration", () => {
  const scratch = mkdtempSync(join(tmpdir(), "agentloop-timeline-"));
  try {
    const rows = join(scratch, "timeline.jsonl");
    const destination = join(scratch, "summary.json");
    const env: NodeJS.ProcessEnv = { ...process.env, AGENTLOOP_TEST_TIMELINE: rows };
    delete env.NODE_TEST_CONTEXT;
    delete env.AGENTLOOP_TEST_TIMES;
    const sample = fileURLToPath(new URL("./fixtures/timeline-sample.test.mjs", import.meta.url));
    const recorder = fileURLToPath(new URL("../../scripts/record-duration.mjs", import.meta.url));
    const before = Date.now();
    const run = spawnSync(process.execPath, ["--import", recorder, "--test", `--test-reporter=${reporter}`, `--test-reporter-destination=${destination}`, sample], { encoding: "utf8", env, timeout: 60_000 });
    assert.equal(run.status, 0, run.stderr);
    const processes = readFileSync(rows, "utf8").trim().split("\n").map((line) => JSON.parse(line));
    assert.equal(processes.length, 1, "one row: the test process (not node --test's own)");
    const [row] = processes;
    assert.match(row.file, /timeline-sample\.test\.mjs$/);
    assert.ok(row.start >= before - 1000 && row.end <= Date.now() && row.end - row.start >= 300, JSON.stringify(row));
    assert.ok(row.cpu > 0, "the process's own CPU");
    assert.ok(row.children >= 150, `the child's 200 ms of CPU: ${row.children}`);
    // The 300 ms sleep, where the fixture set it; the cleared timer is no wait.
    assert.deepEqual(
      row.timers.map((timer: { where: string; ms: number; fired: number }) => [timer.where.replace(/^.*\//, "").replace(/:\d+:\d+\)?$/, ""), timer.ms, timer.fired]),
      [["timeline-sample.test.mjs", 300, 1]],
    );
    const durations = JSON.parse(readFileSync(destination, "utf8")).durations;
    const test = durations.find((entry: { name: string }) => entry.name === "waits, then a busy child");
    assert.ok(test.ms >= 300, JSON.stringify(durations));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});

test("the timeline's report: the run, the files still running once the last has started, the largest waits with their longest tests", () => {
  const t0 = 1_000_000;
  const text: string = formatTimeline(
    {
      processes: [
        { file: "test/a.test.ts", start: t0, end: t0 + 10_000, cpu: 1_000, children: 2_000, timers: [{ where: "test/a.test.ts:3:5", ms: 4_000, fired: 2 }] },
        { file: "test/b.test.ts", start: t0 + 1_000, end: t0 + 4_000, cpu: 2_500, children: 0 },
        { file: "group-1", files: ["test/c.test.ts", "test/d.test.ts"], start: t0 + 5_000, end: t0 + 8_000, cpu: 1_000, children: 0 },
      ],
      tests: [
        { file: "test/a.test.ts", name: "suite", nesting: 0, ms: 6_000 },
        { file: "test/a.test.ts", name: "suite › slow", nesting: 1, ms: 5_000 },
        { file: "test/a.test.ts", name: "quick", nesting: 0, ms: 100 },
        { file: "test/d.test.ts", name: "d's test", nesting: 0, ms: 1_500 },
      ],
    },
    { rows: 2, cores: 2 },
  );
  const lines = text.split("\n");
  assert.equal(lines[0], "# timeline: 3 test processes over 10.0 s; their CPU 6.5 s (children 2.0 s), 33 % of 2 cores");
  assert.equal(lines[1], "# the tail: the last file started at 5.0 s; running after it (until 10.0 s):");
  assert.match(lines[2]!, /0\.0 s →\s+10\.0 s\s+cpu\s+3\.0 s\s+test\/a\.test\.ts$/);
  assert.match(lines[3]!, /5\.0 s →\s+8\.0 s\s+cpu\s+1\.0 s\s+group-1 \(2 files\)$/);
  assert.equal(lines[4], "# the waits (wall − CPU of the process and its children), the largest 2:");
  assert.match(lines[5]!, /wait\s+7\.0 s\s+wall\s+10\.0 s\s+cpu\s+1\.0 s \+ children\s+2\.0 s\s+test\/a\.test\.ts$/);
  // A suite's tests, not the suite that holds them.
  assert.match(lines[6]!, /^#\s+5\.0 s {2}suite › slow$/);
  assert.match(lines[7]!, /^#\s+0\.1 s {2}quick$/);
  assert.match(lines[8]!, /^#\s+4\.0 s {2}timers run out \(2\) set at test\/a\.test\.ts:3:5$/);
  assert.match(lines[9]!, /wait\s+2\.0 s\s+wall\s+3\.0 s .*group-1 \(2 files\)$/);
  assert.match(lines[10]!, /^#\s+1\.5 s {2}test\/d\.test\.ts: d's test$/);
  assert.equal(lines[11], "# the timers that ran out (100 ms or more, in the test processes), by where they were set, the largest 2:");
  assert.match(lines[12]!, /^#\s+4\.0 s {2}×2\s+test\/a\.test\.ts:3:5 {2}\(test\/a\.test\.ts\)$/);
  assert.equal(lines.length, 13, text);
});

test("the cache's leftovers: the folders of dead runs and test processes go, a live process's and others stay", () => {
  const cache = mkdtempSync(join(tmpdir(), "agentloop-cache-"));
  try {
    const ended = spawnSync(process.execPath, ["-e", "console.log(process.pid)"], { encoding: "utf8" });
    const dead = Number(ended.stdout.trim());
    const names = [`children-${dead}`, `run-${dead}-1795867960342`, `groups-${dead}-1795867960342`, `children-${process.pid}`, `run-${process.pid}-1795867960342`, "agentloop-other"];
    for (const name of names) mkdirSync(join(cache, name, "inner"), { recursive: true });
    removeLeftovers(cache);
    assert.deepEqual(
      names.filter((name) => existsSync(join(cache, name))),
      [`children-${process.pid}`, `run-${process.pid}-1795867960342`, "agentloop-other"],
    );
    removeLeftovers(join(cache, "missing"));
  } finally {
    rmSync(cache, { recursive: true, force: true });
  }
});
