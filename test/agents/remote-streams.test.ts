// A remote agentloop worker's live events nest in the coordinator's stream (A2A streaming with the
// agentloop_event data parts; KAOS delegation over streamed chat completions).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { a2aAgentTool } from "../../src/a2a/index.js";
import { kaosAgentTool } from "../../src/agents/index.js";
import { defineTool } from "../../src/index.js";
import { Agent } from "../../src/loop/agent.js";
import type { LoopEvent } from "../../src/loop/events.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { type AgentServer, createAgentServer } from "../../src/server/index.js";
import type { Tool } from "../../src/tools/tool.js";

const lookup = defineTool<{ q: string }>({
  name: "lookup",
  description: "Looks something up",
  parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
  execute: ({ q }) => `found ${q}`,
});

async function delegate(tool: Tool<{ task: string }>) {
  const lead = new Agent({ name: "coordinator", model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "c_call", name: tool.name, arguments: { task: "look it up" } }] }), "Relayed."]), tools: [tool] });
  const events: LoopEvent[] = [];
  for await (const event of lead.run("go")) events.push(event);
  return events;
}

/** The worker's events as the coordinator saw them (nested under the delegating call), with their positions. */
function nestedUnder(events: LoopEvent[], agent: string) {
  return events.flatMap((event, index) => (event.type === "nested" && event.agent === agent && event.toolCallId === "c_call" ? [{ index, event: event.event }] : []));
}

describe("a remote worker's live events in the coordinator's stream", () => {
  let server: AgentServer;
  let url: string;
  before(async () => {
    const model = new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "w_call", name: "lookup", arguments: { q: "the answer" } }] }), "The answer is forty two."]);
    server = await createAgentServer({ env: { AGENT_NAME: "researcher", MEMORY_TYPE: "memory" }, build: { model, tools: [lookup] }, log: () => {} });
    url = await server.listen(0, "127.0.0.1");
  });
  after(() => server.close({ graceMs: 100 }));

  it("over A2A (message/stream): the worker's progress block, tool call and result, and answer chunks arrive nested, before the delegation ends", async () => {
    const tool = await a2aAgentTool({ cardUrl: url });
    const events = await delegate(tool);
    const end = events.findIndex((event) => event.type === "tool-end" && event.toolCallId === "c_call");
    const nested = nestedUnder(events, "researcher");
    const types = nested.map(({ event }) => event.type);
    assert.deepEqual(
      types.filter((type) => type !== "text-delta"),
      ["progress", "tool-start", "tool-end"],
    );
    const start = nested.find(({ event }) => event.type === "tool-start")!.event as Extract<LoopEvent, { type: "tool-start" }>;
    assert.deepEqual([start.toolCallId, start.name, start.arguments], ["w_call", "lookup", { q: "the answer" }]);
    const result = nested.find(({ event }) => event.type === "tool-end")!.event as Extract<LoopEvent, { type: "tool-end" }>;
    assert.equal(result.output, "found the answer");
    const text = nested.flatMap(({ event }) => (event.type === "text-delta" ? [event.delta] : [])).join("");
    assert.equal(text, "The answer is forty two.", "the streamed chunks once, not the whole answer again");
    assert.ok(types.filter((type) => type === "text-delta").length > 1, "the answer arrives in chunks");
    assert.ok(nested.every(({ index }) => index < end), "every nested event arrives before the delegation's tool-end");
    assert.equal((events[end] as Extract<LoopEvent, { type: "tool-end" }>).output, "The answer is forty two.");
  });

  it("over KAOS delegation (streamed chat completions): the worker's progress block and answer deltas arrive nested, live", async () => {
    const events = await delegate(kaosAgentTool({ name: "researcher", url }));
    const end = events.findIndex((event) => event.type === "tool-end" && event.toolCallId === "c_call");
    const nested = nestedUnder(events, "researcher");
    const progress = nested.find(({ event }) => event.type === "progress")?.event as Extract<LoopEvent, { type: "progress" }>;
    assert.deepEqual([progress.step, progress.action, progress.target], [1, "tool_call", "lookup"]);
    const deltas = nested.filter(({ event }) => event.type === "text-delta");
    assert.ok(deltas.length > 1);
    assert.equal(deltas.map(({ event }) => (event as { delta: string }).delta).join(""), "The answer is forty two.");
    assert.ok(nested.every(({ index }) => index < end));
    assert.equal((events[end] as Extract<LoopEvent, { type: "tool-end" }>).output, "The answer is forty two.");
  });
});
