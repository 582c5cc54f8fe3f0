// One rule for MCP tool names (docs/mcp.md, "Tool names"): an MCP tool answers to `<server>.<tool>`
// and to its bare `<tool>` (while no other tool has it), in the library (which lists it as
// `<server>.<tool>`) and in agent files and `--mcp` (which list it bare, as KAOS does): in a
// model's call, `approvals.tools` and `guardrails.deniedTools`. Before, the qualified name was an
// unknown tool on the command line and the bare one an unknown tool in the library.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { Agent, ScriptedModel } from "../../src/index.js";
import { connectMcp } from "../../src/mcp/index.js";
import { dynamicServerPath } from "../mcp/helpers.js";
import { cleanEnv, runCli } from "./helpers.js";

const server = dynamicServerPath;
const root = mkdtempSync(join(tmpdir(), "agentloop-mcp-names-"));
after(() => rmSync(root, { recursive: true, force: true }));
const calls = (...list: Array<[string, string, object]>) => JSON.stringify({ tool_calls: list.map(([id, name, args]) => ({ id, name, arguments: args })) });

describe("MCP tool names: <server>.<tool>, and the bare name when it is unambiguous", () => {
  it("the CLI (an agent file): the qualified name runs the tool, and approvals and deniedTools match it by either name", async () => {
    const agentFile = join(root, "agent.yaml");
    writeFileSync(
      agentFile,
      `name: names
mcpServers:
  dynamic:
    command: node
    args: ["${server}"]
approvals:
  tools: ["dynamic.add-*"]
guardrails:
  deniedTools:
    - tools: remove-tool
      reason: nothing is removed
`,
    );
    const script = JSON.stringify([calls(["c1", "dynamic.add-tool", { name: "greeter" }], ["c2", "dynamic.remove-tool", { name: "x" }]), "Finished."]);
    const result = await runCli(["run", "add one", "--agent", agentFile, "--mock", script, "--approve", "none", "--json"], cleanEnv({ MEMORY_TYPE: "memory" }));
    assert.equal(result.code, 0, result.stderr);
    const ends = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string; toolCallId: string; name: string; output: string })
      .filter((event) => event.type === "tool-end");
    assert.deepEqual(
      ends.map((event) => [event.toolCallId, event.name, event.output]),
      [
        ["c1", "add-tool", "Rejected: rejected by --approve none"],
        ["c2", "remove-tool", "Tool denied by guardrail: nothing is removed"],
      ],
    );
    const asked = await runCli(["run", "add one", "--agent", agentFile, "--mock", JSON.stringify([calls(["c1", "dynamic.add-tool", { name: "greeter" }]), "Done."]), "--approve", "all"], cleanEnv({ MEMORY_TYPE: "memory" }));
    assert.equal(asked.code, 0, asked.stderr);
    assert.match(asked.stdout, /✓ add-tool .*added greeter/);
  });

  it("the library (connectMcp lists dynamic.add-tool): a bare call runs it; a bare name two servers share stays unknown", async () => {
    const [one, two] = await Promise.all([connectMcp({ name: "dynamic", command: "node", args: [server] }), connectMcp({ name: "other", command: "node", args: [server] })]);
    try {
      const model = new ScriptedModel([calls(["c1", "add-tool", { name: "greeter" }]), "Done."]);
      const result = await new Agent({ model, tools: [one] }).run("add one");
      assert.equal(result.state, "COMPLETED", result.reason);
      const toolMessage = result.messages.find((message) => message.role === "tool");
      assert.match(JSON.stringify(toolMessage), /added greeter/);
      assert.equal(model.requests[0]!.tools!.some((tool) => tool.name === "dynamic.add-tool"), true);

      const ambiguous = new ScriptedModel([calls(["c1", "add-tool", { name: "x" }]), "Done."]);
      const both = await new Agent({ model: ambiguous, tools: [one, two] }).run("add one");
      assert.match(JSON.stringify(both.messages.find((message) => message.role === "tool")), /Unknown tool: add-tool\. Available tools: .*dynamic\.add-tool.*other\.add-tool/);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });
});
