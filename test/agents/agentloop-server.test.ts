// The remote delegation clients against agentloop's own agent server (KAOS chat completions and A2A).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { a2aAgentTool } from "../../src/a2a/index.js";
import { kaosAgentTool } from "../../src/agents/index.js";
import { Agent } from "../../src/loop/agent.js";
import type { LoopEvent } from "../../src/loop/events.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { type AgentServer, createAgentServer } from "../../src/server/index.js";
import type { Tool } from "../../src/tools/tool.js";

async function delegateOnce(tool: Tool<{ task: string }>, task: string) {
  const lead = new Agent({
    name: "lead",
    model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "call_1", name: tool.name, arguments: { task } }] }), "Relayed."]),
    tools: [tool],
  });
  const events: LoopEvent[] = [];
  const run = lead.run("go");
  for await (const event of run) events.push(event);
  return { end: events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>, events, result: await run };
}

describe("remote delegation to an agentloop server", () => {
  let server: AgentServer;
  let url: string;

  before(async () => {
    server = await createAgentServer({
      env: {
        AGENT_NAME: "remote-worker",
        AGENT_DESCRIPTION: "Does remote work.",
        // Every request restarts the script: the answer is always the same.
        DEBUG_MOCK_RESPONSES: JSON.stringify(["The remote worker finished the task."]),
      },
      memory: false,
      log: () => {},
    });
    url = await server.listen(0, "127.0.0.1");
  });

  after(async () => {
    await server.close({ graceMs: 100 });
  });

  it("kaosAgentTool gets the answer from /v1/chat/completions", async () => {
    const { end, result } = await delegateOnce(kaosAgentTool({ name: "remote-worker", url }), "do the remote work");
    assert.equal(result.state, "COMPLETED");
    assert.equal(end.isError, false);
    assert.equal(end.output, "The remote worker finished the task.");
  });

  it("a2aAgentTool reads the server's agent card and gets the answer over A2A", async () => {
    const tool = await a2aAgentTool({ cardUrl: url });
    assert.equal(tool.name, "delegate_to_remote-worker");
    assert.equal(tool.description, "Does remote work.");
    const { end, events } = await delegateOnce(tool, "do the remote work");
    assert.equal(end.isError, false, end.output);
    assert.equal(end.output, "The remote worker finished the task.");
    assert.ok(events.some((event) => event.type === "tool-progress"));
  });
});
