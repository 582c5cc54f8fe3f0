// The command line's edges as a shell user meets them: usage errors (one line, a pointer to --help,
// exit 2) and a reader that goes away (`| head -1`: a quiet exit, no EPIPE stack trace).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { openEmbeddedStore } from "../../src/memory/embedded.js";
import { cleanEnv, runCli, spawnCli } from "./helpers.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-pipes-"));
after(() => rmSync(root, { recursive: true, force: true }));

describe("usage errors", () => {
  it("say what is wrong in one line, point to the command's --help, and exit 2", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["run"], /^agentloop: missing required argument 'prompt'\nRun "agentloop run --help" for usage\.\n$/],
      [["run", "x", "--frobnicate"], /^agentloop: unknown option '--frobnicate'\nRun "agentloop run --help" for usage\.\n$/],
      [["demo", "hotel", "--scenario", "4"], /^agentloop: option '--scenario <n>' argument '4' is invalid\. Allowed choices are 1, 2, 3\.\nRun "agentloop demo hotel --help" for usage\.\n$/],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(args, cleanEnv())));
    results.forEach((result, index) => {
      const [args, expected] = cases[index]!;
      assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.match(result.stderr, expected);
      assert.equal(result.stdout, "");
    });
  });
});

describe("messages that name the setting", () => {
  it("code --workspace <a file>, serve --port <a busy port>, and chat --help's store path", async () => {
    const file = join(root, "not-a-folder.txt");
    writeFileSync(file, "x");
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    const { port } = busy.address() as AddressInfo;
    try {
      const [code, serve, help] = await Promise.all([
        runCli(["code", "x", "--mock", '["hi"]', "--workspace", file], cleanEnv()),
        runCli(["serve", "--port", String(port), "--host", "127.0.0.1", "--mock", '["hi"]'], cleanEnv({ MEMORY_TYPE: "memory", AGENT_PORT: "8999" })),
        runCli(["chat", "--help"], cleanEnv()),
      ]);
      assert.equal(code.code, 2, code.stderr);
      assert.match(code.stderr, new RegExp(`^agentloop: --workspace: Workspace: the root ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is a file, not a folder\n$`));
      assert.equal(serve.code, 2, serve.stderr);
      assert.match(serve.stderr, new RegExp(`agentloop: --port: port ${port} is already in use\n$`));
      assert.doesNotMatch(serve.stderr, /AGENT_PORT/);
      assert.equal(help.code, 0);
      assert.match(help.stdout, /default: the embedded\s+store \.agentloop\/<agent name>\/memory\.db in this folder, or MEMORY_PATH/);
    } finally {
      busy.close();
    }
  });
});

/** Runs `agentloop <args>`, reads its first line, then closes the pipe as `head -1` does; its exit and stderr. */
async function headOne(args: string[], env: NodeJS.ProcessEnv, cwd?: string) {
  const cli = spawnCli(args, env, cwd);
  cli.child.stdin.end();
  const [first] = await cli.waitFor(/^.*\n/);
  cli.child.stdout.destroy();
  const { code, signal } = await cli.exited;
  return { first, code, signal, stderr: cli.stderr() };
}

describe("a closed pipe (| head -1)", () => {
  it("run --json, demo hotel, events, sessions export and --help exit 0 without a stack trace", async () => {
    // One session of 500 events (the store keeps the last 500): more than a pipe holds, so the writer meets the closed pipe.
    const store = await openEmbeddedStore({ path: join(root, "memory.db") });
    await store.append("s1", Array.from({ length: 500 }, (_, index) => ({ event_type: "user_message", content: `message ${index} ${"x".repeat(40)}` })));
    await store.close();
    const env = cleanEnv({ MEMORY_TYPE: "embedded", MEMORY_PATH: join(root, "memory.db") });
    const words = JSON.stringify([Array.from({ length: 200 }, (_, index) => `word${index}`).join(" ")]);
    const runs = await Promise.all([
      headOne(["run", "talk", "--json", "--mock", words], env),
      headOne(["demo", "hotel"], env),
      headOne(["events", "s1"], env),
      headOne(["sessions", "export"], env),
      headOne(["run", "--help"], env),
    ]);
    const [run, demo, events, exported, help] = runs;
    assert.match(run!.first, /^\{"type":"run-start"/);
    assert.match(demo!.first, /● wave 1|scenario/);
    assert.match(events!.first, /user_message/);
    assert.match(exported!.first, /^\{"event_id":"[^"]+","session_id":"s1"/);
    assert.match(help!.first, /^Usage: agentloop run/);
    for (const result of runs) {
      assert.doesNotMatch(result.stderr, /EPIPE|Error|at /, result.stderr);
      assert.deepEqual([result.code, result.signal], [0, null], result.stderr);
    }
  });
});
