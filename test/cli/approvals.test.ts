import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { cleanEnv, runCli } from "./helpers.js";
import { dynamicServerPath } from "../mcp/helpers.js";

// A real MCP server (stdio) whose `add-tool` the agent file marks as needing approval.
const root = mkdtempSync(join(tmpdir(), "agentloop-cli-approvals-"));
after(() => rmSync(root, { recursive: true, force: true }));
const agentFile = join(root, "agent.yaml");
writeFileSync(
  agentFile,
  `name: careful
mcpServers:
  dynamic:
    command: node
    args: ["${dynamicServerPath}"]
approvals:
  tools: ["add-*"]
  mode: interrupt
guardrails:
  deniedTools:
    - tools: remove-tool
      reason: nothing is removed from the terminal
`,
);
const script = JSON.stringify([
  JSON.stringify({ tool_calls: [{ id: "c1", name: "add-tool", arguments: { name: "greeter" } }, { id: "c2", name: "remove-tool", arguments: { name: "x" } }] }),
  "Finished.",
]);
// A chat reads one script across its messages: each message's turns follow the previous ones'.
const chatScript = JSON.stringify([...JSON.parse(script), ...JSON.parse(script)]);
const env = cleanEnv({ MEMORY_TYPE: "memory" });

describe("approvals on the command line (real child processes, a real MCP server)", () => {
  it("chat asks Allow <tool>(<args>)? [y/N] inline: y runs the call, n rejects it", async () => {
    const result = await runCli(["chat", "--agent", agentFile, "--mock", chatScript], env, "add it\ny\nagain\nn\n/exit\n");
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout.match(/Allow add-tool\(\{"name":"greeter"\}\)\? \[y\/N\] /g)?.length, 2);
    assert.match(result.stdout, /added greeter/);
    assert.match(result.stdout, /Rejected: declined by the user/);
    assert.match(result.stdout, /Tool denied by guardrail: nothing is removed from the terminal/);
    assert.equal(result.stdout.match(/Finished\./g)?.length, 2);
  });

  it("run --approve all | none | ask", async () => {
    const all = await runCli(["run", "add one", "--agent", agentFile, "--mock", script, "--approve", "all"], env);
    assert.equal(all.code, 0, all.stderr);
    assert.match(all.stdout, /added greeter/);
    assert.doesNotMatch(all.stderr, /Allow/);

    const none = await runCli(["run", "add one", "--agent", agentFile, "--mock", script, "--approve", "none", "--json"], env);
    assert.equal(none.code, 0, none.stderr);
    const ends = none.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .filter((event) => event.type === "tool-end");
    assert.deepEqual(
      ends.map((event) => [event.toolCallId, event.output]),
      [
        ["c1", "Rejected: rejected by --approve none"],
        ["c2", "Tool denied by guardrail: nothing is removed from the terminal"],
      ],
    );

    const asked = await runCli(["run", "add one", "--agent", agentFile, "--mock", script], env, "yes\n");
    assert.equal(asked.code, 0, asked.stderr);
    assert.match(asked.stderr, /Allow add-tool\(\{"name":"greeter"\}\)\? \[y\/N\] /);
    assert.match(asked.stdout, /added greeter/);

    const bad = await runCli(["run", "x", "--approve", "maybe"], env);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /--approve must be one of all, none, ask, got "maybe"/);
  });
});
