// The README's example is a real file; this keeps the two identical and proves the example runs.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));

test("README shows examples/quickstart.ts verbatim, and it runs", () => {
  const readme = readFileSync(`${root}README.md`, "utf8");
  const example = readFileSync(`${root}examples/quickstart.ts`, "utf8").trim();
  assert.ok(readme.includes(example), "README's example block must equal examples/quickstart.ts");
  const env = { ...process.env };
  delete env.DEBUG_MOCK_RESPONSES;
  const run = spawnSync(process.execPath, ["--import", "tsx", "examples/quickstart.ts"], { cwd: root, encoding: "utf8", env, timeout: 30_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /\[get_weather [\d.]+ ms\] Paris: 21°C and sunny/);
  // The trivial tool's duration is its own (well under a millisecond), not the validator's warm-up
  // (that was billed to it: 140–265 ms); 100 ms leaves room for a loaded machine.
  const durations = [...run.stdout.matchAll(/\[get_weather ([\d.]+) ms\]/g)].map((match) => Number(match[1]));
  assert.equal(durations.length, 2);
  for (const duration of durations) assert.ok(duration < 100, `get_weather took ${duration} ms`);
  assert.match(run.stdout, /Paris and Oslo are both 21°C and sunny today\.\nCOMPLETED after 2 model calls/);
});
