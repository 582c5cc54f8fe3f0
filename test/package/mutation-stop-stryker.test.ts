// Stopping a real `npm run mutation` (Stryker, its workers, our test workers, the tests' own processes):
// no process of the run is left and no sandbox. Slow (a sandbox copy, bundles, a first run: half a minute
// or more, and Node 24 and Stryker installed on first use), so it runs only when named:
// `node scripts/run-tests.mjs test/package/mutation-stop-stryker`. test/package/mutation-stop.test.ts tests
// the same with a stand-in for Stryker, in every run.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const sandboxes = join(root, "node_modules/.cache/agentloop-mutation/sandboxes");
const tag = `AGENTLOOP_STOP_TEST=${process.pid}-${Date.now()}`;

function listSandboxes(): string[] {
  try {
    return readdirSync(sandboxes);
  } catch {
    return [];
  }
}

/** The live processes whose environment holds the tag (a zombie is gone). */
function tagged(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (/^\d+ \(.*\) [ZX] /s.test(readFileSync(`/proc/${name}/stat`, "utf8"))) continue;
      if (readFileSync(`/proc/${name}/environ`, "utf8").split("\0").includes(tag)) pids.push(Number(name));
    } catch {}
  }
  return pids;
}

test("SIGTERM to a real run while it tests mutants leaves no process of it and no sandbox", { timeout: 600_000 }, async () => {
  const before = new Set(listSandboxes());
  const [name, value] = tag.split("=");
  // exec.ts's tests start commands in process groups of their own, one of them ignoring SIGTERM.
  const child = spawn(process.execPath, ["scripts/mutation.mjs", "src/coding/exec.ts"], { cwd: root, env: { ...process.env, [name as string]: value }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const testing = new Promise<void>((resolve) => {
    const read = (chunk: Buffer) => {
      output += chunk;
      if (/Mutation testing \d+%/.test(output)) resolve();
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  await Promise.race([testing, exited]);
  assert.equal(child.exitCode, null, `the run ended before testing mutants: ${output.slice(-2_000)}`);
  const seen = tagged();
  assert.ok(seen.length >= 3, `Stryker, its worker and a test worker run: ${seen.length}`);
  child.kill("SIGTERM");
  assert.equal(await exited, 143, output.slice(-2_000));
  assert.deepEqual(tagged(), [], "processes of the run left");
  assert.deepEqual(
    listSandboxes().filter((sandbox) => !before.has(sandbox)),
    [],
    "the run's sandbox is left",
  );
});
