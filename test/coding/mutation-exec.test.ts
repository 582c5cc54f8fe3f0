// exec on the inputs the mutation run (npm run mutation -- src/coding/exec.ts) showed untested: which
// names count as secrets, variables given or removed for the child, each bad timeout, a file as the
// working directory, bash missing from the PATH, a signal aborted before the start, the capture limit.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { childEnvironment, exec, MAX_CAPTURED_CHARS } from "../../src/coding/index.js";

const folder = realpathSync(mkdtempSync(join(tmpdir(), "agentloop-exec-mutation-")));
after(() => rmSync(folder, { recursive: true, force: true }));

/** The child's environment as `env` prints it, by name. */
async function childEnv(options: Parameters<typeof exec>[1]): Promise<Record<string, string>> {
  // A generous timeout (the default is 10 s): a loaded machine must not make `env` time out.
  const result = await exec("env", { timeoutMs: 60_000, ...options });
  assert.equal(result.exitCode, 0, result.stderr);
  return Object.fromEntries(result.stdout.trim().split("\n").map((line) => line.split(/=(.*)/s, 2)));
}

describe("exec, mutation cases", () => {
  it("takes a name for a secret by its last word, in any case, and only then", async () => {
    const secrets = ["API_KEY", "my_api_key", "X_SECRET", "TOKEN", "A_TOKEN", "PASSWORD", "db_Password", "X_CREDENTIAL", "X_CREDENTIALS"];
    const plain = ["TOKENIZER", "MY_TOKEN_PATH", "SECRETS_DIR", "XTOKEN", "APIKEY", "PASSWORDS", "X_CREDENTIALSS"];
    const inheritEnv: Record<string, string | undefined> = { PATH: process.env.PATH, UNSET: undefined };
    for (const name of [...secrets, ...plain]) inheritEnv[name] = "v";
    const seen = await childEnv({ inheritEnv });
    for (const name of secrets) assert.equal(seen[name], undefined, name);
    for (const name of plain) assert.equal(seen[name], "v", name);
    assert.equal("UNSET" in seen, false);
  });

  it("variables given for the child are kept as they are, and one given as undefined is removed", async () => {
    const seen = await childEnv({ inheritEnv: { PATH: process.env.PATH, DROP_ME: "x", KEEP: "old" }, env: { DROP_ME: undefined, KEEP: "new", ADDED: "a" } });
    assert.equal("DROP_ME" in seen, false);
    assert.equal(seen.KEEP, "new");
    assert.equal(seen.ADDED, "a");
    // Without inheritEnv, the process's own environment is inherited (filtered).
    process.env.AGENTLOOP_EXEC_MUTATION_PLAIN = "inherited";
    try {
      assert.equal((await childEnv({})).AGENTLOOP_EXEC_MUTATION_PLAIN, "inherited");
    } finally {
      delete process.env.AGENTLOOP_EXEC_MUTATION_PLAIN;
    }
  });

  it("childEnvironment leaves out a variable given as undefined (not kept with no value)", () => {
    assert.deepEqual(childEnvironment({ A: "1", B: "2", C: undefined }, { A: undefined, D: "4" }), { B: "2", D: "4" });
  });

  it("what a finished command left running is killed with SIGKILL: one that ignores SIGTERM goes too", async () => {
    const result = await exec("(trap '' TERM; sleep 30) > /dev/null & echo $!", { timeoutMs: 10_000 });
    const pid = Number(result.stdout.trim());
    let gone = false;
    for (const deadline = performance.now() + 5_000; performance.now() < deadline && !gone; ) {
      try {
        process.kill(pid, 0);
        const state = readFileSync(`/proc/${pid}/stat`, "utf8");
        gone = state.slice(state.lastIndexOf(")") + 2, state.lastIndexOf(")") + 3) === "Z";
      } catch {
        gone = true;
      }
      if (!gone) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (!gone) process.kill(pid, "SIGKILL");
    assert.equal(gone, true, "the background process that ignores SIGTERM survived the command");
  });

  it("refuses each kind of bad timeout, naming it, and accepts the maximum itself", async () => {
    for (const timeoutMs of [Number.NaN, Number.POSITIVE_INFINITY, -5, "100"]) {
      await assert.rejects(exec("true", { timeoutMs: timeoutMs as number }), {
        name: "RangeError",
        message: `exec: timeoutMs must be a positive number of milliseconds, got ${String(timeoutMs)}`,
      });
    }
    await assert.rejects(exec("true", { timeoutMs: 600_001 }), { name: "RangeError", message: "exec: timeoutMs 600001 is above the maximum of 600000 ms (600 s)" });
    assert.equal((await exec("true", { timeoutMs: 600_000 })).exitCode, 0);
    assert.equal((await exec("true", { timeoutMs: 1_000 })).timedOut, false);
    await assert.rejects(exec(42 as never), { name: "TypeError", message: "exec: the command must be a non-empty string" });
  });

  it("refuses a file as the working directory, and runs in a folder given", async () => {
    const file = join(folder, "a-file");
    writeFileSync(file, "");
    await assert.rejects(exec("pwd", { cwd: file }), { message: `exec: the working directory ${file} does not exist or is not a folder` });
    assert.equal((await exec("pwd", { cwd: folder })).stdout, `${folder}\n`);
  });

  it("says bash could not be started when it is not on the child's PATH", async () => {
    await assert.rejects(exec("true", { inheritEnv: { PATH: folder } }), (error: Error) => {
      assert.match(error.message, /^exec: could not start bash: spawn bash ENOENT/);
      assert.equal((error.cause as NodeJS.ErrnoException).code, "ENOENT");
      return true;
    });
  });

  it("a signal aborted before the start stops the command at once", async () => {
    const started = performance.now();
    const result = await exec("sleep 30", { signal: AbortSignal.abort(), timeoutMs: 60_000 });
    assert.equal(result.aborted, true);
    assert.equal(result.timedOut, false);
    assert.equal(result.signal, "SIGTERM");
    assert.ok(performance.now() - started < 20_000);
  });

  it("keeps at most MAX_CAPTURED_CHARS of stdout, with a note, and still streams the rest", async () => {
    let streamed = 0;
    const total = MAX_CAPTURED_CHARS + 300_000;
    const result = await exec(`head -c ${total} /dev/zero | tr '\\0' a; echo done >&2`, { onOutput: (stream, text) => void (stream === "stdout" && (streamed += text.length)) });
    assert.equal(streamed, total);
    const note = `\n[exec: stdout capture stopped at ${MAX_CAPTURED_CHARS} characters]`;
    assert.ok(result.stdout.endsWith(note), result.stdout.slice(-80));
    const kept = result.stdout.length - note.length;
    assert.ok(kept >= MAX_CAPTURED_CHARS && kept < total, String(kept));
    assert.equal(result.stdout.indexOf("[exec:"), kept + 1);
    assert.equal(result.stderr, "done\n");
  });

  it("output that reaches the limit exactly says the capture stopped, and what comes after is not kept", async () => {
    // The command writes exactly MAX_CAPTURED_CHARS, then waits until the handler has seen all of
    // them (it creates the file the command waits for) before writing more: a chunk ends at the limit.
    const go = join(folder, "limit-go");
    let streamed = 0;
    const result = await exec(`head -c ${MAX_CAPTURED_CHARS} /dev/zero | tr '\\0' b; while [ ! -e ${JSON.stringify(go)} ]; do sleep 0.01; done; echo after`, {
      timeoutMs: 60_000,
      onOutput: (stream, text) => {
        if (stream === "stdout") streamed += text.length;
        if (streamed === MAX_CAPTURED_CHARS) writeFileSync(go, "");
      },
    });
    assert.equal(result.exitCode, 0);
    assert.equal(result.stdout, `${"b".repeat(MAX_CAPTURED_CHARS)}\n[exec: stdout capture stopped at ${MAX_CAPTURED_CHARS} characters]`);
  });
});
