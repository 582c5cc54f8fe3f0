// `agentloop code` end to end: the CLI in a real pseudo-terminal (@lydell/node-pty, prebuilt), a
// scripted model, a temp project with a failing check; and piped, for the one-shot mode's errors.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { codeCommand } from "../../src/cli/commands/code.js";
import { runCli } from "../../src/cli/program.js";
import { captured, cleanEnv, inTerminal, runCli as runCliChild } from "./helpers.js";

const folder = realpathSync(mkdtempSync(join(tmpdir(), "agentloop-code-cli-")));
after(() => rmSync(folder, { recursive: true, force: true }));

// The session of the done-when test is the documented one (docs/coding.md): examples/coding/, a
// project whose check fails and a script that reads, runs the check, tries a non-unique edit, makes
// a unique one and runs the check again.
const example = new URL("../../examples/coding/", import.meta.url).pathname;
const MATH = readFileSync(join(example, "project/math.mjs"), "utf8");
const call = (name: string, args: object) => ({ tool_calls: [{ name, arguments: args }] });

let counter = 0;
function project(): string {
  const root = join(folder, `p${++counter}`);
  rmSync(root, { recursive: true, force: true });
  cpSync(join(example, "project"), root, { recursive: true });
  cpSync(join(example, "script.json"), join(root, "script.json"));
  return root;
}

// The suites are independent (each has its own temp project): they run side by side.
describe("agentloop code", { concurrency: 4 }, () => {
describe("agentloop code in a terminal", () => {
  it("an interactive scripted session: reads, runs the check, a non-unique edit fails, a unique one fixes the file (diff shown), the check passes; each writing tool asked first", async () => {
    const root = project();
    const term = inTerminal(["code", "--mock", "@script.json"], root);
    let at = await term.waitFor(/code› /);
    assert.match(term.output(), /agentloop code · .*p\d+ · scripted · anthropic tools · approvals: ask · AGENTS\.md/);
    term.type("Fix add() so check.mjs passes\r");
    // read_file never asks; shell does.
    at = await term.waitFor(/Allow shell\(\{"command":"node check\.mjs","description":"run the check"\}\)\? \[y\/N\] /, at);
    assert.match(term.output(), /✓ read_file .* 1 \| export const add = \(a, b\) => a - b;/);
    term.type("y\r");
    at = await term.waitFor(/Allow edit_file\(.*"old_string":"a - b".*\? \[y\/N\] /, at);
    // The shell output streamed, line by line, before the call's summary.
    assert.match(term.output(), /│ FAIL add\(2, 3\) = -1\n {2}✓ shell .*exit code: 1/);
    term.type("y\r");
    at = await term.waitFor(/Allow edit_file\(.*"old_string":"add = \(a, b\) => a - b".*\? \[y\/N\] /, at);
    assert.match(term.output(), /✗ edit_file .*old_string matches 2 times in math\.mjs/);
    term.type("y\r");
    at = await term.waitFor(/Allow shell\(\{"command":"node check\.mjs"\}\)\? \[y\/N\] /, at);
    assert.match(term.output(), /✓ edit_file .*Edited math\.mjs: 1 replacement\n {4}math\.mjs\n {4}@@ -1,2 \+1,2 @@\n {4}-export const add = \(a, b\) => a - b;\n {4}\+export const add = \(a, b\) => a \+ b;\n {5}export const sub/);
    term.type("y\r");
    at = await term.waitFor(/Fixed add\(\): it subtracted\. The check passes now\.\n/, at);
    assert.match(term.output(), /│ PASS\n {2}✓ shell .*exit code: 0/);
    at = await term.waitFor(/COMPLETED · 6 model calls · 5 waves · 5 tool calls\n/, at);
    await term.waitFor(/code› /, at);
    // Colours on a terminal.
    assert.ok(term.raw().includes("\u001b[32m+export const add = (a, b) => a + b;\u001b[39m"));
    term.type("/exit\r");
    assert.equal(await term.exited, 0);
    assert.equal(readFileSync(join(root, "math.mjs"), "utf8"), MATH.replace("add = (a, b) => a - b", "add = (a, b) => a + b"));
  });

  it("one-shot with --approve all asks nothing and exits 0; a declined edit leaves the file as it was", async () => {
    // Both at once: one approves everything, the other is answered y, then n to each edit and the last check.
    const root = project();
    const other = project();
    const term = inTerminal(["code", "Fix add", "--mock", "@script.json", "--approve", "all"], root);
    const declined = inTerminal(["code", "Fix add", "--mock", "@script.json"], other);
    let at = 0;
    for (const answer of ["y", "n", "n", "n"]) {
      at = await declined.waitFor(/Allow [^\n]*\[y\/N\] /, at);
      declined.type(`${answer}\r`);
    }
    assert.equal(await term.exited, 0);
    assert.ok(!term.output().includes("Allow "), term.output());
    assert.match(term.output(), /Fixed add\(\)/);
    assert.equal(readFileSync(join(root, "math.mjs"), "utf8"), MATH.replace("add = (a, b) => a - b", "add = (a, b) => a + b"));
    assert.equal(await declined.exited, 0);
    assert.match(declined.output(), /✗ edit_file .*Rejected: declined by the user/);
    assert.equal(readFileSync(join(other, "math.mjs"), "utf8"), MATH);
  });
});

describe("agentloop code: Ctrl-C", () => {
  it("aborts the running input (its command is killed), keeps the session and its prompt; /exit leaves", async () => {
    const root = project();
    // A duration of its own, so pgrep below never sees another run's sleep (a second copy of the suite).
    const sleep = `sleep ${(31 + Math.random()).toFixed(6)}`;
    const script = [call("shell", { command: `echo started; ${sleep}`, timeout_ms: 60_000 }), "never reached"];
    // In a file: on the command line the script would show in `pgrep -f` below.
    writeFileSync(join(root, "sleep.json"), JSON.stringify(script));
    const term = inTerminal(["code", "--mock", "@sleep.json", "--approve", "all"], root);
    let at = await term.waitFor(/code› /);
    const started = performance.now();
    term.type("Sleep a while\r");
    at = await term.waitFor(/│ started\n/, at);
    term.type("\u0003");
    at = await term.waitFor(/⏹ aborted: interrupted \(Ctrl-C\)\n/, at);
    assert.ok(performance.now() - started < 20_000, "the run did not wait for the sleep");
    // The command's process group got SIGTERM: the sleep is gone within the 2 s grace.
    const running = () => spawnSync("pgrep", ["-f", sleep]).status === 0;
    for (let waited = 0; running() && waited < 5_000; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(running(), false, `${sleep} still runs`);
    await term.waitFor(/code› /, at);
    term.type("/exit\r");
    assert.equal(await term.exited, 0);
  });
});

describe("agentloop code --json", () => {
  it("prints the loop events one a line, the lines of run --json (stdout holds nothing else)", async () => {
    const root = project();
    const script = JSON.stringify([call("read_file", { file_path: "math.mjs" }), "Read it."]);
    const [code, run] = await Promise.all([
      runCliChild(["code", "Read math.mjs", "--json", "--mock", script, "--workspace", root], cleanEnv()),
      runCliChild(["run", "Read math.mjs", "--json", "--mock", script], cleanEnv({ MEMORY_TYPE: "memory" })),
    ]);
    assert.equal(code.code, 0, code.stderr);
    const events = code.stdout.trim().split("\n").map((line) => JSON.parse(line) as { type: string; name?: string; isError?: boolean });
    const runEvents = run.stdout.trim().split("\n").map((line) => JSON.parse(line) as { type: string });
    // The same kinds of lines in the same order (run has no read_file: its call fails, with a tool-error more).
    const kinds = (list: Array<{ type: string }>) => [...new Set(list.map((event) => event.type).filter((type) => type !== "tool-error"))];
    assert.deepEqual(kinds(events), kinds(runEvents));
    assert.equal(events[0]!.type, "run-start");
    assert.equal(events.at(-1)!.type, "run-end");
    assert.equal(events.find((event) => event.type === "tool-end")?.isError, false);
    assert.match(code.stderr, /^agentloop code · /);
  });
});

describe("agentloop code with DEBUG_MOCK_RESPONSES", () => {
  it("plays the variable's script when no --mock or --model is given, and names an invalid one (exit 2)", async () => {
    const root = project();
    const [ok, bad] = await Promise.all([
      runCliChild(["code", "What is here?", "--workspace", root], cleanEnv({ DEBUG_MOCK_RESPONSES: JSON.stringify([call("glob", { pattern: "*.mjs" }), "Two modules."]) })),
      runCliChild(["code", "x", "--workspace", root], cleanEnv({ DEBUG_MOCK_RESPONSES: "[not json" })),
    ]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stderr, /· scripted · anthropic tools · approvals: ask/);
    assert.match(ok.stdout, /✓ glob .*check\.mjs math\.mjs|✓ glob .*math\.mjs check\.mjs/);
    assert.match(ok.stdout, /Two modules\./);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /agentloop: DEBUG_MOCK_RESPONSES: not valid JSON/);
  });
});

describe("agentloop code --model openai:…", () => {
  it("talks to a real Chat Completions endpoint with the openai profile: apply_patch (no edit_file) and the environment in the system prompt", async () => {
    const root = project();
    const patch = ["*** Begin Patch", "*** Update File: math.mjs", "@@", "-export const add = (a, b) => a - b;", "+export const add = (a, b) => a + b;", "*** End Patch"].join("\n");
    const requests: Array<{ model: string; messages: Array<{ role: string; content: unknown }>; tools?: Array<{ function: { name: string } }> }> = [];
    const chunk = (delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-4.1", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const server = createServer((request, response) => {
      let body = "";
      request.on("data", (data) => (body += data));
      request.on("end", () => {
        requests.push(JSON.parse(body));
        response.writeHead(200, { "content-type": "text/event-stream" });
        if (requests.length === 1) {
          const call = { index: 0, id: "call_1", type: "function", function: { name: "apply_patch", arguments: JSON.stringify({ patch }) } };
          response.end(`${chunk({ role: "assistant", content: null, tool_calls: [call] }, null)}${chunk({}, "tool_calls")}data: [DONE]\n\n`);
        } else {
          response.end(`${chunk({ role: "assistant", content: "Patched add()." }, null)}${chunk({}, "stop")}data: [DONE]\n\n`);
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const result = await runCliChild(
        ["code", "Fix add()", "--model", "openai:gpt-4.1", "--workspace", root, "--approve", "all"],
        cleanEnv({ OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` }),
      );
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, /· openai:gpt-4\.1 · openai tools · approvals: off/);
      assert.match(result.stdout, /✓ apply_patch .*Applied the patch: M math\.mjs\n {4}math\.mjs\n {4}@@ -1,2 \+1,2 @@\n {4}-export const add = \(a, b\) => a - b;\n {4}\+export const add = \(a, b\) => a \+ b;/);
      assert.match(result.stdout, /Patched add\(\)\./);
      assert.equal(readFileSync(join(root, "math.mjs"), "utf8"), MATH.replace("add = (a, b) => a - b", "add = (a, b) => a + b"));
      const tools = (requests[0].tools ?? []).map((tool) => tool.function.name);
      assert.ok(tools.includes("apply_patch") && !tools.includes("edit_file"), tools.join(", "));
      const system = requests[0].messages[0];
      assert.equal(system.role, "system");
      assert.match(String(system.content), /<environment>\nWorking directory: .*\n[\s\S]*Model: openai:gpt-4\.1\n<\/environment>[\s\S]*## AGENTS\.md\n\nRun `node check\.mjs` after each change\./);
    } finally {
      server.close();
    }
  });
});

describe("agentloop code errors", () => {
  it("names a bad --workspace, a missing model, an unreadable script and an unknown profile (exit 2)", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["code", "x", "--mock", '["hi"]', "--workspace", join(folder, "nowhere")], /agentloop: --workspace: Workspace: the root folder .*nowhere does not exist/],
      [["code", "x"], /agentloop: model: no model configured; pass --model provider:model/],
      [["code", "x", "--mock", `@${join(folder, "missing.json")}`], /agentloop: --mock: cannot read .*missing\.json \(ENOENT\)/],
      [["code", "x", "--mock", '["hi"]', "--profile", "gemini"], /agentloop: createCodingAgent: unknown profile "gemini"/],
      [["code", "x", "--mock", '["hi"]', "--approve", "maybe"], /--approve must be one of all, none, ask, got "maybe"/],
      [["code", "x", "--mock", '["hi"]', "--max-turns", "0"], /--max-turns must be a positive integer, got "0"/],
    ];
    // In this process (the command fails before it reads the environment's model variables, or finds none).
    const saved = { ...process.env };
    for (const key of Object.keys(process.env)) if (/^(MODEL_|DEBUG_MOCK|OPENAI_|ANTHROPIC_)/.test(key)) delete process.env[key];
    try {
      for (const [args, expected] of cases) {
        const stdout = captured();
        const stderr = captured();
        const code = await runCli(args, { stdout, stderr });
        assert.equal(code, 2, `${args.join(" ")}: ${stderr.text()}`);
        assert.match(stderr.text(), expected);
      }
    } finally {
      Object.assign(process.env, saved);
    }
  });
});

  describe("agentloop code's first line", () => {
    it("says where it works and what it read, and what the 32 KB budget cut from the project's instructions", async () => {
      const root = project();
      writeFileSync(join(root, "AGENTS.md"), "x".repeat(40_000));
      const stdout = captured();
      const stderr = captured();
      const code = await codeCommand("Hi", { mock: '["Hello."]', workspace: root }, { stdin: Readable.from([]), stdout, stderr, env: {} });
      assert.equal(code, 0);
      assert.match(stderr.text(), /^agentloop code · .*p\d+ · scripted · anthropic tools · approvals: ask · AGENTS\.md\nproject instructions cut to 32 KB: AGENTS\.md: 32768 of 40014 bytes kept\n/);
      assert.match(stdout.text(), /Hello\./);
    });
  });
});
