// Stopping a whole mutation run (scripts/mutation.mjs): Stryker, its worker processes, our test workers,
// and whatever their tests started, wherever those went. Killing Stryker's process group is not enough:
// - Stryker restarts a worker process that died, so the tree must be frozen before it is killed;
// - a test may start a process in a group or session of its own (src/coding/exec.ts runs every command
//   so), which the group's signal misses, and which may ignore SIGTERM;
// - a process whose parent exited is adopted by init: the parent links no longer lead to it.
// So: every process of the run is found by its parent links from Stryker (the tree is frozen with SIGSTOP
// as it is walked, so nothing starts or escapes meanwhile) and by a marker in its environment (which
// every process the run starts inherits, unless a test gave it an environment of its own), then killed
// with SIGKILL, and awaited. Linux (/proc); elsewhere only the process group is killed.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

const PROC = "/proc";

/** The live processes: pid → { ppid, pgid, state } (zombies left out: they are gone, only not yet reaped). */
export function processes() {
  const table = new Map();
  let names;
  try {
    names = readdirSync(PROC);
  } catch {
    return table;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`${PROC}/${name}/stat`, "utf8");
      // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
      const [state, ppid, pgid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (state !== "Z" && state !== "X") table.set(Number(name), { ppid: Number(ppid), pgid: Number(pgid), state });
    } catch {}
  }
  return table;
}

function environment(pid) {
  try {
    return readFileSync(`${PROC}/${pid}/environ`, "utf8").split("\0");
  } catch {
    return [];
  }
}

/** The value of `name` in a process's initial environment, or undefined. */
export function environmentValue(pid, name) {
  const entry = environment(pid).find((line) => line.startsWith(`${name}=`));
  return entry === undefined ? undefined : entry.slice(name.length + 1);
}

/** A process's working folder, or undefined. */
export function workingFolder(pid) {
  try {
    return readlinkSync(`${PROC}/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

/** The run's processes: the root, its group, their descendants, and every process whose environment holds `marker` ("NAME=value"). */
export function runProcesses(root, marker, table = processes()) {
  const found = new Set();
  for (const [pid, { pgid }] of table) if (pid === root || pgid === root || (marker && environment(pid).includes(marker))) found.add(pid);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, { ppid }] of table) {
      if (!found.has(pid) && found.has(ppid)) {
        found.add(pid);
        grew = true;
      }
    }
  }
  found.delete(process.pid);
  return found;
}

function signal(pid, name) {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops every process of a run (`root`: Stryker's pid, the leader of its group; `marker`: "NAME=value" in
 * the run's environment). `beforeKill(pids)` sees them frozen, before they die (to note their working
 * folders). Resolves with the pids killed once none of them is left, or after `timeoutMs`.
 */
export async function stopRun(root, marker, { beforeKill, timeoutMs = 10_000 } = {}) {
  if (process.platform !== "linux") {
    signal(-root, "SIGKILL");
    return new Set([root]);
  }
  // Freeze: the group first (Stryker and its workers), then each process found, until no new one appears.
  signal(-root, "SIGSTOP");
  const frozen = new Set();
  for (;;) {
    const found = runProcesses(root, marker);
    const fresh = [...found].filter((pid) => !frozen.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      signal(pid, "SIGSTOP");
      frozen.add(pid);
    }
  }
  beforeKill?.(frozen);
  signal(-root, "SIGKILL");
  for (const pid of frozen) signal(pid, "SIGKILL");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const table = processes();
    const left = [...frozen].filter((pid) => table.has(pid));
    if (left.length === 0 || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return frozen;
}

/**
 * Whether a process and its descendants are working: one of them running or in disk wait, or their CPU time
 * (reaped children's included) grew by `minCpuMs` over `windowMs` (sampled every 100 ms). A run that
 * is not (every process asleep, waiting for what never comes) is hung. Linux; elsewhere always working.
 */
export async function working(root, { windowMs = 1_000, minCpuMs = 20 } = {}) {
  if (process.platform !== "linux") return true;
  const sample = () => {
    let cpu = 0;
    let active = false;
    for (const pid of runProcesses(root, undefined)) {
      try {
        const stat = readFileSync(`${PROC}/${pid}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        // utime, stime, cutime, cstime (clock ticks, 10 ms).
        cpu += (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10;
        if (fields[0] === "R" || fields[0] === "D") active = true;
      } catch {}
    }
    return { cpu, active };
  };
  const first = sample();
  if (first.active) return true;
  for (let waited = 0; waited < windowMs; waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = sample();
    if (now.active || now.cpu - first.cpu >= minCpuMs) return true;
  }
  return false;
}
