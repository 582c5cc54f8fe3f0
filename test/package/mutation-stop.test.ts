// Stopping `npm run mutation` stops the whole run (scripts/mutation.mjs, scripts/mutation/process-tree.mjs):
// the wrapper is signalled, or `npm run` above it is killed, and no process of the run is left, however
// it hides: a Stryker that ignores signals and restarts its workers, a process of its own session ignoring
// SIGTERM, one left to init. Stryker is stood in for by a fixture building that tree (the real one takes
// a sandbox copy and a first run to get there: test/package/mutation-stop-stryker.test.ts, run when named).
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const standIn = fileURLToPath(new URL("./fixtures/mutation-stand-in-stryker.mjs", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "agentloop-mutation-stop-"));
const runs: string[] = [];
after(() => {
  // Whatever a failing test left (the stand-in's processes never end by themselves) is killed here.
  for (const dir of runs) for (const pid of [...tree(dir).values()].flat()) if (alive(pid)) process.kill(pid, "SIGKILL");
  rmSync(scratch, { recursive: true, force: true });
});
const ROLES = ["main", "first-worker", "worker", "stubborn", "escaped"];

function alive(pid: number): boolean {
  try {
    // A zombie (killed, not yet reaped by its parent) is gone.
    return !/^\d+ \(.*\) [ZX] /s.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** The stand-in's processes so far: role → pids. */
function tree(dir: string): Map<string, number[]> {
  const roles = new Map<string, number[]>();
  const file = join(dir, "pids");
  if (!existsSync(file)) return roles;
  for (const line of readFileSync(file, "utf8").trim().split("\n")) {
    const [pid, role] = line.split(" ");
    roles.set(role ?? "", [...(roles.get(role ?? "") ?? []), Number(pid)]);
  }
  return roles;
}

async function until<T>(what: string, check: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Starts a run (the wrapper directly, or through `npm run mutation`) with the stand-in, once its whole tree runs. */
async function startRun(name: string, viaNpm: boolean) {
  const dir = mkdtempSync(join(scratch, `${name}-`));
  runs.push(dir);
  const args = ["src/mcp/result.ts", "--concurrency", "1"];
  const env = { ...process.env, AGENTLOOP_MUTATION_STRYKER: standIn, STAND_IN_DIR: dir };
  const child: ChildProcess = viaNpm
    ? spawn("npm", ["run", "--silent", "mutation", "--", ...args], { cwd: root, env, stdio: ["ignore", "ignore", "pipe"] })
    : spawn(process.execPath, ["scripts/mutation.mjs", ...args], { cwd: root, env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const roles = await until("the stand-in's whole tree", () => {
    const found = tree(dir);
    return ROLES.every((role) => found.has(role)) ? found : undefined;
  });
  return { child, dir, roles, exited, stderr: () => stderr };
}

async function assertNothingLeft(dir: string) {
  // The wrapper has exited: every process the run ever started (those started while it stopped too) is gone.
  const pids = [...tree(dir).values()].flat();
  const left = pids.filter(alive);
  assert.deepEqual(left, [], `processes of the run left: ${readFileSync(join(dir, "pids"), "utf8")}`);
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  test(`${signal} to the wrapper stops every process of the run, and the wrapper exits as signalled`, { timeout: 60_000 }, async () => {
    const run = await startRun(signal, false);
    run.child.kill(signal);
    const { code } = await run.exited;
    assert.equal(code, signal === "SIGINT" ? 130 : 143, run.stderr());
    assert.match(run.stderr(), new RegExp(`stopping \\(${signal}\\): Stryker and every process of its run`));
    await assertNothingLeft(run.dir);
  });
}

test("`npm run mutation` killed outright (SIGKILL: nothing forwarded) stops every process of the run all the same", { timeout: 60_000 }, async () => {
  const run = await startRun("npm", true);
  const standInPid = run.roles.get("main")?.[0];
  assert.ok(standInPid);
  // The wrapper is the stand-in's parent (and npm's child: `exec` in the npm script leaves no shell between them).
  const wrapperPid = Number(readFileSync(`/proc/${standInPid}/stat`, "utf8").replace(/^.*\) \S+ (\d+) .*$/s, "$1"));
  assert.match(readFileSync(`/proc/${wrapperPid}/cmdline`, "utf8"), /scripts\/mutation\.mjs/);
  run.child.kill("SIGKILL");
  await run.exited;
  await until("the wrapper to stop the run and exit", () => !alive(wrapperPid));
  await assertNothingLeft(run.dir);
});
