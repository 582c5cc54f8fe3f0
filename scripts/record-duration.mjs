// Loaded into every test process by scripts/run-tests.mjs when AGENTLOOP_TEST_TIMES or
// AGENTLOOP_TEST_TIMELINE names a file.
// - AGENTLOOP_TEST_TIMES: appends this process's wall time (start to exit, seconds) and its test file
//   (a group of small files in one process is not written: the runner keeps their times from a run
//   that ran them alone, AGENTLOOP_TEST_GROUPS=0). Written to scripts/test-durations.txt, these are
//   what the runner orders the files by (the longest start first) and groups them by.
// - AGENTLOOP_TEST_TIMELINE: appends one JSON line per test process (groups too): its file, its start
//   and end (epoch ms), its own CPU (user+system, ms) and its finished children's (ms, from
//   /proc/self/stat: the CLI children, servers and tools it started and waited for), and the timers
//   of 100 ms or more that ran out, by where they were set (clock waits, whatever the load). The
//   runner turns them into the run's timeline (scripts/test-timeline.mjs).
import { appendFileSync, readFileSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { promisify } from "node:util";

const require = createRequire(import.meta.url);

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
/**
 * The timers of 100 ms or more that ran out (not cleared) in this process, by where they were set
 * (the first frame outside node and node_modules, else the first frame): waits on a clock (sleeps,
 * polls, timeouts that fired), whatever the machine's load. Global setTimeout/setInterval only
 * (not node:timers/promises), and only this process (not its children).
 */
const timers = new Map();
function watchTimers() {
  const SELF = /record-duration\.mjs/;
  const whereSet = () => {
    const frames = (new Error().stack ?? "").split("\n").slice(1).map((line) => line.trim().replace(/^at /, ""));
    // Frames with a place (not `new Promise (<anonymous>)`), this module's left out.
    const outside = frames.filter((frame) => !SELF.test(frame) && /:\d+:\d+\)?$/.test(frame));
    // The repository's own code: the runner's bundles (below node_modules/.cache) map back to it.
    const isOwn = (frame) => !frame.includes("/node_modules/") || frame.includes("/node_modules/.cache/agentloop-test/");
    const relative = (frame) => frame.replace(`file://${process.cwd()}/`, "").replace(`${process.cwd()}/`, "");
    // The code that set it; a timer only node's internals set (undici's clock) is no wait of the tests.
    const setter = outside.find((frame) => !frame.includes("node:"));
    if (!setter || isOwn(setter)) return setter && relative(setter);
    // An npm package's (DBOS's background polls, pg-pool's idle timeouts): named as the package, from the own code that led there.
    const name = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(setter)?.[1] ?? "?";
    const own = outside.find((frame) => !frame.includes("node:") && isOwn(frame));
    return `${name}${own ? ` (from ${relative(own)})` : ""}`;
  };
  const count = (where, ms) => {
    const entry = timers.get(where) ?? { ms: 0, fired: 0 };
    entry.ms += ms;
    entry.fired++;
    timers.set(where, entry);
  };
  const { setTimeout: originalTimeout, setInterval: originalInterval } = globalThis;
  const promisified = originalTimeout[promisify.custom];
  globalThis.setTimeout = function setTimeout(callback, delay, ...args) {
    if (typeof callback !== "function" || !(Number(delay) >= 100)) return originalTimeout(callback, delay, ...args);
    const where = whereSet();
    if (!where) return originalTimeout(callback, delay, ...args);
    return originalTimeout((...inner) => {
      count(where, Number(delay));
      return callback(...inner);
    }, delay, ...args);
  };
  globalThis.setTimeout[promisify.custom] = promisified;
  globalThis.setInterval = function setInterval(callback, delay, ...args) {
    if (typeof callback !== "function" || !(Number(delay) >= 100)) return originalInterval(callback, delay, ...args);
    const where = whereSet();
    if (!where) return originalInterval(callback, delay, ...args);
    return originalInterval((...inner) => {
      count(where, Number(delay));
      return callback(...inner);
    }, delay, ...args);
  };
  // node:timers/promises' setTimeout (`await sleep(ms)`), in the ES modules that import it too.
  const promises = require("node:timers/promises");
  const originalSleep = promises.setTimeout;
  promises.setTimeout = function setTimeout(delay, ...args) {
    const where = Number(delay) >= 100 ? whereSet() : undefined;
    const sleeping = originalSleep(delay, ...args);
    if (!where) return sleeping;
    return sleeping.then((value) => {
      count(where, Number(delay));
      return value;
    });
  };
  syncBuiltinESMExports();
}

if (timeline && isTest) {
  watchTimers();
  process.once("exit", () => {
    const cpu = process.cpuUsage();
    const row = {
      file,
      start: Math.round(performance.timeOrigin),
      end: Date.now(),
      cpu: Math.round((cpu.user + cpu.system) / 1000),
      children: Math.round(childrenCpuMs()),
      timers: [...timers]
        .map(([where, { ms, fired }]) => ({ where, ms, fired }))
        .sort((a, b) => b.ms - a.ms)
        .slice(0, 8),
    };
    appendFileSync(timeline, `${JSON.stringify(row)}\n`);
  });
}
