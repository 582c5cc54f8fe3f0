// The execution environment: real bash processes in their own process group, real files and symlinks.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { exec, MAX_EXEC_TIMEOUT_MS, PathOutsideWorkspaceError, Workspace } from "../../src/coding/index.js";

const folder = realpathSync(mkdtempSync(join(tmpdir(), "agentloop-coding-exec-")));
after(() => rmSync(folder, { recursive: true, force: true }));

/** Whether a process still runs (a zombie waiting to be reaped counts as gone). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/**
 * Whether a process that was sent SIGKILL is gone within a moment. A dying process closes its pipes
 * (which is what lets exec return) a little before the kernel marks it a zombie, so a check made at
 * once can still see it running on a busy machine.
 */
async function goneSoon(pid: number, withinMs = 1_000): Promise<boolean> {
  const deadline = performance.now() + withinMs;
  while (alive(pid)) {
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

function pidsIn(file: string): number[] {
  return readFileSync(file, "utf8").trim().split(/\s+/).map(Number);
}

describe("exec", () => {
  it("returns stdout, stderr, the exit code and the duration", async () => {
    const result = await exec("echo out; echo err >&2; exit 3", { cwd: folder });
    assert.equal(result.stdout, "out\n");
    assert.equal(result.stderr, "err\n");
    assert.equal(result.exitCode, 3);
    assert.equal(result.timedOut, false);
    assert.ok(result.durationMs >= 0 && result.durationMs < 5_000, String(result.durationMs));
  });

  it("on timeout kills the whole process group: the shell and the children it started", async () => {
    const pids = join(folder, "timeout.pids");
    const result = await exec(`sleep 30 & echo $! > ${pids}; (sleep 30; echo never) & echo $! >> ${pids}; echo started; wait`, { timeoutMs: 300 });
    assert.equal(result.timedOut, true);
    assert.equal(result.stdout, "started\n");
    assert.equal(result.exitCode, null);
    const children = pidsIn(pids);
    assert.equal(children.length, 2);
    for (const pid of children) assert.equal(await goneSoon(pid), true, `child ${pid} survived the timeout`);
  });

  it("sends SIGKILL 2 s after a SIGTERM the group ignores", async () => {
    const pids = join(folder, "stubborn.pids");
    const result = await exec(`trap '' TERM; sleep 30 & echo $! > ${pids}; wait; wait`, { timeoutMs: 100 });
    assert.equal(result.timedOut, true);
    assert.equal(result.signal, "SIGKILL");
    assert.ok(result.durationMs >= 1_900 && result.durationMs < 8_000, `took ${result.durationMs} ms`);
    for (const pid of pidsIn(pids)) assert.equal(await goneSoon(pid), true, `child ${pid} survived SIGKILL`);
  });

  it("kills what a finished command left running in its group, so the call returns at once", async () => {
    const result = await exec("sleep 30 & echo $!", { timeoutMs: 5_000 });
    assert.equal(result.exitCode, 0);
    assert.ok(result.durationMs < 4_000, `took ${result.durationMs} ms`);
    assert.equal(await goneSoon(Number(result.stdout.trim())), true, "the command's background child survived");
  });

  it("returns soon after the shell exits even when a process that left the group holds its output open", async () => {
    const result = await exec("setsid sleep 30 & echo $!", { timeoutMs: 5_000 });
    const escaped = Number(result.stdout.trim());
    try {
      assert.equal(result.exitCode, 0);
      assert.ok(result.durationMs < 4_000, `took ${result.durationMs} ms`);
    } finally {
      process.kill(escaped, "SIGKILL");
    }
  });

  it("refuses a working directory that does not exist", async () => {
    await assert.rejects(exec("pwd", { cwd: join(folder, "no-such-folder") }), /working directory .*no-such-folder does not exist or is not a folder/);
  });

  it("stops the group when its signal aborts", async () => {
    const controller = new AbortController();
    const running = exec("echo go; sleep 30", { signal: controller.signal, onOutput: () => controller.abort() });
    const result = await running;
    assert.equal(result.aborted, true);
    assert.equal(result.timedOut, false);
    assert.equal(result.stdout, "go\n");
  });

  it("streams output as it arrives, before the command ends", async () => {
    // The command waits for a file that only the first chunk's handler creates: it can end only if
    // that chunk arrived while it ran (no timing involved, so a loaded machine cannot fail it).
    const go = join(folder, "streams-go");
    const chunks: string[] = [];
    const result = await exec(`echo first; while [ ! -e ${JSON.stringify(go)} ]; do sleep 0.01; done; echo second >&2`, {
      timeoutMs: 60_000,
      onOutput: (stream, text) => {
        chunks.push(`${stream}:${text}`);
        if (chunks.length === 1) writeFileSync(go, "");
      },
    });
    assert.deepEqual(chunks, ["stdout:first\n", "stderr:second\n"]);
    assert.equal(result.exitCode, 0);
  });

  it("drops secret-looking variables from the child's environment unless allowed by name", async () => {
    const inheritEnv = {
      PATH: process.env.PATH,
      OPENAI_API_KEY: "k1",
      GITHUB_TOKEN: "k2",
      DB_PASSWORD: "k3",
      APP_SECRET: "k4",
      AWS_CREDENTIAL: "k5",
      KEEP_TOKEN: "kept",
      PLAIN: "visible",
    };
    const result = await exec("env", { inheritEnv, allowEnv: ["KEEP_TOKEN"], env: { EXPLICIT_API_KEY: "given" } });
    const seen = Object.fromEntries(result.stdout.trim().split("\n").map((line) => line.split(/=(.*)/s, 2)));
    for (const name of ["OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "APP_SECRET", "AWS_CREDENTIAL"]) assert.equal(seen[name], undefined, name);
    assert.equal(seen.KEEP_TOKEN, "kept");
    assert.equal(seen.PLAIN, "visible");
    assert.equal(seen.EXPLICIT_API_KEY, "given");
  });

  it("refuses bad timeouts and empty commands with a clear error", async () => {
    await assert.rejects(exec("true", { timeoutMs: MAX_EXEC_TIMEOUT_MS + 1 }), /above the maximum of 600000 ms/);
    await assert.rejects(exec("true", { timeoutMs: 0 }), /positive number/);
    await assert.rejects(exec("   "), /non-empty string/);
  });
});

describe("Workspace", () => {
  const root = join(folder, "root");
  const outside = join(folder, "outside");
  mkdirSync(join(root, "sub"), { recursive: true });
  mkdirSync(outside, { recursive: true });
  writeFileSync(join(outside, "secret.txt"), "secret");
  writeFileSync(join(root, "sub", "a.txt"), "a");
  symlinkSync(outside, join(root, "escape"));
  symlinkSync(join(outside, "secret.txt"), join(root, "secret-link.txt"));
  symlinkSync(join(root, "sub"), join(root, "inner-link"));
  const workspace = new Workspace({ root });

  it("resolves paths inside the root, relative or absolute, existing or not, through inner symlinks", async () => {
    assert.equal(await workspace.resolvePath("sub/a.txt"), join(root, "sub", "a.txt"));
    assert.equal(await workspace.resolvePath(join(root, "sub", "a.txt")), join(root, "sub", "a.txt"));
    assert.equal(await workspace.resolvePath("new/dir/file.txt"), join(root, "new", "dir", "file.txt"));
    assert.equal(await workspace.resolvePath("inner-link/a.txt"), join(root, "sub", "a.txt"));
    assert.equal(await workspace.resolvePath("sub/../sub/a.txt"), join(root, "sub", "a.txt"));
  });

  it("refuses '..', absolute paths outside and symlinks that lead out, naming the path", async () => {
    const cases: Array<[string, RegExp]> = [
      ["../outside/secret.txt", /'\.\.' leaves the root/],
      ["sub/../../outside", /'\.\.' leaves the root/],
      [join(outside, "secret.txt"), /absolute path/],
      ["/etc/passwd", /absolute path/],
      ["escape/secret.txt", /a symlink leads out/],
      ["escape/not-yet-written.txt", /a symlink leads out/],
      ["secret-link.txt", /a symlink leads out/],
    ];
    for (const [path, how] of cases) {
      await assert.rejects(workspace.resolvePath(path), (error: Error) => {
        assert.ok(error instanceof PathOutsideWorkspaceError, `${path}: ${error}`);
        assert.match(error.message, how);
        assert.ok(error.message.includes(`"${path}"`), error.message);
        return true;
      });
    }
  });

  it("allows outside paths when told to", async () => {
    const open = new Workspace({ root, allowOutside: true });
    assert.equal(await open.resolvePath("escape/secret.txt"), join(outside, "secret.txt"));
    assert.equal(await open.resolvePath("../outside"), outside);
  });

  it("runs commands in the root, refuses a cwd outside, and filters secrets from its environment", async () => {
    const ws = new Workspace({ root, inheritEnv: { PATH: process.env.PATH, X_TOKEN: "hidden", Y_TOKEN: "shown" }, allowEnv: ["Y_TOKEN"] });
    const result = await ws.exec('pwd; echo "[$X_TOKEN][$Y_TOKEN]"');
    assert.equal(result.stdout, `${root}\n[][shown]\n`);
    assert.equal((await ws.exec("pwd", { cwd: "sub" })).stdout, `${join(root, "sub")}\n`);
    await assert.rejects(ws.exec("pwd", { cwd: "escape" }), PathOutsideWorkspaceError);
  });

  it("refuses a root that does not exist", () => {
    assert.throws(() => new Workspace({ root: join(folder, "missing") }), /does not exist/);
  });
});
