// `npm run mutation -- --report` / scripts/mutation/scores.mjs: the score per folder and file merged
// from several Stryker JSON reports, a later run of a file replacing an earlier one (docs/mutation.md).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const scores = fileURLToPath(new URL("../../scripts/mutation/scores.mjs", import.meta.url));
const wrapper = fileURLToPath(new URL("../../scripts/mutation.mjs", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "agentloop-mutation-scores-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

function run(script: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [script, ...args], { encoding: "utf8" }, (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }));
  });
}

const mutants = (statuses: Record<string, number>) => Object.entries(statuses).flatMap(([status, count]) => Array.from({ length: count }, () => ({ status })));

/**
 * Writes a report with the given files' mutant statuses, modified `age` seconds ago. Files named in
 * `carried` are written as an incremental run writes the files it did not mutate (each mutant's id
 * Stryker's identifying key), the others as measured (numbered ids).
 */
function report(path: string, files: Record<string, Record<string, number>>, age: number, carried: string[] = []) {
  const entry = (file: string, statuses: Record<string, number>) => ({
    language: "typescript",
    source: "",
    mutants: mutants(statuses).map((mutant, index) => ({ ...mutant, id: carried.includes(file) ? `${file}@${index + 1}:0-${index + 1}:4\nBooleanLiteral: true` : String(index) })),
  });
  const body = { schemaVersion: "1.0", thresholds: { high: 80, low: 60 }, files: Object.fromEntries(Object.entries(files).map(([file, statuses]) => [file, entry(file, statuses)])) };
  writeFileSync(path, JSON.stringify(body));
  const when = Date.now() / 1000 - age;
  utimesSync(path, when, when);
}

/** The printed rows: name → [mutants, killed, timed out, survived, no coverage, other, score]. */
function rows(stdout: string) {
  const table = new Map<string, string[]>();
  for (const line of stdout.split("\n").slice(2)) {
    const cells = line.trim().split(/\s{2,}/);
    if (cells.length === 8) table.set(cells[0] ?? "", cells.slice(1));
  }
  return table;
}

test("reports merged per folder and file: a later run of a file replaces the earlier one, a folder's reports are read, incremental files left out", async () => {
  const folder = join(scratch, "merge");
  mkdirSync(folder);
  // The older run: result.ts all killed, config.ts with survivors, a memory file.
  report(join(folder, "a-old.json"), { "src/mcp/result.ts": { Killed: 10 }, "src/mcp/config.ts": { Killed: 6, Survived: 4 }, "src/memory/history.ts": { Killed: 7, Timeout: 1, NoCoverage: 2 } }, 600);
  // The newer run of config.ts (named first: the time of the report decides, not its name).
  report(join(folder, "0-new.json"), { "src/mcp/config.ts": { Killed: 8, Timeout: 1, Survived: 1, CompileError: 2 } }, 60);
  // Stryker's incremental file beside a report: the same run again, never counted.
  report(join(folder, "src-mcp.incremental.json"), { "src/mcp/result.ts": { Survived: 10 } }, 0);
  const { code, stdout, stderr } = await run(scores, [folder]);
  assert.equal(code, 0, stderr);
  assert.match(stdout, /from 2 report\(s\)/);
  const table = rows(stdout);
  assert.deepEqual(table.get("config.ts"), ["12", "8", "1", "1", "0", "2", "90.0 %"]);
  assert.deepEqual(table.get("result.ts"), ["10", "10", "0", "0", "0", "0", "100.0 %"]);
  assert.deepEqual(table.get("src/mcp"), ["22", "18", "1", "1", "0", "2", "95.0 %"]);
  assert.deepEqual(table.get("src/memory"), ["10", "7", "1", "0", "2", "0", "80.0 %"]);
  assert.deepEqual(table.get("all"), ["32", "25", "2", "1", "2", "2", "90.0 %"]);
  // The folders in order, each followed by its files.
  const names = [...table.keys()];
  assert.deepEqual(names, ["src/mcp", "config.ts", "result.ts", "src/memory", "history.ts", "all"]);
});

test("what an incremental run carried over of files it did not mutate never replaces a run of them; it counts for a file no run measured", async () => {
  const folder = join(scratch, "carried");
  mkdirSync(folder);
  // One engineer's run of protocol-post.ts (newer results), then another's later incremental run of runs.ts
  // carrying older results of protocol-post.ts and of chat-request.ts (measured by no report here).
  report(join(folder, "one.json"), { "src/server/routes/protocol-post.ts": { Killed: 9, Survived: 1 } }, 600);
  report(
    join(folder, "two.json"),
    { "src/server/runs.ts": { Killed: 4 }, "src/server/routes/protocol-post.ts": { Killed: 5, Survived: 5 }, "src/server/chat-request.ts": { Killed: 3, Survived: 1 } },
    60,
    ["src/server/routes/protocol-post.ts", "src/server/chat-request.ts"],
  );
  const { code, stdout, stderr } = await run(scores, [folder]);
  assert.equal(code, 0, stderr);
  const table = rows(stdout);
  assert.deepEqual(table.get("routes/protocol-post.ts"), ["10", "9", "0", "1", "0", "0", "90.0 %"]);
  assert.deepEqual(table.get("chat-request.ts"), ["4", "3", "0", "1", "0", "0", "75.0 %"]);
  assert.deepEqual(table.get("runs.ts"), ["4", "4", "0", "0", "0", "0", "100.0 %"]);
});

test("a file in a subfolder counts for its measured folder; --markdown prints README's table rows; --report on the wrapper runs nothing but the merge", async () => {
  const file = join(scratch, "routes.json");
  report(file, { "src/server/routes/approvals.ts": { Killed: 3, Survived: 1 } }, 0);
  const plain = rows((await run(scores, [file])).stdout);
  assert.deepEqual(plain.get("src/server"), ["4", "3", "0", "1", "0", "0", "75.0 %"]);
  assert.deepEqual(plain.get("routes/approvals.ts"), ["4", "3", "0", "1", "0", "0", "75.0 %"]);
  const markdown = await run(wrapper, ["--report", file, "--markdown"]);
  assert.equal(markdown.code, 0, markdown.stderr);
  assert.match(markdown.stdout, /^\| \*\*src\/server\*\* \| 4 \| 3 \| 0 \| 1 \| 0 \| 0 \| 75\.0 % \|$/m);
  assert.match(markdown.stdout, /^\| `routes\/approvals\.ts` \| 4 \| 3 \| 0 \| 1 \| 0 \| 0 \| 75\.0 % \|$/m);
});

test("bad input is refused naming the problem", async () => {
  const notJson = join(scratch, "broken.json");
  writeFileSync(notJson, "{ not json");
  const noFiles = join(scratch, "other.json");
  writeFileSync(noFiles, JSON.stringify({ schemaVersion: "1.0" }));
  const noMutants = join(scratch, "nomutants.json");
  writeFileSync(noMutants, JSON.stringify({ files: { "src/a.ts": { source: "" } } }));
  const empty = join(scratch, "empty");
  mkdirSync(empty);
  const cases: [string[], RegExp][] = [
    [[], /name the Stryker JSON reports/],
    [[join(scratch, "missing.json")], /missing\.json: no such file or folder/],
    [[notJson], /broken\.json: not a JSON report/],
    [[noFiles], /other\.json: not a Stryker report \(no "files" map\)/],
    [[noMutants], /src\/a\.ts has no "mutants" list/],
    [[empty], /no Stryker JSON report in .*empty/],
    [[noFiles, "--colour"], /unknown option --colour/],
  ];
  for (const [args, message] of cases) {
    const { code, stdout, stderr } = await run(scores, args);
    assert.equal(code, 2, `${args.join(" ")}: ${stdout}`);
    assert.match(stderr, message);
    assert.equal(stdout, "");
  }
});

test("--survivors prints each undetected mutant with its place and the lines as mutated: two mutants at one column told apart", async () => {
  const source = 'if (typeof value === "object" && value !== null) {\n  freeze(value);\n}\n';
  const file = join(scratch, "survivors.json");
  const at = (line: number, column: number) => ({ line, column });
  const body = {
    schemaVersion: "1.0",
    files: {
      "src/memory/x.ts": {
        language: "typescript",
        source,
        mutants: [
          { id: "2", mutatorName: "ConditionalExpression", replacement: "true", status: "Survived", location: { start: at(1, 5), end: at(1, 30) } },
          { id: "1", mutatorName: "ConditionalExpression", replacement: "true", status: "Killed", location: { start: at(1, 5), end: at(1, 48) } },
          { id: "3", mutatorName: "BlockStatement", replacement: "{}", status: "NoCoverage", location: { start: at(1, 50), end: at(3, 2) } },
        ],
      },
    },
  };
  writeFileSync(file, JSON.stringify(body));
  const { code, stdout, stderr } = await run(scores, [file, "--survivors"]);
  assert.equal(code, 0, stderr);
  const listed = stdout.slice(stdout.indexOf("# mutants no test detected")).split("\n").slice(1).join("\n");
  assert.equal(
    listed.trim(),
    [
      "src/memory/x.ts:1:5-1:30 ConditionalExpression (Survived, id 2)",
      '  - if (typeof value === "object" && value !== null) {',
      "  + if (true && value !== null) {",
      "src/memory/x.ts:1:50-3:2 BlockStatement (NoCoverage, id 3)",
      '  - if (typeof value === "object" && value !== null) {',
      "  - freeze(value);",
      "  - }",
      '  + if (typeof value === "object" && value !== null) {}',
    ].join("\n"),
  );
});
