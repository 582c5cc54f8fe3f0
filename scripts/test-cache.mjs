// The folders the test runner and the test processes keep below node_modules/.cache/agentloop-test:
// a run's compiled files (`run-<pid>-<time>`) and its group entries (`groups-<pid>-<time>`), removed
// at the end of the run (scripts/run-tests.mjs), and a test process's TypeScript children's bundles
// (`children-<pid>`, test/ts-child.ts), removed as it exits. A process killed first leaves its folder.
import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";

/** Whether process `pid` is alive (a process of another user counts as alive). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error?.code === "EPERM";
  }
}

/**
 * Removes the folders that runs and test processes killed before their cleanup left in the cache:
 * a run's `run-<pid>-<time>` and `groups-<pid>-<time>`, a test process's `children-<pid>` (its
 * TypeScript children's bundles, test/ts-child.ts), once process <pid> is gone (or after a day,
 * should the pid have been reused).
 */
export function removeLeftovers(cache) {
  let names = [];
  try {
    names = readdirSync(cache);
  } catch {
    return;
  }
  for (const name of names) {
    const path = join(cache, name);
    const pid = /^(?:run|groups|children)-(\d+)(?:-\d+)?$/.exec(name)?.[1];
    try {
      if ((pid !== undefined && !alive(Number(pid))) || Date.now() - statSync(path).mtimeMs > 86_400_000) rmSync(path, { recursive: true, force: true });
    } catch {}
  }
}
