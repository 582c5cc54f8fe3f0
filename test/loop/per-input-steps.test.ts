// Waves, plan iterations and action steps are counted per input: steering messages and
// loop-detection warnings are user messages too, but not new inputs. A follow-up is a new input.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Agent, ScriptedModel } from "../../src/index.js";
import { waitingTool } from "./helpers.js";

const action = JSON.stringify({ tool: "echo", arguments: { value: 1 } });
const plan = JSON.stringify({ status: "continue", action: "echo", tools: [{ id: "a", tool: "echo", args: { value: 1 } }], reasoning: "again" });

describe("steps are counted per input", () => {
  it("action mode: steering after every wave does not reset the steps (maxTurns 3 → 3 actions, then the seed's text, TURN_LIMIT)", async () => {
    const { tool, log } = waitingTool("echo", 0);
    const agent = new Agent({ model: new ScriptedModel(Array(30).fill(action)), tools: [tool], toolCallMode: "action", maxTurns: 3, loopDetection: false });
    const run = agent.run("go", { onEvent: (event) => event.type === "tool-end" && run.steer("keep going") });
    const result = await run;
    // The seed's text is the answer; the state says a limit ended the run.
    assert.equal(result.state, "TURN_LIMIT");
    assert.equal(result.text, "Reached maximum reasoning steps (3)");
    assert.equal(log.length, 3);
    assert.equal(run.events.filter((event) => event.type === "steering").length, 3);
  });

  it("plan mode: loop-detection warnings do not reset the waves (maxTurns 4 → 4 waves, then the final answer, TURN_LIMIT)", async () => {
    const { tool, log } = waitingTool("echo", 0);
    const script = [...Array(10).fill(plan), "the final answer"];
    const agent = new Agent({ model: new ScriptedModel(script), tools: [tool], toolCallMode: "plan", maxTurns: 4, loopDetection: { window: 2 } });
    const run = agent.run("go");
    const result = await run;
    // The waves ran out before a "done" plan: the final answer, and a limit ended the run.
    assert.equal(result.state, "TURN_LIMIT");
    assert.equal(result.toolRounds, 4);
    assert.equal(log.length, 4);
    assert.ok(run.events.some((event) => event.type === "loop-warning"), "the loop detector warned");
    // The fifth planner call was asked for the final response: it got the next script entry as its text.
    assert.equal(result.turns, 5);
  });

  it("a follow-up is a new input: its steps start again", async () => {
    const { tool, log } = waitingTool("echo", 0);
    // First input: one step, `{}`, its answer. Second input: two steps (the limit), then the seed's text.
    const script = [action, "{}", "first done", action, action, action];
    const agent = new Agent({ model: new ScriptedModel(script), tools: [tool], toolCallMode: "action", maxTurns: 2, loopDetection: false });
    const run = agent.run("first");
    run.followUp("second");
    const result = await run;
    assert.equal(result.state, "TURN_LIMIT");
    assert.equal(log.length, 3, "one step for the first input, two for the second");
    assert.equal(result.text, "Reached maximum reasoning steps (2)");
    assert.ok(result.messages.some((message) => message.role === "assistant" && message.content.some((part) => part.type === "text" && part.text === "first done")));
  });
});
