import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { Command } from "commander";
import { Readable } from "node:stream";
import { chatCommand, registerChatCommand } from "../../src/cli/commands/chat.js";
import { registerServeCommand } from "../../src/cli/commands/serve.js";
import { registerRunsCommand } from "../../src/cli/commands/runs.js";
import { registerEventsCommand, registerSessionsCommand } from "../../src/cli/commands/sessions.js";
import { captured, cleanEnv, cliArgs, repositoryRoot, runCli, spawnCli } from "./helpers.js";

const toolCall = JSON.stringify({ tool_calls: [{ id: "call_1", name: "lookup", arguments: { city: "Paris" } }] });
const longAnswer = Array.from({ length: 400 }, (_, index) => `word${index}`).join(" ");

describe("agentloop chat (a real child process, piped stdin)", () => {
  it("streams answers, shows each tool wave with duration and ok/error, keeps one session, and leaves on /exit", async () => {
    // One script for the whole conversation: the second message continues where the first stopped.
    const script = JSON.stringify([toolCall, "It is sunny in Paris.", toolCall, "Tomorrow too."]);
    const result = await runCli(["chat", "--mock", script], cleanEnv({ MEMORY_TYPE: "memory" }), "weather?\nand tomorrow?\n/exit\nnever read\n");
    assert.equal(result.code, 0, result.stderr);
    // Two runs, each: a wave with the (unknown) tool failing, then the answer.
    assert.equal(result.stdout.match(/● wave 1/g)?.length, 2);
    assert.match(result.stdout, /… running lookup \{"city":"Paris"\}/);
    assert.match(result.stdout, /✗ lookup \d+(\.\d+)? ms {2}Unknown tool: lookup/);
    assert.match(result.stdout, /It is sunny in Paris\.[\s\S]*Tomorrow too\./);
    assert.doesNotMatch(result.stdout, /no more mock responses/);
    assert.doesNotMatch(result.stdout, /never read/);
    assert.match(result.stderr, /session chat_[0-9a-f]{8}/);
    assert.match(result.stderr, /continue later with: agentloop chat --session chat_/);
    // Not a TTY: no colour codes anywhere.
    assert.doesNotMatch(result.stdout + result.stderr, /\u001b\[/);
  });

  it("Ctrl-C aborts the running answer and the chat goes on", async () => {
    const cli = spawnCli(["chat", "--mock", JSON.stringify([longAnswer])], cleanEnv({ MEMORY_TYPE: "memory" }));
    try {
      cli.write("talk for a long time\n");
      await cli.waitFor(/word5 /);
      cli.child.kill("SIGINT");
      await cli.waitFor(/⏹ aborted: interrupted \(Ctrl-C\)/, "stderr");
      assert.doesNotMatch(cli.stderr(), /aborted: aborted/, "the state is said once");
      assert.doesNotMatch(cli.stdout(), /word399/);
      cli.write("/session\n");
      await cli.waitFor(/^chat_[0-9a-f]{8}$/m);
      cli.write("/exit\n");
      const { code } = await cli.exited;
      assert.equal(code, 0);
    } finally {
      cli.child.kill("SIGKILL");
    }
  });

  it("with piped input, exits with the last run's code: 1 when it failed, 3 at a limit, 0 when a later run completed", async () => {
    const lookup = JSON.stringify({ tool_calls: [{ name: "lookup", arguments: {} }] });
    const [failed, limited, recovered] = await Promise.all([
      runCli(["chat"], cleanEnv({ MEMORY_TYPE: "memory", MODEL_API_URL: "http://127.0.0.1:1", MODEL_NAME: "nothing-listens" }), "hi\n"),
      runCli(["chat", "--max-steps", "1", "--mock", JSON.stringify([lookup])], cleanEnv({ MEMORY_TYPE: "memory" }), "look it up\n"),
      runCli(["chat", "--max-steps", "1", "--mock", JSON.stringify([lookup, "Done."])], cleanEnv({ MEMORY_TYPE: "memory" }), "look it up\nthanks\n"),
    ]);
    assert.equal(failed.code, 1, failed.stderr);
    assert.match(failed.stderr, /✗ failed: .*ECONNREFUSED/);
    assert.equal(limited.code, 3, limited.stderr);
    assert.match(limited.stderr, /■ TURN_LIMIT/);
    assert.equal(recovered.code, 0, recovered.stderr);
  });

  it("prints JSON loop events with --json", async () => {
    const result = await runCli(["chat", "--json", "--mock", '["Hi!"]'], cleanEnv({ MEMORY_TYPE: "memory" }), "hello\n");
    assert.equal(result.code, 0, result.stderr);
    const types = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line).type);
    assert.equal(types[0], "run-start");
    assert.ok(types.includes("text-delta"));
    assert.equal(types.at(-1), "run-end");
  });

  it("fails with a message naming the setting on bad configuration", async () => {
    // In-process: main prints the rejection and exits 2 (test/cli/serve.test.ts checks that path).
    const io = { stdin: Readable.from([]), stdout: captured(), stderr: captured(), env: cleanEnv({ MEMORY_TYPE: "memory" }) };
    await assert.rejects(chatCommand({ mock: '["x"]' }, { ...io, env: cleanEnv({ MEMORY_TYPE: "memory", AGENTIC_LOOP_MAX_STEPS: "lots" }) }), {
      kind: "configuration",
      message: /^AGENTIC_LOOP_MAX_STEPS: must be a positive integer/,
    });
    await assert.rejects(chatCommand({}, io), { kind: "configuration", message: /^model: no model configured/ });
    await assert.rejects(chatCommand({ mock: '["x"]', session: "no spaces allowed" }, io), { kind: "configuration", message: /^--session: "no spaces allowed" must be/ });
  });
});

describe("--help on every command", () => {
  for (const [command, register] of [
    ["chat", registerChatCommand],
    ["serve", registerServeCommand],
    ["sessions", registerSessionsCommand],
    ["events", registerEventsCommand],
    ["runs", registerRunsCommand],
  ] as const) {
    it(`${command} --help shows examples`, async () => {
      let output = "";
      const program = new Command("agentloop").exitOverride().configureOutput({ writeOut: (text) => (output += text) });
      register(program);
      await assert.rejects(program.parseAsync(["node", "agentloop", command, "--help"]), (error: unknown) => (error as { code?: string }).code === "commander.helpDisplayed");
      assert.match(output, new RegExp(`Usage: agentloop ${command}`));
      assert.match(output, /Examples:\n {2}\$ agentloop /);
    });
  }
});

const hasScript = spawnSync("script", ["--version"]).status === 0;

/** Runs the chat in a pseudo-terminal through util-linux `script`, so stdout is a TTY; types a
 * message once the prompt shows and `/exit` once the answer is in. */
async function chatOnTty(extraEnv: NodeJS.ProcessEnv): Promise<string> {
  const mock = JSON.stringify([JSON.stringify({ tool_calls: [{ id: "c1", name: "lookup", arguments: {} }] }), "Answer on a TTY"]);
  const quote = (word: string) => `'${word.replace(/'/g, "'\\''")}'`;
  const command = [process.execPath, ...cliArgs(["chat", "--mock", mock])].map(quote).join(" ");
  const child = spawn("script", ["-qec", command, "/dev/null"], { cwd: repositoryRoot, env: cleanEnv({ MEMORY_TYPE: "memory", TERM: "xterm", ...extraEnv }) });
  let output = "";
  let step = 0;
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
    if (step === 0 && output.includes("› ")) {
      step = 1;
      child.stdin.write("hello\r");
    } else if (step === 1 && output.includes("Answer on a TTY")) {
      step = 2;
      child.stdin.write("/exit\r");
    }
  });
  await new Promise((resolve) => child.once("exit", resolve));
  clearTimeout(timer);
  return output;
}

describe("colours only on a TTY, and NO_COLOR respected", { skip: hasScript ? false : "needs util-linux script for a pseudo-terminal" }, () => {
  it("colours the chat on a terminal, with a live spinner line while a tool runs", async () => {
    const output = await chatOnTty({});
    assert.match(output, /\u001b\[31m✗\u001b\[39m \u001b\[1mlookup/);
    assert.match(output, /\u001b\[2K/, "the spinner's status line is cleared");
    assert.match(output, /Answer on a TTY/);
    assert.match(output, /bye/, "left through /exit");
  });
  it("prints no colour codes with NO_COLOR set", async () => {
    const output = await chatOnTty({ NO_COLOR: "1" });
    assert.match(output, /✗ lookup/);
    assert.doesNotMatch(output, /\u001b\[3\dm|\u001b\[1m|\u001b\[2m/);
  });
});
