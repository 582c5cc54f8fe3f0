// `npm run mutation -- --baseline <reports>` / scripts/mutation/baseline.mjs: several runs' Stryker JSON
// reports merged into one incremental file per folder (gzipped), test ids renumbered into one space,
// a result left out when a test file it rests on has changed since its run (docs/mutation.md).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";

const wrapper = fileURLToPath(new URL("../../scripts/mutation.mjs", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "agentloop-mutation-baseline-merge-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [wrapper, "--baseline", ...args], { encoding: "utf8" }, (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }));
  });
}

type Mutant = { id: string; status: string; coveredBy?: string[]; killedBy?: string[]; line?: number };
/** Writes a report (tests: test file → [source, test names], ids in order from 0), modified `age` seconds ago. */
function report(path: string, files: Record<string, Mutant[]>, tests: Record<string, [string, string[]]>, age: number) {
  let next = 0;
  const testFiles = Object.fromEntries(Object.entries(tests).map(([file, [source, names]]) => [file, { source, tests: names.map((name) => ({ id: String(next++), name })) }]));
  const body = {
    schemaVersion: "1.0",
    thresholds: { high: 80, low: 60 },
    testFiles,
    files: Object.fromEntries(
      Object.entries(files).map(([file, list]) => [
        file,
        {
          language: "typescript",
          source: `source of ${file}`,
          mutants: list.map(({ line = 1, ...mutant }) => ({ mutatorName: "BooleanLiteral", replacement: "true", location: { start: { line, column: 1 }, end: { line, column: 5 } }, ...mutant })),
        },
      ]),
    ),
  };
  writeFileSync(path, JSON.stringify(body));
  const when = Date.now() / 1000 - age;
  utimesSync(path, when, when);
}

const read = (file: string) => JSON.parse(gunzipSync(readFileSync(file)).toString("utf8"));
const names = (baseline: { testFiles: Record<string, { tests: Array<{ id: string; name: string }> }> }, ids: string[] = []) =>
  ids.map((id) => Object.values(baseline.testFiles).flatMap((file) => file.tests).find((t) => t.id === id)?.name);

test("reports merged into one baseline per folder: the latest run of a file, tests renumbered by name, results on a since-changed test file left out", async () => {
  const folder = join(scratch, "reports");
  mkdirSync(folder);
  // The older run: result.ts, killed by a.test.ts (source v1) and b.test.ts; config.ts, measured again later.
  report(
    join(folder, "old.json"),
    {
      "src/mcp/result.ts": [
        { id: "1", status: "Killed", coveredBy: ["0", "1"], killedBy: ["0"], line: 1 },
        { id: "2", status: "Killed", coveredBy: ["2"], killedBy: ["2"], line: 2 },
        { id: "3", status: "Survived", coveredBy: ["2"], line: 3 },
        // Killed by b.test.ts, also covered by a.test.ts v1: the kill stands (Stryker's rule), a's test not carried.
        { id: "5", status: "Killed", coveredBy: ["1", "2"], killedBy: ["2"], line: 5 },
        // Survived with a.test.ts v1 among its covering tests: left out.
        { id: "6", status: "Survived", coveredBy: ["0", "2"], line: 6 },
      ],
      "src/mcp/config.ts": [{ id: "4", status: "Survived", coveredBy: ["2"] }],
    },
    { "test/a.test.ts": ["a v1", ["a one", "a two"]], "test/b.test.ts": ["b v1", ["b one"]] },
    600,
  );
  // The newer run: config.ts again, with a.test.ts changed since (v2) and b.test.ts as it was; a memory file.
  report(
    join(folder, "new.json"),
    { "src/mcp/config.ts": [{ id: "1", status: "Killed", coveredBy: ["1", "2"], killedBy: ["2"] }], "src/memory/history.ts": [{ id: "2", status: "NoCoverage", coveredBy: [] }] },
    { "test/b.test.ts": ["b v1", ["b one"]], "test/a.test.ts": ["a v2", ["a one", "a two", "a three"]] },
    60,
  );
  // The newest: an incremental run of nothing in src/mcp but carrying result.ts over (Stryker's keys as
  // ids): not a run of result.ts, so it replaces nothing.
  report(
    join(folder, "carry.json"),
    { "src/mcp/result.ts": [{ id: "src/mcp/result.ts@2:1-2:5\nBooleanLiteral: true", status: "Survived", coveredBy: [], line: 2 }] },
    { "test/b.test.ts": ["b v1", ["b one"]] },
    30,
  );
  const out = join(scratch, "baseline");
  const { code, stdout, stderr } = await run([folder, "--out", out]);
  assert.equal(code, 0, stderr);
  assert.deepEqual(readdirSync(out).sort(), ["src-mcp.incremental.json.gz", "src-mcp.test-parts.json", "src-memory.incremental.json.gz", "src-memory.test-parts.json"]);
  // Each test file's imported parts as they are at the build (test-parts.mjs): test/a.test.ts does not exist here, no parts.
  assert.deepEqual(JSON.parse(readFileSync(join(out, "src-mcp.test-parts.json"), "utf8")), { "test/b.test.ts": "", "test/a.test.ts": "" });
  assert.match(stdout, /5 results kept from 3 report\(s\); 2 left out/);
  assert.match(stdout, /2\tsrc\/mcp\/result\.ts ← test\/a\.test\.ts/);

  const mcp = read(join(out, "src-mcp.incremental.json.gz"));
  // config.ts from the newer run (the older one replaced whole); its result rests on a.test.ts v2, the current one: kept.
  assert.deepEqual(
    mcp.files["src/mcp/config.ts"].mutants.map((m: Mutant) => [m.status, names(mcp, m.coveredBy), names(mcp, m.killedBy)]),
    [["Killed", ["a one", "a two"], ["a two"]]],
  );
  assert.equal(mcp.testFiles["test/a.test.ts"].source, "a v2");
  assert.equal(mcp.files["src/mcp/result.ts"].source, "source of src/mcp/result.ts");
  // result.ts: the mutant killed with a.test.ts v1 is left out (a.test.ts changed since); b.test.ts's results stay, renumbered.
  const result = mcp.files["src/mcp/result.ts"].mutants;
  assert.deepEqual(
    result.map((m: Mutant) => [m.id, m.status, names(mcp, m.coveredBy), names(mcp, m.killedBy)]),
    [
      ["2", "Killed", ["b one"], ["b one"]],
      ["3", "Survived", ["b one"], []],
      ["5", "Killed", ["b one"], ["b one"]],
    ],
  );
  // One id per test name; a test file carries the latest run's source.
  assert.equal(mcp.testFiles["test/b.test.ts"].source, "b v1");
  const ids = Object.values(mcp.testFiles as Record<string, { tests: Array<{ id: string }> }>).flatMap((file) => file.tests.map((t) => t.id));
  assert.equal(new Set(ids).size, ids.length, "test ids are unique in the folder's baseline");

  const memory = read(join(out, "src-memory.incremental.json.gz"));
  assert.deepEqual(Object.keys(memory.files), ["src/memory/history.ts"]);
  assert.equal(memory.files["src/memory/history.ts"].mutants[0].status, "NoCoverage");
});

test("bad input is named: no reports, a file that is not JSON, a report without testFiles, an unknown option", async () => {
  const empty = join(scratch, "empty");
  mkdirSync(empty);
  const none = await run([empty]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /no Stryker JSON report in/);

  const broken = join(scratch, "broken.json");
  writeFileSync(broken, "{ not json");
  const notJson = await run([broken]);
  assert.equal(notJson.code, 2);
  assert.match(notJson.stderr, /broken\.json: not a JSON report/);

  const bare = join(scratch, "bare.json");
  writeFileSync(bare, JSON.stringify({ files: { "src/mcp/result.ts": { mutants: [] } } }));
  const noTests = await run([bare]);
  assert.equal(noTests.code, 2);
  assert.match(noTests.stderr, /bare\.json: a report without "testFiles"/);

  const unknown = await run([bare, "--fast"]);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown option --fast/);
});
