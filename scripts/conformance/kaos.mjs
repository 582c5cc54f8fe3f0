// KAOS conformance: our tests written from what KAOS's current runtime does at the HTTP level
// (github.com/axsaucedo/kaos, data-plane/kaos-framework, ported from commit 43f4851 of 2026-01-31),
// run against `agentloop serve` processes. Needs nothing outside this repository.
// Prints {"suite","version","passed","failed","skipped"} as its last line.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SUITE = "kaos-runtime";
const VERSION = "kaos-framework 43f4851 (2026-01-31)";

const dir = join("test", "conformance", "kaos");
const files = readdirSync(join(root, dir)).filter((name) => name.endsWith(".test.ts")).map((name) => join(dir, name));
const result = spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-reporter=tap", "--test-timeout=180000", ...files], {
  cwd: root,
  encoding: "utf8",
  maxBuffer: 64 * 1024 * 1024,
});
process.stderr.write(result.stdout.split("\n").filter((line) => /^\s*(not ok|ok) /.test(line)).join("\n") + "\n");
const count = (name) => Number(new RegExp(`^# ${name} (\\d+)$`, "m").exec(result.stdout)?.[1] ?? Number.NaN);
const passed = count("pass");
const failed = count("fail") + (count("cancelled") || 0);
const skipped = count("skipped") + (count("todo") || 0);
if (Number.isNaN(passed)) {
  process.stderr.write(result.stdout.slice(-4000) + result.stderr.slice(-4000));
  process.stdout.write(`${JSON.stringify({ suite: SUITE, version: VERSION, skip: `the tests did not run (exit ${result.status})` })}\n`);
} else {
  process.stdout.write(`${JSON.stringify({ suite: SUITE, version: VERSION, passed, failed, skipped })}\n`);
}
