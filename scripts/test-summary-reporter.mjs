// A node:test reporter that writes, at the end of a run, a JSON summary for scripts/run-tests.mjs to
// print: the counts of tests, each file's time (its top-level tests' durations added up), and the
// failures (the test's path of names, where it is, the error's first lines), every test's duration (50 ms
// or more, for the timeline). Suites and hooks are not
// counted as tests; a suite that failed only because a test in it did is not a failure of its own.

/** The error's message, without node:test's wrapper around a failed test's own error. */
function messageOf(error) {
  const cause = error?.cause ?? error;
  const text = String(cause?.message ?? cause ?? "");
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .slice(0, 5)
    .join("\n");
}

export default async function* summaryReporter(source) {
  const counts = { tests: 0, passed: 0, failed: 0, skipped: 0, todo: 0, cancelled: 0 };
  const fileMs = new Map();
  const failures = [];
  // Every test's (and suite's) duration, for the run's timeline (scripts/test-timeline.mjs).
  const durations = [];
  // The names of the suites a test is in, by nesting level, per file.
  const open = new Map();
  for await (const event of source) {
    if (event.type !== "test:pass" && event.type !== "test:fail" && event.type !== "test:start") continue;
    const data = event.data;
    const file = data.file ?? "?";
    const path = open.get(file) ?? [];
    open.set(file, path);
    if (event.type === "test:start") {
      path.length = data.nesting;
      path.push(data.name);
      continue;
    }
    const details = data.details ?? {};
    if (data.nesting === 0) fileMs.set(file, (fileMs.get(file) ?? 0) + (details.duration_ms ?? 0));
    const names = [...path.slice(0, data.nesting), data.name];
    if ((details.duration_ms ?? 0) >= 50) durations.push({ file, name: names.join(" › "), nesting: data.nesting, ms: Math.round(details.duration_ms) });
    const failureType = details.error?.failureType;
    const isSuite = details.type === "suite";
    if (!isSuite) {
      counts.tests++;
      if (data.skip !== undefined) counts.skipped++;
      else if (data.todo !== undefined) counts.todo++;
      else if (event.type === "test:pass") counts.passed++;
      else if (failureType === "cancelledByParent") counts.cancelled++;
      else counts.failed++;
    }
    if (event.type === "test:fail" && failureType !== "subtestsFailed" && failureType !== "cancelledByParent") {
      // A suite's own failure (a hook, an error thrown at load) counts once among the failures.
      if (isSuite) {
        counts.tests++;
        counts.failed++;
      }
      failures.push({ name: names.join(" › "), location: data.line ? `${file}:${data.line}:${data.column}` : file, message: messageOf(details.error) });
    }
  }
  const files = [...fileMs].map(([file, ms]) => ({ file, ms: Math.round(ms) })).sort((a, b) => b.ms - a.ms);
  yield `${JSON.stringify({ counts, files, failures, durations })}\n`;
}

/**
 * The summary's text: a rule, the counts and the time, the five slowest files, each failure again.
 * `name` turns a file path of the report into the one the reader knows (a bundle → its source).
 */
export function formatSummary(summary, { seconds, files, status, name = (file) => file }) {
  const lines = ["─".repeat(72)];
  if (!summary) {
    lines.push(`# summary: none (the test runner ended with status ${status} before reporting) · ${seconds.toFixed(1)} s`);
    return lines.join("\n");
  }
  const { counts, files: timed, failures } = summary;
  const parts = [`${counts.passed} passed`, `${counts.failed} failed`];
  if (counts.skipped) parts.push(`${counts.skipped} skipped`);
  if (counts.todo) parts.push(`${counts.todo} todo`);
  if (counts.cancelled) parts.push(`${counts.cancelled} cancelled`);
  lines.push(`# ${counts.tests} tests in ${files} files: ${parts.join(", ")} · ${seconds.toFixed(1)} s`);
  if (timed.length > 1) {
    lines.push("# slowest files:");
    for (const { file, ms } of timed.slice(0, 5)) lines.push(`#   ${(ms / 1000).toFixed(1).padStart(6)} s  ${name(file)}`);
  }
  if (failures.length > 0) {
    lines.push(`# failures (${failures.length}):`);
    for (const failure of failures) {
      lines.push(`#   ✗ ${failure.name}`, `#     at ${name(failure.location)}`);
      for (const text of failure.message.split("\n")) lines.push(`#     ${text}`);
    }
  }
  return lines.join("\n");
}
