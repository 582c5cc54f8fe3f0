// The timeline of a test run (scripts/run-tests.mjs with AGENTLOOP_TEST_TIMELINE=<file>): each test
// process's start, end and CPU (its own and its finished children's, scripts/record-duration.mjs),
// and every test's duration (scripts/test-summary-reporter.mjs). `formatTimeline` prints what bounds
// the run's wall time:
// - the run: wall, CPU, and how busy it kept the cores;
// - the tail: once the last file has started, the files still running (the run ends with the last);
// - the waits: the files whose wall most exceeds their CPU (timers, polls, sleeps, a child's start,
//   or the CPU taken by the other processes on a loaded machine), with their longest tests, which in
//   a file run one after another (its serial chain), and the timers that ran out in it;
// - the clock waits: the timers of 100 ms or more that ran out, by where they were set.
// `node scripts/test-timeline.mjs <timeline.json> [rows]` prints a saved one again.
import { readFileSync } from "node:fs";
import { cpus } from "node:os";

const s = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** The timeline's report (text). `timeline`: { processes: [{ file, start, end, cpu, children, files? }], tests: [{ file, name, nesting, ms }] }. */
export function formatTimeline(timeline, { rows = 12, cores = cpus().length } = {}) {
  const processes = [...timeline.processes].sort((a, b) => a.start - b.start);
  if (processes.length === 0) return "# timeline: no test process recorded";
  const t0 = Math.min(...processes.map((p) => p.start));
  const t1 = Math.max(...processes.map((p) => p.end));
  const cpu = processes.reduce((sum, p) => sum + p.cpu + p.children, 0);
  const lines = [
    `# timeline: ${processes.length} test processes over ${s(t1 - t0)}; their CPU ${s(cpu)} (children ${s(processes.reduce((sum, p) => sum + p.children, 0))}), ${Math.round((100 * cpu) / ((t1 - t0) * cores))} % of ${cores} cores`,
  ];
  const lastStart = Math.max(...processes.map((p) => p.start));
  lines.push(`# the tail: the last file started at ${s(lastStart - t0)}; running after it (until ${s(t1 - t0)}):`);
  for (const p of processes.filter((p) => p.end > lastStart).sort((a, b) => b.end - a.end)) {
    lines.push(`#   ${s(p.start - t0).padStart(8)} → ${s(p.end - t0).padStart(8)}  cpu ${s(p.cpu + p.children).padStart(7)}  ${label(p)}`);
  }
  const testsOf = new Map();
  for (const test of timeline.tests ?? []) {
    const list = testsOf.get(test.file) ?? [];
    list.push(test);
    testsOf.set(test.file, list);
  }
  lines.push(`# the waits (wall − CPU of the process and its children), the largest ${rows}:`);
  const waits = processes.map((p) => ({ p, wall: p.end - p.start, wait: p.end - p.start - p.cpu - p.children })).sort((a, b) => b.wait - a.wait);
  for (const { p, wall, wait } of waits.slice(0, rows)) {
    lines.push(`#   wait ${s(wait).padStart(7)}  wall ${s(wall).padStart(7)}  cpu ${s(p.cpu).padStart(6)} + children ${s(p.children).padStart(6)}  ${label(p)}`);
    const tests = (p.files ?? [p.file]).flatMap((file) => testsOf.get(file) ?? []);
    const longest = tests
      .filter((test) => !tests.some((other) => other !== test && other.file === test.file && other.name.startsWith(`${test.name} › `)))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 3);
    for (const test of longest) lines.push(`#       ${s(test.ms).padStart(7)}  ${p.files ? `${test.file}: ` : ""}${test.name}`);
    for (const timer of (p.timers ?? []).slice(0, 2)) lines.push(`#       ${s(timer.ms).padStart(7)}  timers run out (${timer.fired}) set at ${timer.where}`);
  }
  // The clock waits of the whole run: timers of 100 ms or more that ran out in the test processes.
  const sites = new Map();
  for (const p of processes) {
    for (const timer of p.timers ?? []) {
      const site = sites.get(timer.where) ?? { ms: 0, fired: 0, files: new Set() };
      site.ms += timer.ms;
      site.fired += timer.fired;
      site.files.add(p.file);
      sites.set(timer.where, site);
    }
  }
  if (sites.size > 0) {
    lines.push(`# the timers that ran out (100 ms or more, in the test processes), by where they were set, the largest ${rows}:`);
    for (const [where, site] of [...sites].sort((a, b) => b[1].ms - a[1].ms).slice(0, rows)) {
      lines.push(`#   ${s(site.ms).padStart(8)}  ×${String(site.fired).padEnd(5)} ${where}  (${[...site.files].slice(0, 3).join(", ")}${site.files.size > 3 ? ", …" : ""})`);
    }
  }
  return lines.join("\n");
}

function label(p) {
  return p.files ? `${p.file} (${p.files.length} files)` : p.file;
}

// Run as a script (not imported; a test's bundle that imports this module has its own import.meta.url).
if (/[\\/]test-timeline\.mjs$/.test(process.argv[1] ?? "")) {
  const [path, rows] = process.argv.slice(2);
  if (!path) {
    console.error("usage: node scripts/test-timeline.mjs <timeline.json> [rows]");
    process.exit(2);
  }
  console.log(formatTimeline(JSON.parse(readFileSync(path, "utf8")), { rows: rows ? Number(rows) : undefined }));
}
