// DEBUG_MOCK_RESPONSES overrides any configured model (seeds 000/003). This file runs in its own
// process under node's test runner, so setting the variable here cannot leak into other tests.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, ScriptedModel } from "../../src/index.js";
import { calls, waitingTool } from "../loop/helpers.js";

test("DEBUG_MOCK_RESPONSES replaces the configured model: a tool call, then the answer", async () => {
  process.env.DEBUG_MOCK_RESPONSES = JSON.stringify([calls(["echo", { message: "hi" }]), "Done."]);
  try {
    const configured = new ScriptedModel(["the configured model was used"]);
    const { tool, log } = waitingTool("echo", 0);
    const agent = new Agent({ model: configured, tools: [tool] });
    const result = await agent.run("go");
    assert.equal(result.text, "Done.");
    assert.equal(log.length, 1);
    assert.equal(configured.requests.length, 0);
    const again = await agent.run("again");
    assert.equal(again.text, "Done.", "the script restarts for each run");
  } finally {
    delete process.env.DEBUG_MOCK_RESPONSES;
  }
});

test("the seeds' two-phase action script runs with toolCallMode: action (tool → {} → final answer)", async () => {
  process.env.DEBUG_MOCK_RESPONSES = '["{\\"tool\\": \\"echo\\", \\"arguments\\": {\\"text\\": \\"hello\\"}}", "{}", "The echo returned: hello"]';
  try {
    const { tool, log } = waitingTool("echo", 0);
    const run = new Agent({ model: new ScriptedModel([]), tools: [tool], toolCallMode: "action" }).run("say hello");
    const result = await run;
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "The echo returned: hello");
    assert.deepEqual(log.map((entry) => entry.args), [{ text: "hello" }]);
    const progress = run.events.filter((event) => event.type === "progress");
    assert.equal(progress.length, 1);
  } finally {
    delete process.env.DEBUG_MOCK_RESPONSES;
  }
});
