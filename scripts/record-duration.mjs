// Loaded into every test process by scripts/run-tests.mjs when AGENTLOOP_TEST_TIMES or
// AGENTLOOP_TEST_TIMELINE names a file.
// - AGENTLOOP_TEST_TIMES: appends this process's wall time (start to exit, seconds) and its test file
//   (a group of small files in one process is not written: the runner keeps their times from a run
//   that ran them alone, AGENTLOOP_TEST_GROUPS=0). Written to scripts/test-durations.txt, these are
//   what the runner orders the files by (the longest start first) and groups them by.
// - AGENTLOOP_TEST_TIMELINE: appends one JSON line per test process (groups too): its file, its start
//   and end (epoch ms), its own CPU (user+system, ms) and its finished children's (ms, from
//   /proc/self/stat: the CLI children, servers and tools it started and waited for). The runner turns
//   them into the run's timeline (scripts/test-timeline.mjs).
import { appendFileSync, readFileSync } from "node:fs";

const out = process.env.AGENTLOOP_TEST_TIMES;
const timeline = process.env.AGENTLOOP_TEST_TIMELINE;
const entry = process.argv[1] ?? "";
const group = entry.match(/\/(group-\d+)\.test\.m?[jt]s$/);
const compiled = entry.match(/\/tests\/\d+\/(.+)\.mjs$/);
const file = group ? group[1] : compiled ? `${compiled[1]}.ts` : entry.replace(`${process.cwd()}/`, "");
const isTest = /\.test\.m?[jt]s$/.test(entry);

/** The CPU of this process's children that ended and were waited for (ms), or 0 where /proc is missing. */
function childrenCpuMs() {
  try {
    // Fields after the command's closing parenthesis: state is the 3rd field, cutime and cstime the 16th and 17th.
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
  } catch {
    return 0;
  }
}

if (out && isTest && !group) {
  process.once("exit", () => appendFileSync(out, `${((Date.now() - performance.timeOrigin) / 1000).toFixed(1)}\t${file}\n`));
}
if (timeline && isTest) {
  process.once("exit", () => {
    const cpu = process.cpuUsage();
    const row = {
      file,
      start: Math.round(performance.timeOrigin),
      end: Date.now(),
      cpu: Math.round((cpu.user + cpu.system) / 1000),
      children: Math.round(childrenCpuMs()),
    };
    appendFileSync(timeline, `${JSON.stringify(row)}\n`);
  });
}
