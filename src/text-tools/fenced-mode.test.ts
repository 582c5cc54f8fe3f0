import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Agent } from "../loop/agent.js";
import type { LoopEvent } from "../loop/events.js";
import { textOf } from "../messages.js";
import { ScriptedModel } from "../model/scripted.js";
import { defineTool } from "../tools/tool.js";
import { FENCED_AGENT_INSTRUCTIONS, FENCED_TOOLS_INSTRUCTIONS, fencedSystemPrompt, fencedToolCalling, parseFencedBlocks, withToolCallMode } from "./index.js";

delete process.env.DEBUG_MOCK_RESPONSES;

const adder = () => {
  const calls: unknown[] = [];
  const tool = defineTool({
    name: "add",
    description: "Adds two numbers.",
    parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
    execute: (args) => {
      calls.push(args);
      return String(Number(args.a) + Number(args.b));
    },
  });
  return { tool, calls };
};

const block = (kind: string, value: object) => `\`\`\`${kind}\n${JSON.stringify(value)}\n\`\`\``;

async function runAll(agent: Agent, input: string) {
  const run = agent.run(input);
  const events: LoopEvent[] = [];
  for await (const event of run) events.push(event);
  return { events, result: await run };
}

const systemOf = (request: { messages: Array<{ role: string }> }) => {
  const system = request.messages.find((message) => message.role === "system");
  return system ? textOf(system as never) : "";
};
const lastUserText = (request: { messages: Array<{ role: string }> }) => textOf(request.messages.filter((message) => message.role === "user").at(-1) as never);

describe("parseFencedBlocks", () => {
  it("reads tool_call and delegate blocks after prose, in order", () => {
    const text = `I will compute it.\n${block("tool_call", { tool: "calculator", arguments: { a: 5, b: 3 } })}\nand ask:\n${block("delegate", { agent: "worker", task: "Check it" })}`;
    const blocks = parseFencedBlocks(text);
    assert.deepEqual(
      blocks.map(({ kind, name, arguments: args }) => ({ kind, name, args })),
      [
        { kind: "tool_call", name: "calculator", args: '{"a":5,"b":3}' },
        { kind: "delegate", name: "delegate_to_worker", args: '{"task":"Check it"}' },
      ],
    );
    assert.equal(text.slice(0, blocks[0].start), "I will compute it.\n");
  });

  it("leaves a block that is not a JSON object naming its tool in the text (as KAOS does)", () => {
    assert.deepEqual(parseFencedBlocks("```tool_call\n{not json}\n```"), []);
    assert.deepEqual(parseFencedBlocks(block("tool_call", { arguments: {} })), []);
    assert.deepEqual(parseFencedBlocks(block("delegate", { task: "no agent" })), []);
    assert.deepEqual(parseFencedBlocks('```json\n{"tool": "add", "arguments": {}}\n```'), []);
  });
});

describe("fenced tool calling (KAOS's current protocol)", () => {
  it("runs a KAOS mock script: prose then a tool_call block, the tool runs, the answer streams", async () => {
    const { tool, calls } = adder();
    const inner = new ScriptedModel([`Let me calculate.\n${block("tool_call", { tool: "add", arguments: { a: 5, b: 3 } })}`, "The answer is 8."]);
    const agent = new Agent({ instructions: "You are a calculator.", model: fencedToolCalling(inner), tools: [tool] });
    const { events, result } = await runAll(agent, "What is 5 + 3?");
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "The answer is 8.");
    assert.deepEqual(calls, [{ a: 5, b: 3 }]);
    const commentary = events.flatMap((event) => (event.type === "commentary-delta" ? [event.delta] : [])).join("");
    assert.equal(commentary.trim(), "Let me calculate.");
    const answer = events.flatMap((event) => (event.type === "text-delta" ? [event.delta] : [])).join("");
    assert.equal(answer, "The answer is 8.");

    // KAOS's system prompt, its instructions verbatim, and no native tools.
    const [first, second] = inner.requests;
    assert.equal(first.tools, undefined);
    const system = systemOf(first);
    assert.ok(system.startsWith("## Agent System Prompt\nYou are a calculator.\n\n## Available Tools\n- **add**: Adds two numbers.\n  Parameters: {\n"), system);
    assert.ok(system.endsWith(FENCED_TOOLS_INSTRUCTIONS));
    assert.ok(FENCED_TOOLS_INSTRUCTIONS.includes('```tool_call\n{"tool": "tool_name", "arguments": {"arg1": "value1"}}\n```'));
    // The call is shown back as the block; the result as KAOS words it.
    const assistant = second.messages.find((message) => message.role === "assistant");
    assert.ok(textOf(assistant as never).includes('```tool_call\n{"tool":"add","arguments":{"a":5,"b":3}}\n```'));
    assert.equal(lastUserText(second), "Tool result: 8");
  });

  it("runs every block of one answer as one wave, a delegate block going to the named sub-agent", async () => {
    const { tool, calls } = adder();
    const worker = new Agent({ name: "worker", description: "Checks sums.", model: new ScriptedModel(["Checked: 8 is right."]) });
    const inner = new ScriptedModel([`${block("tool_call", { tool: "add", arguments: { a: 5, b: 3 } })}\n${block("delegate", { agent: "worker", task: "Check 5 + 3" })}`, "Both agree: 8."]);
    const agent = new Agent({ instructions: "Coordinate.", model: fencedToolCalling(inner), tools: [tool], subAgents: [worker] });
    const { events, result } = await runAll(agent, "Add and check");
    assert.equal(result.text, "Both agree: 8.");
    assert.deepEqual(calls, [{ a: 5, b: 3 }]);
    const progress = events.filter((event) => event.type === "progress");
    assert.deepEqual(
      progress.map((event) => (event.type === "progress" ? [event.action, event.target, event.step] : [])),
      [
        ["tool_call", "add", 1],
        ["delegate", "worker", 1],
      ],
    );
    const system = systemOf(inner.requests[0]);
    assert.ok(system.includes("## Available Agents for Delegation\n- **worker**:"), system);
    assert.ok(system.endsWith(FENCED_AGENT_INSTRUCTIONS));
    assert.equal(lastUserText(inner.requests[1]), "Tool result (add): 8\n\nAgent response (worker): Checked: 8 is right.");
  });

  it("ends with `Reached maximum reasoning steps (N)` after N tool turns", async () => {
    const { tool, calls } = adder();
    const always = block("tool_call", { tool: "add", arguments: { a: 1, b: 1 } });
    const inner = new ScriptedModel([always, always, always, always]);
    const agent = new Agent({ model: fencedToolCalling(inner, { maxSteps: 3 }), tools: [tool], maxTurns: 10 });
    const { result } = await runAll(agent, "Loop forever");
    assert.equal(result.state, "TURN_LIMIT");
    assert.equal(result.text, "Reached maximum reasoning steps (3)");
    assert.equal(calls.length, 3);
    assert.equal(inner.requests.length, 3);
  });

  it("reads a block even without tools (the call fails as unknown, as in KAOS)", async () => {
    const inner = new ScriptedModel([block("tool_call", { tool: "missing", arguments: {} }), "Could not."]);
    const result = await new Agent({ model: fencedToolCalling(inner) }).run("x");
    assert.equal(result.text, "Could not.");
    assert.match(lastUserText(inner.requests[1]), /^Tool execution failed: Unknown tool: missing/);
  });

  it("gives an answer with a broken block back as the answer, and passes text through without tools", async () => {
    const broken = "```tool_call\n{\"tool\": \"add\", \"arguments\": {\n```";
    const { tool, calls } = adder();
    const withTools = await new Agent({ model: fencedToolCalling(new ScriptedModel([broken])), tools: [tool] }).run("x");
    assert.equal(withTools.text, broken);
    assert.equal(calls.length, 0);
    const plain = await new Agent({ instructions: "Be brief.", model: fencedToolCalling(new ScriptedModel(["Hello there."])) }).run("hi");
    assert.equal(plain.text, "Hello there.");
  });

  it("rejects a bad maxSteps, naming it", () => {
    assert.throws(() => fencedToolCalling(new ScriptedModel([]), { maxSteps: 0 }), /maxSteps must be a positive integer/);
  });

  it("builds KAOS's system prompt sections only for what the agent has", () => {
    assert.equal(fencedSystemPrompt("Be kind.", []), "## Agent System Prompt\nBe kind.");
  });
});

describe("auto mode recognises fenced blocks", () => {
  it("turns a native model's ```tool_call block into a tool call; text before it still streams", async () => {
    const { tool, calls } = adder();
    const inner = new ScriptedModel([`Computing.\n${block("tool_call", { tool: "add", arguments: { a: 2, b: 2 } })}`, "It is 4."]);
    const agent = new Agent({ model: withToolCallMode(inner, "auto"), tools: [tool] });
    const { result } = await runAll(agent, "2 + 2?");
    assert.equal(result.text, "It is 4.");
    assert.deepEqual(calls, [{ a: 2, b: 2 }]);
    assert.ok(inner.requests[0].tools?.length, "auto still sends native tools");
  });

  it("leaves ordinary code fences in an answer alone", async () => {
    const { tool } = adder();
    const answer = "Use this:\n```python\nprint(1)\n```\nDone.";
    const result = await new Agent({ model: withToolCallMode(new ScriptedModel([answer]), "auto"), tools: [tool] }).run("code?");
    assert.equal(result.text, answer);
  });
});
