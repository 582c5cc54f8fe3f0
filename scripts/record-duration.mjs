// Loaded into every test process by scripts/run-tests.mjs when AGENTLOOP_TEST_TIMES names a file:
// appends this process's wall time (start to exit, seconds) and its test file to it (a group of small
// files in one process is not written: the runner keeps their times from a run that ran them alone,
// AGENTLOOP_TEST_GROUPS=0). Written to scripts/test-durations.txt, these are what the runner orders
// the files by (the longest start first) and groups them by.
import { appendFileSync } from "node:fs";

const out = process.env.AGENTLOOP_TEST_TIMES;
const entry = process.argv[1] ?? "";
if (out && /\.test\.m?[jt]s$/.test(entry) && !/\/group-\d+\.test\.m?[jt]s$/.test(entry)) {
  const compiled = entry.match(/\/tests\/\d+\/(.+)\.mjs$/);
  const file = compiled ? `${compiled[1]}.ts` : entry.replace(`${process.cwd()}/`, "");
  process.once("exit", () => appendFileSync(out, `${((Date.now() - performance.timeOrigin) / 1000).toFixed(1)}\t${file}\n`));
}
