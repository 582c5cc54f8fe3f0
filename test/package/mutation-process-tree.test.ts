// scripts/mutation/process-tree.mjs's `working`: how the mutation runner tells a hung test run (every
// process asleep, waiting for what never comes: a timeout now) from a slow one (a process running, or
// CPU time spent, its own or its children's: it gets until the hard limit). Real processes.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";

const tree = fileURLToPath(new URL("../../scripts/mutation/process-tree.mjs", import.meta.url));
const { working, runProcesses } = (await import(tree)) as {
  working: (pid: number, options?: { windowMs?: number }) => Promise<boolean>;
  runProcesses: (pid: number) => Set<number>;
};
const started: ChildProcess[] = [];
/** Kills a process started here and its children (found while it lives). */
function stop(child: ChildProcess) {
  for (const pid of runProcesses(child.pid as number)) process.kill(pid, "SIGKILL");
}
after(() => {
  for (const child of started) stop(child); // whatever the tests' outcome
});

/** A node process running `code`, once it says it is ready. */
async function start(code: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  started.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`exited ${code}`)));
  });
  return child;
}

/**
 * Whether `working` says the process is not working once it has settled: a node process just past
 * "ready" can still finish its start (compiler threads, a collection), longer on a loaded machine.
 */
async function settlesIdle(pid: number): Promise<boolean> {
  for (let attempt = 0; attempt < 20; attempt++) if (!(await working(pid, { windowMs: 500 }))) return true;
  return false;
}

const idle = "setInterval(() => {}, 60_000); console.log('ready');";
const busy = "console.log('ready'); for (;;) {}";

test("a process asleep (a timer far off) is not working; one in a busy loop is", { timeout: 30_000 }, async () => {
  const looping = await start(busy);
  assert.equal(await working(looping.pid as number, { windowMs: 500 }), true);
  stop(looping); // a core spinning no longer than needed
  const asleep = await start(idle);
  assert.equal(await settlesIdle(asleep.pid as number), true);
});

test("a process asleep waiting for its busy child is working (the child's time counts); one waiting for an asleep child is not", { timeout: 30_000 }, async () => {
  const parentOf = (child: string) => `const { spawn } = require("node:child_process"); const c = spawn(process.execPath, ["-e", ${JSON.stringify(child)}], { stdio: ["ignore", "pipe", "inherit"] }); c.stdout.once("data", () => console.log("ready")); setInterval(() => {}, 60_000);`;
  const waitingForBusy = await start(parentOf(busy));
  assert.equal(await working(waitingForBusy.pid as number, { windowMs: 500 }), true);
  stop(waitingForBusy);
  const waitingForIdle = await start(parentOf(idle));
  assert.equal(await settlesIdle(waitingForIdle.pid as number), true);
});
