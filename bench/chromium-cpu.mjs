// The CPU a test file's Chromium uses, under chromium flags side by side (standalone, not in npm run bench).
//
//   node bench/chromium-cpu.mjs [--rounds 2] <test path substring> [name=flags ...]
//   e.g. node bench/chromium-cpu.mjs --rounds 2 test/studio/studio.test base= nogpu=--disable-gpu one-renderer=--renderer-process-limit=1
//
// Each round runs the test file once per configuration (alternated, as the machine is shared), with
// CHROMIUM_PATH and AGENTLOOP_CHROMIUM (the studio's and the UI tests' settings) pointing at a wrapper
// that starts Debian's chromium (CHROMIUM_BIN, /usr/bin/chromium unless set) with the configuration's
// flags added. Every 200 ms it reads /proc for that browser's processes (the browser by its
// environment, the rest by the --user-data-dir playwright gave it) and keeps each one's CPU: the test
// timeline's "children" counts only what the test process waited for, and a renderer forked by
// Chromium's zygote is not, so the timeline misses about half of Chromium's CPU (bench/FINDINGS.md,
// session 25). A process's last 200 ms before it ends can be missed. Prints a row per run (the
// 1-minute load, Chromium's CPU by process type, the test's pass/fail) and, per configuration, the
// median and its ratio to the first configuration's.
import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const args = process.argv.slice(2);
let rounds = 2;
if (args[0] === "--rounds") {
  rounds = Number(args[1]);
  args.splice(0, 2);
}
const [test, ...specs] = args;
if (!test || !Number.isInteger(rounds) || rounds < 1) {
  console.error("usage: node bench/chromium-cpu.mjs [--rounds N] <test path substring> [name=flags ...]");
  process.exit(2);
}
const configs = (specs.length > 0 ? specs : ["base="]).map((spec) => {
  const at = spec.indexOf("=");
  if (at < 1) {
    console.error(`a configuration is name=flags (flags may be empty): ${spec}`);
    process.exit(2);
  }
  return { name: spec.slice(0, at), flags: spec.slice(at + 1) };
});
const chromium = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
const folder = mkdtempSync(join(tmpdir(), "agentloop-chromium-cpu-"));

/** Chromium's processes started under `tag`: their CPU (s) by pid, and their type. */
function sampler(tag) {
  const cpu = new Map();
  const type = new Map();
  const dirs = new Set();
  const tick = () => {
    const seen = [];
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        if (!/^chrom/.test(readFileSync(`/proc/${pid}/comm`, "utf8"))) continue;
        const command = readFileSync(`/proc/${pid}/cmdline`, "utf8");
        const dir = command.match(/--user-data-dir=([^\0 ]+)/)?.[1];
        // The browser has the wrapper's environment; its zygote's children rewrite theirs (their title).
        if (dir && readFileSync(`/proc/${pid}/environ`, "utf8").includes(`AGENTLOOP_CHROMIUM_CPU_TAG=${tag}\0`)) dirs.add(dir);
        if (dir) seen.push([pid, command, dir]);
      } catch {}
    }
    for (const [pid, command, dir] of seen) {
      if (!dirs.has(dir)) continue;
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        cpu.set(pid, (Number(fields[11]) + Number(fields[12])) / 100);
        const sub = command.match(/--utility-sub-type=(\w+)/)?.[1];
        if (!type.has(pid)) type.set(pid, (command.match(/--type=([a-z-]+)/)?.[1] ?? "browser") + (sub ? `:${sub}` : ""));
      } catch {}
    }
  };
  const timer = setInterval(tick, 200);
  return () => {
    tick();
    clearInterval(timer);
    const by = {};
    let total = 0;
    for (const [pid, seconds] of cpu) {
      by[type.get(pid)] = (by[type.get(pid)] ?? 0) + seconds;
      total += seconds;
    }
    return { total, by, processes: cpu.size };
  };
}

const results = new Map(configs.map((config) => [config.name, []]));
for (let round = 1; round <= rounds; round++) {
  for (const config of configs) {
    const tag = `${config.name}-${round}-${process.pid}`;
    const wrapper = join(folder, `${tag}.sh`);
    writeFileSync(wrapper, `#!/bin/sh\nexec ${JSON.stringify(chromium)} ${config.flags} "$@"\n`);
    chmodSync(wrapper, 0o755);
    const stop = sampler(tag);
    const started = performance.now();
    const env = { ...process.env, CHROMIUM_PATH: wrapper, AGENTLOOP_CHROMIUM: wrapper, AGENTLOOP_CHROMIUM_CPU_TAG: tag };
    const child = spawn(process.execPath, ["scripts/run-tests.mjs", test], { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    const code = await new Promise((resolve) => child.on("close", resolve));
    const { total, by, processes } = stop();
    const load = readFileSync("/proc/loadavg", "utf8").split(" ")[0];
    const passed = output.match(/^# pass (\d+)/m)?.[1] ?? "?";
    const failed = output.match(/^# fail (\d+)/m)?.[1] ?? "?";
    results.get(config.name).push(total);
    const parts = Object.entries(by)
      .sort((a, b) => b[1] - a[1])
      .map(([name, seconds]) => `${name} ${seconds.toFixed(2)}`)
      .join(", ");
    console.log(`${config.name.padEnd(14)} round ${round}  load ${load}  chromium ${total.toFixed(2)} s CPU (${processes} processes: ${parts})  test wall ${((performance.now() - started) / 1000).toFixed(1)} s, pass ${passed} fail ${failed}${code === 0 ? "" : `, exit ${code}`}`);
  }
}
rmSync(folder, { recursive: true, force: true });
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const first = median(results.get(configs[0].name));
for (const config of configs) {
  const value = median(results.get(config.name));
  console.log(`# ${config.name}: median ${value.toFixed(2)} s of chromium CPU over ${rounds} rounds, ${(value / first).toFixed(2)}× ${configs[0].name}  (flags: ${config.flags || "none"})`);
}
