import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType, waitingTool } from "./helpers.js";

const forever = (count: number) => Array.from({ length: count }, (_, index) => calls(["wait", { value: index }]));
const tool = () => waitingTool("wait", 0).tool;

test("maxTurns ends the run TURN_LIMIT with the partial transcript, every call answered", async () => {
  const run = new Agent({ model: new ScriptedModel(forever(20)), tools: [tool()], maxTurns: 3 }).run("go");
  const result = await run;
  assert.equal(result.state, "TURN_LIMIT");
  assert.equal(result.reason, "maxTurns (3) reached");
  assert.equal(result.turns, 3);
  assert.equal(result.toolCalls, 3);
  assert.equal(result.text, "");
  assert.equal(result.newMessages.filter((message) => message.role === "tool").length, 3);
});

test("maxTurns defaults to 10", async () => {
  const result = await new Agent({ model: new ScriptedModel(forever(20)), tools: [tool()], loopDetection: false }).run("go");
  assert.equal(result.state, "TURN_LIMIT");
  assert.equal(result.turns, 10);
});

test("maxToolRounds ends the run ROUND_LIMIT; the unrun calls get cancelled results", async () => {
  const { tool: wait, log } = waitingTool("wait", 0);
  const result = await new Agent({ model: new ScriptedModel(forever(5)), tools: [wait], maxToolRounds: 2 }).run("go");
  assert.equal(result.state, "ROUND_LIMIT");
  assert.equal(result.reason, "maxToolRounds (2) reached");
  assert.equal(log.length, 2);
  const last = result.messages.at(-1) as ToolResultMessage;
  assert.equal(last.role, "tool");
  assert.equal(last.isError, true);
  assert.match(String(last.content), /^Cancelled: the tool-round limit was reached/);
});

test("a wave that would exceed the tool-call budget does not start (TOOL_BUDGET)", async () => {
  const { tool: wait, log } = waitingTool("wait", 0);
  const script = [calls(["wait", { value: 1 }], ["wait", { value: 2 }]), calls(["wait", { value: 3 }], ["wait", { value: 4 }]), "done"];
  const result = await new Agent({ model: new ScriptedModel(script), tools: [wait], maxToolCalls: 3 }).run("go");
  assert.equal(result.state, "TOOL_BUDGET");
  assert.match(result.reason, /tool-call budget \(3\) would be exceeded: 2 used, 2 requested/);
  assert.equal(log.length, 2, "the second wave never started");
});

test("the token budget is checked before each model call (TOKEN_BUDGET)", async () => {
  const model = new ScriptedModel(forever(10));
  const result = await new Agent({ model, tools: [tool()], maxTokens: 30 }).run("a question long enough to cost some tokens");
  assert.equal(result.state, "TOKEN_BUDGET");
  assert.ok(result.usage.totalTokens >= 30);
  assert.equal(model.requests.length, result.turns);
  assert.match(result.reason, /^token budget \(30\) used: \d+ tokens$/);
});

test('onLimit "final-answer" makes one last call with tools disabled, so the user gets an answer', async () => {
  const model = new ScriptedModel([...forever(2), "Here is my best answer."]);
  const result = await new Agent({ model, tools: [tool()], maxTurns: 2, onLimit: "final-answer" }).run("go");
  assert.equal(result.state, "TURN_LIMIT");
  assert.equal(result.text, "Here is my best answer.");
  assert.match(result.reason, /final answer given without tools/);
  const last = model.requests.at(-1)!;
  assert.equal(last.toolChoice, "none");
  assert.match(String(last.messages.at(-1)?.content), /reached a limit \(maxTurns \(2\) reached\)/);
});

test("loop detection: a repeated call warns the model and emits an event; maxWarnings stops the run", async () => {
  const same = Array.from({ length: 12 }, () => calls(["wait", { value: "same" }]));
  const model = new ScriptedModel([...same, "done"]);
  const run = new Agent({ model, tools: [tool()], maxTurns: 20, loopDetection: { window: 4 } }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  const warnings = ofType(events, "loop-warning");
  assert.equal(warnings.length, 3, "12 identical calls fill a window of 4 three times");
  assert.deepEqual(warnings[0].pattern, ["wait"]);
  assert.match(String(model.requests[4].messages.at(-1)?.content), /Loop detected: the last 4 tool calls repeat the pattern wait/);

  const stopping = await new Agent({ model: new ScriptedModel(same), tools: [tool()], maxTurns: 20, loopDetection: { window: 4, maxWarnings: 2 } }).run("go");
  assert.equal(stopping.state, "LOOP_DETECTED");
  assert.equal(stopping.turns, 8);
});

test("loop detection catches a 3-call cycle in the default window of 10", async () => {
  const cycle = ["a", "b", "c"];
  const script = Array.from({ length: 10 }, (_, index) => calls(["wait", { value: cycle[index % 3] }]));
  const run = new Agent({ model: new ScriptedModel([...script, "done"]), tools: [tool()], maxTurns: 15 }).run("go");
  const events = await eventsOf(run);
  const [warning] = ofType(events, "loop-warning");
  assert.ok(warning, "a warning after the 10th call");
  assert.equal(warning.pattern.length, 3);
  const toolEnds = ofType(events, "tool-end");
  assert.ok(events.indexOf(warning) > events.indexOf(toolEnds[9]));
});

test("different arguments are not a loop", async () => {
  const run = new Agent({ model: new ScriptedModel([...forever(12), "done"]), tools: [tool()], maxTurns: 15 }).run("go");
  const events = await eventsOf(run);
  assert.equal(ofType(events, "loop-warning").length, 0);
});

test("loop detection after a long varied stretch: the warning comes exactly when the window fills, arguments differing only in key order count as the same call", async () => {
  const varied = Array.from({ length: 25 }, (_, index) => calls(["wait", { value: index }]));
  // Same arguments, keys in a different order each time: still one repeating call.
  const repeated = Array.from({ length: 4 }, (_, index) => calls(["wait", index % 2 ? { value: "same", note: "n" } : { note: "n", value: "same" }]));
  const model = new ScriptedModel([...varied, ...repeated, "done"]);
  const run = new Agent({ model, tools: [tool()], maxTurns: 40, loopDetection: { window: 4 } }).run("go");
  const events = await eventsOf(run);
  const warnings = ofType(events, "loop-warning");
  assert.equal(warnings.length, 1);
  assert.deepEqual(warnings[0].pattern, ["wait"]);
  assert.ok(events.indexOf(warnings[0]) > events.indexOf(ofType(events, "tool-end")[28]), "after the 29th call, the 4th repetition");
});
