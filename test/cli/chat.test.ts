import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cleanEnv, runCli, spawnCli } from "./helpers.js";

const toolCall = JSON.stringify({ tool_calls: [{ id: "call_1", name: "lookup", arguments: { city: "Paris" } }] });
const longAnswer = Array.from({ length: 400 }, (_, index) => `word${index}`).join(" ");

describe("agentloop chat (a real child process, piped stdin)", () => {
  it("streams answers, shows each tool wave with duration and ok/error, keeps one session, and leaves on /exit", async () => {
    const result = await runCli(["chat", "--mock", JSON.stringify([toolCall, "It is sunny in Paris."])], cleanEnv({ MEMORY_TYPE: "memory" }), "weather?\nand tomorrow?\n/exit\nnever read\n");
    assert.equal(result.code, 0, result.stderr);
    // Two runs, each: a wave with the (unknown) tool failing, then the answer.
    assert.equal(result.stdout.match(/● wave 1/g)?.length, 2);
    assert.match(result.stdout, /… running lookup \{"city":"Paris"\}/);
    assert.match(result.stdout, /✗ lookup \d+(\.\d+)? ms {2}Unknown tool: lookup/);
    assert.equal(result.stdout.match(/It is sunny in Paris\./g)?.length, 2);
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
      await cli.waitFor(/aborted: interrupted \(Ctrl-C\)/, "stderr");
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
    const result = await runCli(["chat", "--mock", '["x"]'], cleanEnv({ MEMORY_TYPE: "memory", AGENTIC_LOOP_MAX_STEPS: "lots" }));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /agentloop: AGENTIC_LOOP_MAX_STEPS: must be a positive integer/);
    const noModel = await runCli(["chat"], cleanEnv({ MEMORY_TYPE: "memory" }));
    assert.equal(noModel.code, 2);
    assert.match(noModel.stderr, /model: no model configured/);
    const badSession = await runCli(["chat", "--mock", '["x"]', "--session", "no spaces allowed"], cleanEnv({ MEMORY_TYPE: "memory" }));
    assert.equal(badSession.code, 2);
    assert.match(badSession.stderr, /--session: "no spaces allowed" must be/);
  });
});

describe("--help on every command", () => {
  for (const command of ["chat", "serve", "sessions", "events"]) {
    it(`${command} --help shows examples`, async () => {
      const result = await runCli([command, "--help"], cleanEnv());
      assert.equal(result.code, 0);
      assert.match(result.stdout, new RegExp(`Usage: agentloop ${command}`));
      assert.match(result.stdout, /Examples:\n {2}\$ agentloop /);
    });
  }
});
