import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { agentTool } from "../../src/agents/index.js";
import { AgentLoopError } from "../../src/errors.js";
import { Agent } from "../../src/loop/agent.js";
import type { LoopEvent } from "../../src/loop/events.js";
import type { Model, ModelEvent } from "../../src/model/model.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { collectAll as collect } from "../support.js";

const call = (name: string, args: unknown, id = "call_1") => JSON.stringify({ tool_calls: [{ id, name, arguments: args }] });

const toolEnd = (events: LoopEvent[]) => events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>;

describe("agentTool", () => {
  it("single mode makes one model call with the instructions and the task, and no tools", async () => {
    const summarizerModel = new ScriptedModel(["A short summary."]);
    const lookup = { name: "lookup", description: "never offered", parameters: { type: "object" }, execute: () => "x" };
    const tool = agentTool(
      { name: "summarizer", description: "Summarizes text.", instructions: "Summarize in one line.", model: summarizerModel, tools: [lookup] },
      { mode: "single" },
    );
    assert.equal(tool.name, "summarizer");
    assert.equal(tool.description, "Summarizes text.");
    assert.equal(tool.action, "delegate");
    const lead = new Agent({ name: "lead", model: new ScriptedModel([call("summarizer", { task: "Long text here" }), "Done."]), tools: [tool] });
    const run = lead.run("summarize");
    const events = await collect(run);
    assert.equal((await run).text, "Done.");
    const end = toolEnd(events);
    assert.equal(end.output, "A short summary.");
    assert.equal(end.isError, false);
    // Single mode runs no loop: nothing nested.
    assert.equal(events.filter((event) => event.type === "nested").length, 0);
  });

  it("single mode sends exactly the system prompt and the task, without tools", async () => {
    const requests: unknown[] = [];
    const model: Model = {
      provider: "test",
      modelId: "recorder",
      async *stream(request): AsyncGenerator<ModelEvent> {
        requests.push({ messages: request.messages, tools: request.tools });
        yield { type: "text-start", id: "t" };
        yield { type: "text-delta", id: "t", delta: "ok" };
        yield { type: "text-end", id: "t" };
        yield { type: "finish", reason: { unified: "stop" } };
      },
    };
    const tool = agentTool({ name: "helper", instructions: "Be brief.", model }, { mode: "single" });
    const lead = new Agent({ name: "lead", model: new ScriptedModel([call("helper", { task: "Say ok" }), "fine"]), tools: [tool] });
    await lead.run("go");
    assert.deepEqual(requests, [
      {
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "Say ok" },
        ],
        tools: undefined,
      },
    ]);
  });

  it("single mode turns a model error into an error result", async () => {
    const failing: Model = {
      provider: "test",
      modelId: "broken",
      async *stream(): AsyncGenerator<ModelEvent> {
        yield { type: "error", error: new AgentLoopError("rate_limit", "slow down") };
      },
    };
    const tool = agentTool({ name: "helper", model: failing }, { mode: "single" });
    const lead = new Agent({ name: "lead", model: new ScriptedModel([call("helper", { task: "x" }), "fine"]), tools: [tool] });
    const end = toolEnd(await collect(lead.run("go")));
    assert.equal(end.isError, true);
    assert.equal(end.output, 'Agent "helper" failed: slow down');
  });

  it("agentic mode runs the agent's full loop with its own tools, nested in the caller's stream", async () => {
    const clock = { name: "clock", description: "time", parameters: { type: "object", properties: {} }, execute: () => "12:00" };
    const researcher = {
      name: "researcher",
      description: "Finds facts.",
      model: new ScriptedModel([call("clock", {}, "inner_1"), "It is 12:00."]),
      tools: [clock],
    };
    const tool = agentTool(researcher, { mode: "agentic" });
    const lead = new Agent({ name: "lead", model: new ScriptedModel([call("researcher", { task: "What time is it?" }), "Noon."]), tools: [tool] });
    const run = lead.run("time?");
    const events = await collect(run);
    assert.equal((await run).text, "Noon.");
    assert.equal(toolEnd(events).output, "It is 12:00.");
    const nestedToolEnd = events.find((event) => event.type === "nested" && event.event.type === "tool-end");
    assert.ok(nestedToolEnd?.type === "nested" && nestedToolEnd.event.type === "tool-end");
    assert.equal(nestedToolEnd.agent, "researcher");
    assert.equal(nestedToolEnd.event.output, "12:00");
  });

  it("agentic mode accepts an Agent and single mode reads the Agent's config", async () => {
    const agent = new Agent({ name: "echo", description: "Echoes.", model: new ScriptedModel(["echoed"]) });
    const agentic = agentTool(agent);
    const single = agentTool(agent, { mode: "single", name: "echo_once" });
    const lead = new Agent({
      name: "lead",
      model: new ScriptedModel([
        JSON.stringify({
          tool_calls: [
            { id: "a", name: "echo", arguments: { task: "hi" } },
            { id: "b", name: "echo_once", arguments: { task: "hi" } },
          ],
        }),
        "both done",
      ]),
      tools: [agentic, single],
    });
    const events = await collect(lead.run("go"));
    const ends = events.filter((event) => event.type === "tool-end") as Array<Extract<LoopEvent, { type: "tool-end" }>>;
    assert.deepEqual(
      ends.map((end) => [end.name, end.output, end.isError]).sort(),
      [
        ["echo", "echoed", false],
        ["echo_once", "echoed", false],
      ],
    );
  });

  it("an empty task is an error result and the agent's model is not called", async () => {
    const helperModel = new ScriptedModel(["never"]);
    const tool = agentTool({ name: "helper", model: helperModel }, { mode: "single" });
    const lead = new Agent({ name: "lead", model: new ScriptedModel([call("helper", { task: " " }), "fine"]), tools: [tool] });
    const end = toolEnd(await collect(lead.run("go")));
    assert.deepEqual([end.output, end.isError], ['Agent "helper" needs a non-empty "task" string.', true]);
    assert.equal(helperModel.requests.length, 0);
  });

  it("rejects bad arguments clearly", () => {
    assert.throws(() => agentTool({} as never), /pass an Agent or an AgentConfig with a model/);
    assert.throws(() => agentTool({ model: new ScriptedModel([]) }), /needs a name/);
    assert.throws(() => agentTool({ name: "x", model: new ScriptedModel([]) }, { mode: "loop" as never }), /mode must be "single" or "agentic"/);
    const target = { name: "remote", description: "", run: () => new Agent({ model: new ScriptedModel([]) }).run("") };
    assert.throws(() => agentTool(target, { mode: "single" }), /single mode needs the agent's config/);
  });
});
