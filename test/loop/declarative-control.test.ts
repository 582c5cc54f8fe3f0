import assert from "node:assert/strict";
import { test } from "node:test";
import { defineTool, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { parsePrompty, startAgent } from "../../src/prompty/index.js";
import { buildAgentRuntime, parseAgentFile, settingsFrom } from "../../src/server/index.js";
import { calls } from "./helpers.js";

function results(messages: readonly unknown[]): Array<[string, unknown]> {
  return (messages as ToolResultMessage[]).filter((message) => message.role === "tool").map((message) => [message.toolCallId, message.content]);
}

function counter(name: string) {
  const ran: string[] = [];
  const tool = defineTool({ name, description: name, parameters: { type: "object", properties: {} }, execute: () => {
      ran.push(name);
      return `${name} ok`;
    },
  });
  return { tool, ran };
}

test("agent file: guardrails.deniedTools and approvals.tools apply to any tool, without code", async () => {
  const file = parseAgentFile(
    `
name: guarded
guardrails:
  deniedTools:
    - tools: ["shell_*"]
      reason: no shell on this agent
approvals:
  tools: remote_*
  mode: interrupt
`,
    "guarded.yaml",
  );
  const settings = settingsFrom(file, {});
  assert.deepEqual(settings.deniedTools, [{ tools: ["shell_*"], reason: "no shell on this agent" }]);
  assert.deepEqual(settings.approvals, { tools: ["remote_*"], mode: "interrupt", timeoutMs: undefined });
  const shell = counter("shell_run");
  const remote = counter("remote_deploy");
  const plain = counter("read_notes");
  const model = new ScriptedModel([calls(["shell_run", {}, "s"], ["remote_deploy", {}, "r"], ["read_notes", {}, "n"]), "done"]);
  const runtime = await buildAgentRuntime(settings, { model, tools: [shell.tool, remote.tool, plain.tool] });
  try {
    const first = await runtime.agent.run("go");
    assert.equal(first.state, "INTERRUPTED");
    assert.deepEqual(
      first.checkpoint!.pending.map((entry) => entry.toolName),
      ["remote_deploy"],
    );
    const result = await runtime.agent.resume(first.checkpoint!, { decisions: { r: { approve: true } } });
    assert.deepEqual(results(result.messages), [
      ["s", "Tool denied by guardrail: no shell on this agent"],
      ["r", "remote_deploy ok"],
      ["n", "read_notes ok"],
    ]);
    assert.deepEqual([shell.ran, remote.ran, plain.ran], [[], ["remote_deploy"], ["read_notes"]]);
  } finally {
    await runtime.close();
  }
});

test("agent file: bad guardrails and approvals are refused naming the field", () => {
  assert.throws(() => parseAgentFile("guardrails:\n  deniedTools:\n    - tools: shell\n", "a.yaml"), /a\.yaml: guardrails\.deniedTools\[0\]\.reason: is required/);
  assert.throws(() => parseAgentFile("guardrails:\n  denied: []\n", "a.yaml"), /a\.yaml: guardrails\.denied: unknown setting/);
  assert.throws(() => parseAgentFile("approvals:\n  tools: [1]\n", "a.yaml"), /a\.yaml: approvals\.tools: must be a tool name or glob/);
  assert.throws(() => parseAgentFile("approvals:\n  mode: later\n", "a.yaml"), /approvals\.mode: must be wait or interrupt/);
});

test(".prompty frontmatter: guardrails and approvals", async () => {
  const prompty = parsePrompty(`---
name: careful
guardrails:
  deniedTools:
    - tools: drop_table
      reason: read-only prompt
approvals:
  tools: [send_mail]
  mode: interrupt
tools:
  - name: drop_table
    kind: function
    description: drops
  - name: send_mail
    kind: function
    description: sends
---
user:
Tidy up.
`);
  const ran: string[] = [];
  const model = new ScriptedModel([calls(["drop_table", {}, "d"], ["send_mail", {}, "m"]), "tidy"]);
  const { run } = await startAgent(prompty, {}, { drop_table: () => ran.push("drop"), send_mail: () => ran.push("mail") }, { model });
  const result = await run;
  assert.equal(result.state, "INTERRUPTED");
  assert.deepEqual(
    result.checkpoint!.pending.map((entry) => entry.toolName),
    ["send_mail"],
  );
  assert.deepEqual(ran, []);
  await assert.rejects(
    startAgent(parsePrompty("---\nname: x\napprovals:\n  mode: later\n---\nuser:\nhi\n", "x.prompty"), {}, {}, { model }),
    /x\.prompty: approvals\.mode must be wait or interrupt, got "later"/,
  );
});
