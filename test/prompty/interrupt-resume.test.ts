// A .prompty run stopped for approvals (approvals.mode: interrupt) returns INTERRUPTED with a
// checkpoint naming the file; resumeAgent loads the file again and goes on at the stopped wave.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { ScriptedModel } from "../../src/model/scripted.js";
import { invokeAgent, resumeAgent } from "../../src/prompty/index.js";

const dir = mkdtempSync(join(tmpdir(), "agentloop-prompty-resume-"));
after(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, "payer.prompty");
writeFileSync(
  file,
  `---
name: payer
approvals:
  tools: [pay]
  mode: interrupt
inputs:
  - name: amount
    kind: number
tools:
  - name: pay
    kind: function
    parameters:
      - name: amount
        kind: number
---
system:
You pay bills.

user:
Pay {{amount}}.
`,
);
/** The `pay` handler: records each payment. */
const payHandler = (paid: number[]) => ({
  pay: ({ amount }: Record<string, unknown>) => {
    paid.push(Number(amount));
    return `paid ${amount}`;
  },
});
const script = () => [JSON.stringify({ tool_calls: [{ id: "call_pay", name: "pay", arguments: { amount: 42 } }] }), "Paid."];

describe("a .prompty run interrupted for approvals and resumed", () => {
  it("stops with a checkpoint naming the file; the resume (after a JSON round trip) runs the approved call once", async () => {
    const paid: number[] = [];
    const pay = payHandler(paid);
    const stopped = await invokeAgent(file, { amount: 42 }, pay, { model: new ScriptedModel(script()) });
    assert.equal(stopped.state, "INTERRUPTED");
    assert.equal(stopped.checkpoint?.source?.prompty, file);
    assert.deepEqual(
      stopped.checkpoint?.pending.map((entry) => [entry.toolCallId, entry.toolName, entry.arguments]),
      [["call_pay", "pay", { amount: 42 }]],
    );
    assert.deepEqual(paid, []);
    const checkpoint = JSON.parse(JSON.stringify(stopped.checkpoint));
    const done = await resumeAgent(checkpoint, { call_pay: { approve: true } }, pay, { model: new ScriptedModel(script()) });
    assert.equal(done.state, "COMPLETED");
    assert.equal(done.text, "Paid.");
    assert.deepEqual(paid, [42]);
    await assert.rejects(resumeAgent(checkpoint, { call_pay: { approve: true } }, pay, { model: new ScriptedModel(script()) }), /already resumed/);
    assert.deepEqual(paid, [42]);
  });

  it("a rejection is the call's result; a checkpoint without a file is refused naming the problem", async () => {
    const paid: number[] = [];
    const pay = payHandler(paid);
    const model = new ScriptedModel(script());
    const stopped = await invokeAgent(file, { amount: 42 }, pay, { model });
    const done = await resumeAgent(stopped.checkpoint!, { call_pay: { approve: false, reason: "too much" } }, pay, { model: new ScriptedModel(script()) });
    assert.equal(done.state, "COMPLETED");
    assert.deepEqual(paid, []);
    const toolResult = done.messages.find((message) => message.role === "tool");
    assert.equal(toolResult?.content, "Rejected: too much");
    const { source: _source, ...anonymous } = stopped.checkpoint!;
    await assert.rejects(resumeAgent(anonymous, { call_pay: { approve: true } }), /names no \.prompty file/);
  });
});
