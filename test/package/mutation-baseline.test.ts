// `npm run mutation -- --incremental` in a fresh clone (no reports/mutation/ yet) starts from the committed
// baseline, scripts/mutation/baseline/<folder>.incremental.json.gz (unpacked), and never overwrites an earlier run of
// the clone itself (scripts/mutation.mjs; Stryker is stood in for by a fixture noting what it was given).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const wrapper = fileURLToPath(new URL("../../scripts/mutation.mjs", import.meta.url));
const standIn = fileURLToPath(new URL("./fixtures/mutation-stand-in-stryker.mjs", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "agentloop-mutation-baseline-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

function run(clone: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, AGENTLOOP_MUTATION_STRYKER: standIn, STAND_IN_MODE: "report", STAND_IN_DIR: clone };
  return new Promise((resolve) => {
    execFile(process.execPath, [wrapper, "src/mcp/result.ts", ...args], { cwd: clone, env, encoding: "utf8" }, (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }));
  });
}

test("--incremental in a fresh clone starts from the committed baseline; the clone's own last run wins after that; without --incremental nothing is reused", { timeout: 60_000 }, async () => {
  const clone = mkdtempSync(join(scratch, "clone-"));
  mkdirSync(join(clone, "src/mcp"), { recursive: true });
  writeFileSync(join(clone, "src/mcp/result.ts"), "export const x = 1;\n");
  mkdirSync(join(clone, "scripts/mutation/baseline"), { recursive: true });
  const baseline = join(clone, "scripts/mutation/baseline/src-mcp.incremental.json.gz");
  writeFileSync(baseline, gzipSync('{"baseline":true}'));

  const plain = await run(clone, []);
  assert.equal(plain.code, 0, plain.stderr);
  assert.equal(readFileSync(join(clone, "incremental"), "utf8"), "none");

  const first = await run(clone, ["--incremental"]);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /src\/mcp: no earlier run here; reusing the baseline scripts\/mutation\/baseline\/src-mcp\.incremental\.json\.gz/);
  assert.equal(readFileSync(join(clone, "incremental"), "utf8"), '{"baseline":true}');

  // Stryker rewrites reports/mutation/src-mcp.incremental.json after a run: that one is reused next, not the baseline.
  writeFileSync(join(clone, "reports/mutation/src-mcp.incremental.json"), '{"own":true}');
  const second = await run(clone, ["--incremental"]);
  assert.equal(second.code, 0, second.stderr);
  assert.doesNotMatch(second.stdout, /reusing the baseline/);
  assert.equal(readFileSync(join(clone, "incremental"), "utf8"), '{"own":true}');
  assert.deepEqual(readFileSync(baseline), gzipSync('{"baseline":true}'), "the baseline is never written by a run");
});

test("--tests names the run's candidate tests instead of the folder's; without a glob it is refused", { timeout: 60_000 }, async () => {
  const clone = mkdtempSync(join(scratch, "clone-"));
  mkdirSync(join(clone, "src/mcp"), { recursive: true });
  writeFileSync(join(clone, "src/mcp/result.ts"), "export const x = 1;\n");
  const chosen = await run(clone, ["--tests", "test/mcp/result.test.ts", "--tests", "test/mcp/a*.test.ts"]);
  assert.equal(chosen.code, 0, chosen.stderr);
  assert.match(chosen.stdout, /mutating src\/mcp\/result\.ts \(tests: test\/mcp\/result\.test\.ts test\/mcp\/a\*\.test\.ts\)/);
  const config = JSON.parse(readFileSync(join(clone, "node_modules/.cache/agentloop-mutation/src-mcp.config.json"), "utf8")) as { agentloop: { testFiles: string[] } };
  assert.deepEqual(config.agentloop.testFiles, ["test/mcp/result.test.ts", "test/mcp/a*.test.ts"]);
  const folders = await run(clone, []);
  assert.match(folders.stdout, /\(tests: test\/mcp\/\*\*\/\*\.test\.ts test\/prompty\/mcp\.test\.ts\)/);
  const missing = await run(clone, ["--tests"]);
  assert.notEqual(missing.code, 0);
  assert.match(missing.stderr, /--tests needs a test file or glob/);
});
