// `npm run conformance`: runs every part in scripts/conformance/*.mjs (MCP, A2A, KAOS...), collects
// the JSON result lines each prints ({"suite","version","passed","failed","skipped"}, or
// {"suite","version","skip"} when something it needs is missing) and prints a table.
// Not part of `npm test`: the suites come from outside (the A2A TCK is a checkout of your own).
// Exit code 1 when a suite that ran has a failure that is agentloop's.
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const partsDir = join(root, "scripts", "conformance");
const only = process.argv.slice(2);
const parts = readdirSync(partsDir)
  .filter((name) => name.endsWith(".mjs"))
  .filter((name) => only.length === 0 || only.some((filter) => name.includes(filter)))
  .sort();

/** Runs one part; its stderr streams through (prefixed), its stdout is searched for result lines. */
function runPart(name) {
  return new Promise((resolvePromise) => {
    const started = Date.now();
    const child = spawn(process.execPath, [join(partsDir, name)], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => process.stderr.write(chunk));
    child.on("close", (code) => {
      const results = [];
      for (const line of stdout.split("\n")) {
        const trimmed = line.trim();
        if (!trimmed.startsWith("{")) continue;
        try {
          const value = JSON.parse(trimmed);
          if (value && typeof value.suite === "string") results.push(value);
        } catch {
          // not a result line
        }
      }
      if (results.length === 0) results.push({ suite: name.replace(/\.mjs$/, ""), version: "?", skip: `printed no result line (exit ${code})` });
      resolvePromise({ name, results, seconds: Math.round((Date.now() - started) / 1000) });
    });
  });
}

const rows = [];
for (const part of parts) {
  process.stderr.write(`── ${part}\n`);
  const { results, seconds } = await runPart(part);
  for (const result of results) rows.push({ ...result, seconds });
}

const cell = (value) => (value === undefined ? "" : String(value));
const header = ["suite", "version", "passed", "failed", "skipped", "notes"];
const table = rows.map((row) => {
  if (row.skip) return [row.suite, row.version, "-", "-", "-", `not run: ${row.skip}`];
  const notOurs = Array.isArray(row.failures) ? row.failures.filter((failure) => failure.notOurs).length : 0;
  const note = notOurs > 0 ? `${notOurs} of ${row.failed} failures are not agentloop's (see below)` : "";
  return [row.suite, row.version, cell(row.passed), cell(row.failed), cell(row.skipped), note];
});
const widths = header.map((title, column) => Math.max(title.length, ...table.map((line) => line[column].length)));
const format = (line) => `| ${line.map((value, column) => value.padEnd(widths[column])).join(" | ")} |`;
console.log(`\nConformance, ${new Date().toISOString().slice(0, 10)} (Node ${process.version})\n`);
console.log(format(header));
console.log(`|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`);
for (const line of table) console.log(format(line));
for (const row of rows) {
  for (const failure of row.failures ?? []) {
    const test = typeof failure === "string" ? failure : failure.test;
    const why = typeof failure === "string" ? "" : failure.notOurs ? ` (not agentloop's: ${failure.notOurs})` : "";
    console.log(`  ${row.suite} ${row.version}: ${test}${why}`);
  }
}
const oursFailed = rows.some((row) => !row.skip && (typeof row.ours === "number" ? row.ours > 0 : row.failed > 0));
process.exit(oursFailed ? 1 : 0);
