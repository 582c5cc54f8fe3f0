import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AgentLoopError } from "../errors.js";
import { Agent } from "../loop/agent.js";
import type { LoopEvent } from "../loop/events.js";
import type { Model, } from "../model/model.js";
import { ScriptedModel } from "../model/scripted.js";
import { defineTool } from "../tools/tool.js";
import {
  ACTION_FINAL_RESPONSE_PROMPT,
  AGENT_INSTRUCTIONS,
  actionModeInstructions,
  actionToolCalling,
  NO_ACTION_INSTRUCTIONS,
  parseAction,
  TOOLS_INSTRUCTIONS,
} from "./index.js";
import { streamEvents as collect, observedScript } from "../../test/support.js";

delete process.env.DEBUG_MOCK_RESPONSES;

const echoTool = () => {
  const calls: unknown[] = [];
  const tool = defineTool({
    name: "echo",
    description: "Echoes the text back.",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    execute: (args) => {
      calls.push(args);
      return String(args.text);
    },
  });
  return { tool, calls };
};

async function runAll(agent: Agent, input: string) {
  const run = agent.run(input);
  const events: LoopEvent[] = [];
  for await (const event of run) events.push(event);
  return { events, result: await run };
}

describe("parseAction (the seed's _parse_action)", () => {
  it("reads the whole content as JSON, fenced or not", () => {
    assert.deepEqual(parseAction('{"tool": "calculator", "arguments": {"expression": "2 + 2"}}'), {
      kind: "tool",
      tool: "calculator",
      arguments: '{"expression":"2 + 2"}',
    });
    assert.deepEqual(parseAction('```json\n{"agent": "researcher", "task": "Find information about quantum computing"}\n```'), {
      kind: "agent",
      agent: "researcher",
      task: "Find information about quantum computing",
    });
  });

  it("reads a JSON object on a line by itself inside prose", () => {
    assert.deepEqual(parseAction('I will compute it.\n  {"tool": "calculator", "arguments": {"expression": "1+1"}}  \nThen answer.'), {
      kind: "tool",
      tool: "calculator",
      arguments: '{"expression":"1+1"}',
    });
  });

  it("falls back to the first balanced object that is an action, with braces inside strings", () => {
    assert.deepEqual(parseAction('Use {curly} braces, then {"tool": "echo", "arguments": {"text": "a } { b"}} please'), {
      kind: "tool",
      tool: "echo",
      arguments: '{"text":"a } { b"}',
    });
  });

  it("treats {}, prose, truncated JSON and non-action objects as no action", () => {
    assert.deepEqual(parseAction("{}"), { kind: "none" });
    assert.deepEqual(parseAction("The answer is 4."), { kind: "none" });
    assert.deepEqual(parseAction('{"tool": "echo", "arguments": {"text": "hel'), { kind: "none" });
    assert.deepEqual(parseAction('{"answer": 4}'), { kind: "none" });
  });

  it("defaults missing arguments to {} and keeps string arguments as they are", () => {
    assert.deepEqual(parseAction('{"tool": "clock"}'), { kind: "tool", tool: "clock", arguments: "{}" });
    assert.deepEqual(parseAction('{"tool": "echo", "arguments": "{\\"text\\": \\"x\\"}"}'), { kind: "tool", tool: "echo", arguments: '{"text": "x"}' });
  });
});

describe("actionModeInstructions", () => {
  it("builds the seed's system prompt sections for tools and agents", () => {
    const text = actionModeInstructions([
      { name: "echo", description: "Echoes.", parameters: { type: "object" } },
      { name: "delegate_to_researcher", description: "Finds facts.", parameters: { type: "object" } },
    ]);
    assert.ok(text.startsWith("\n## Available Tools\n- echo: Echoes."));
    assert.ok(text.includes(`\n${TOOLS_INSTRUCTIONS}\n`));
    assert.ok(text.includes("\n## Available Agents for Delegation\n- researcher: Finds facts.\n"));
    assert.ok(text.includes(`\n${AGENT_INSTRUCTIONS}\n`));
    assert.ok(text.endsWith(NO_ACTION_INSTRUCTIONS));
    assert.equal(actionModeInstructions([]), "");
  });
});

describe("actionToolCalling in the agent loop", () => {
  it("tool action, then {}, then the streamed final response (the seed's mock script)", async () => {
    const { model, holder } = observedScript(['{"tool": "echo", "arguments": {"text": "hello"}}', "{}", "The echo returned: hello"]);
    const { tool, calls } = echoTool();
    const agent = new Agent({ name: "echoer", instructions: "You echo.", model: actionToolCalling(model, { maxSteps: 5 }), tools: [tool] });
    const { events, result } = await runAll(agent, "Echo hello");

    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "The echo returned: hello");
    assert.deepEqual(calls, [{ text: "hello" }]);
    const order = events
      .filter((event) => ["turn-start", "turn-end", "progress", "tool-start", "tool-end", "run-end"].includes(event.type))
      .map((event) => event.type);
    assert.deepEqual(order, ["turn-start", "turn-end", "progress", "tool-start", "tool-end", "turn-start", "turn-end", "run-end"]);
    // Phase 1 answers never reach the caller as text; the final response streams in pieces.
    const deltas = events.filter((event) => event.type === "text-delta").map((event) => (event.type === "text-delta" ? event.delta : ""));
    assert.equal(deltas.join(""), "The echo returned: hello");
    assert.ok(deltas.length > 1);

    const requests = holder.current!.requests;
    assert.equal(requests.length, 3);
    const system = String(requests[0].messages[0].content);
    assert.ok(system.startsWith("You echo.\n\n\n## Available Tools\n- echo: Echoes the text back."));
    assert.ok(system.includes(TOOLS_INSTRUCTIONS) && system.includes(NO_ACTION_INSTRUCTIONS));
    assert.equal(requests[0].tools, undefined);
    const second = requests[1].messages;
    assert.deepEqual(second.at(-2), { role: "assistant", content: [{ type: "text", text: '{"tool":"echo","arguments":{"text":"hello"}}' }] });
    assert.deepEqual(second.at(-1), { role: "user", content: 'Result of tool "echo":\nhello' });
    const third = requests[2].messages;
    assert.deepEqual(third.at(-2), { role: "assistant", content: [{ type: "text", text: "{}" }] });
    assert.deepEqual(third.at(-1), { role: "user", content: ACTION_FINAL_RESPONSE_PROMPT });
  });

  it("a delegation action becomes a call to delegate_to_<agent> with {task}", async () => {
    const researcherModel = new ScriptedModel(["Quantum computers use qubits."]);
    const researcher = new Agent({ name: "researcher", description: "Researches topics.", model: researcherModel });
    const { model, holder } = observedScript([
      '{"agent": "researcher", "task": "Find quantum info"}',
      "{}",
      "Based on the research, quantum computing uses qubits.",
    ]);
    const agent = new Agent({ name: "lead", model: actionToolCalling(model), subAgents: [researcher] });
    const { events, result } = await runAll(agent, "Tell me about quantum computing");

    assert.equal(result.text, "Based on the research, quantum computing uses qubits.");
    const start = events.find((event) => event.type === "tool-start");
    assert.ok(start && start.type === "tool-start");
    assert.equal(start.name, "delegate_to_researcher");
    assert.deepEqual(start.arguments, { task: "Find quantum info" });
    assert.equal(start.action, "delegate");
    const end = events.find((event) => event.type === "tool-end");
    assert.ok(end && end.type === "tool-end");
    assert.equal(end.isError, false);
    assert.match(end.output, /Quantum computers use qubits\./);

    const system = String(holder.current!.requests[0].messages[0].content);
    assert.ok(system.includes("## Available Agents for Delegation\n- researcher: Researches topics."));
    assert.ok(system.includes(AGENT_INSTRUCTIONS));
    const second = holder.current!.requests[1].messages;
    assert.deepEqual(second.at(-2), { role: "assistant", content: [{ type: "text", text: '{"agent":"researcher","task":"Find quantum info"}' }] });
    assert.match(String(second.at(-1)!.content), /^Response from agent "researcher":\n.*Quantum computers use qubits\./s);
  });

  it("answers `Reached maximum reasoning steps (N)` when the actions run out", async () => {
    const action = '{"tool": "echo", "arguments": {"text": "again"}}';
    const { model, holder } = observedScript([action, action, action, "never asked"]);
    const { tool, calls } = echoTool();
    const agent = new Agent({ model: actionToolCalling(model, { maxSteps: 2 }), tools: [tool], loopDetection: false });
    const { result } = await runAll(agent, "Loop please");

    // The answer is the seed's, and the state says a limit ended the run.
    assert.equal(result.state, "TURN_LIMIT");
    assert.equal(result.reason, "Reached maximum reasoning steps (2)");
    assert.equal(result.text, "Reached maximum reasoning steps (2)");
    assert.equal(calls.length, 2);
    assert.equal(holder.current!.requests.length, 2, "no model call once the steps are used up");
  });

  it("a plain-text answer is no action: phase 2 asks again and streams that", async () => {
    const { model, holder } = observedScript(["Hi there! (ignored phase-1 text)", "Hello! How can I help you?"]);
    const agent = new Agent({ model: actionToolCalling(model), tools: [echoTool().tool] });
    const { events, result } = await runAll(agent, "hi");
    assert.equal(result.text, "Hello! How can I help you?");
    assert.equal(result.turns, 1);
    assert.equal(
      events
        .filter((event) => event.type === "text-delta")
        .map((event) => (event.type === "text-delta" ? event.delta : ""))
        .join(""),
      "Hello! How can I help you?",
    );
    assert.equal(holder.current!.requests.length, 2);
  });

  it("an empty phase-1 answer is no action and is left out of the phase-2 request", async () => {
    const scripted = new ScriptedModel(["", "Hello!"]);
    const events = await collect(actionToolCalling(scripted), { messages: [{ role: "user", content: "hi" }] });
    assert.equal(events.map((event) => (event.type === "text-delta" ? event.delta : "")).join(""), "Hello!");
    assert.deepEqual(scripted.requests[1].messages, [{ role: "user", content: `hi\n\n${ACTION_FINAL_RESPONSE_PROMPT}` }]);
  });

  it("toolChoice none skips phase 1 and streams the answer at once", async () => {
    const scripted = new ScriptedModel(["Final words."]);
    const events = await collect(actionToolCalling(scripted), {
      messages: [{ role: "user", content: "answer" }],
      tools: [{ name: "echo", description: "", parameters: {} }],
      toolChoice: "none",
    });
    assert.equal(events.map((event) => (event.type === "text-delta" ? event.delta : "")).join(""), "Final words.");
    assert.equal(scripted.requests.length, 1);
  });

  it("sums the usage of both phases and relays a phase-2 error", async () => {
    const scripted = new ScriptedModel(["{}", "The answer."]);
    const events = await collect(actionToolCalling(scripted), { messages: [{ role: "user", content: "q" }] });
    assert.equal(events.filter((event) => event.type === "usage").length, 2);
    assert.deepEqual(events.at(-1), { type: "finish", reason: { unified: "stop", raw: "stop" } });

    let call = 0;
    const failingSecond: Model = {
      provider: "test",
      modelId: "second-fails",
      async *stream() {
        if (call++ === 0) {
          yield { type: "text-delta", id: "t", delta: "{}" };
          yield { type: "finish", reason: { unified: "stop" } };
        } else yield { type: "error", error: new AgentLoopError("server", "upstream 503", { status: 503 }) };
      },
    };
    const failed = await collect(actionToolCalling(failingSecond), { messages: [{ role: "user", content: "q" }] });
    const last = failed.at(-1);
    assert.equal(last?.type, "error");
    if (last?.type === "error") assert.equal(last.error.message, "upstream 503");
  });

  it("rejects a bad maxSteps with a clear message", () => {
    assert.throws(() => actionToolCalling(new ScriptedModel([]), { maxSteps: 0 }), /maxSteps must be a positive integer, got 0/);
  });

  it("an abort during phase 1 ends the stream with an aborted error", async () => {
    const controller = new AbortController();
    controller.abort("user left");
    const events = await collect(actionToolCalling(new ScriptedModel(["{}", "x"])), { messages: [{ role: "user", content: "q" }], signal: controller.signal });
    const last = events.at(-1);
    assert.equal(last?.type, "error");
    if (last?.type === "error") assert.equal(last.error.kind, "aborted");
  });
});
