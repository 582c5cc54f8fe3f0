// Approvals asked inside a remote agentloop worker (A2A input-required, KAOS approval_required),
// surfaced by the coordinator's delegating tool as its own: interrupt and resume, or wait.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { a2aAgentTool } from "../../src/a2a/index.js";
import { kaosAgentTool } from "../../src/agents/index.js";
import { Agent } from "../../src/loop/agent.js";
import { approvalRequestOf } from "../../src/loop/approvals.js";
import type { LoopEvent } from "../../src/loop/events.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { type AgentServer, createAgentServer } from "../../src/server/index.js";
import type { Tool } from "../../src/tools/tool.js";
import { writeFileTool } from "../server/helpers.js";

const servers: AgentServer[] = [];
after(() => Promise.all(servers.map((server) => server.close({ graceMs: 100 }))));

/** A worker server whose agent writes a file (needs approval) then answers; `writes` records each write. */
async function worker(name = "writer") {
  const writes: string[] = [];
  const writeFile = writeFileTool(writes);
  const model = new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "w_call", name: "write_file", arguments: { path: "notes.txt" } }] }), "The worker is done."]);
  const server = await createAgentServer({ env: { AGENT_NAME: name, MEMORY_TYPE: "memory" }, build: { model, tools: [writeFile] }, log: () => {} });
  servers.push(server);
  return { url: await server.listen(0, "127.0.0.1"), writes, model };
}

function coordinator(tool: Tool<{ task: string }>, onApproval: "wait" | "interrupt") {
  return new Agent({
    name: "coordinator",
    model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "c_call", name: tool.name, arguments: { task: "write the notes" } }] }), "Relayed the worker's answer."]),
    tools: [tool],
    onApproval,
  });
}

async function collect(run: AsyncIterable<LoopEvent>) {
  const events: LoopEvent[] = [];
  for await (const event of run) events.push(event);
  return events;
}
const toolEnd = (events: LoopEvent[]) => events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>;

const protocols: Array<[string, (url: string) => Promise<Tool<{ task: string }>>]> = [
  ["A2A", (url) => a2aAgentTool({ cardUrl: url })],
  ["KAOS", async (url) => kaosAgentTool({ name: "writer", url })],
];

for (const [protocol, toolFor] of protocols) {
  describe(`a remote worker's approvals over ${protocol}`, () => {
    it("interrupt: the coordinator stops with the worker's call (agent path through the worker); the resume approves it, the worker runs it once", async () => {
      const { url, writes } = await worker();
      const agent = coordinator(await toolFor(url), "interrupt");
      const run = agent.run("go");
      const events = await collect(run);
      const result = await run;
      assert.equal(result.state, "INTERRUPTED", result.reason);
      const pending = result.checkpoint!.pending;
      assert.deepEqual(
        pending.map((entry) => [entry.toolCallId, entry.toolName, entry.arguments, entry.agentPath]),
        [["w_call", "write_file", { path: "notes.txt" }, ["coordinator", "writer"]]],
      );
      const request = events.map(approvalRequestOf).find(Boolean);
      assert.equal(request?.toolCallId, "w_call", "the worker's call surfaces as an approval-request in the coordinator's stream");
      assert.deepEqual(writes, []);
      // The checkpoint goes through JSON, as the server keeps it.
      const checkpoint = JSON.parse(JSON.stringify(result.checkpoint));
      const resumed = agent.resume(checkpoint, { decisions: { w_call: { approve: true } } });
      const later = await collect(resumed);
      const final = await resumed;
      assert.equal(final.state, "COMPLETED", final.reason);
      assert.equal(toolEnd(later).output, "The worker is done.");
      assert.equal(final.text, "Relayed the worker's answer.");
      assert.deepEqual(writes, ["notes.txt"], "the worker's tool ran exactly once");
    });

    it("interrupt: a rejection comes back as the worker's tool result", async () => {
      const { url, writes, model } = await worker();
      const agent = coordinator(await toolFor(url), "interrupt");
      const result = await agent.run("go");
      assert.equal(result.state, "INTERRUPTED");
      const resumed = agent.resume(result.checkpoint!, { decisions: { w_call: { approve: false, reason: "not today" } } });
      const events = await collect(resumed);
      const final = await resumed;
      assert.equal(final.state, "COMPLETED", final.reason);
      assert.deepEqual(writes, []);
      // The worker's model got the rejection as its tool's result, then answered; that answer came back up.
      const workerResults = model.requests.at(-1)!.messages.filter((message) => message.role === "tool");
      assert.deepEqual(
        workerResults.map((message) => message.content),
        ["Rejected: not today"],
      );
      assert.equal(toolEnd(events).output, "The worker is done.");
    });

    it("wait: the coordinator's run.approve answers the worker's call and the run completes", async () => {
      const { url, writes } = await worker();
      const agent = coordinator(await toolFor(url), "wait");
      const run = agent.run("go");
      const events: LoopEvent[] = [];
      for await (const event of run) {
        events.push(event);
        const request = approvalRequestOf(event);
        if (request) run.approve(request.toolCallId);
      }
      const result = await run;
      assert.equal(result.state, "COMPLETED", result.reason);
      assert.equal(toolEnd(events).output, "The worker is done.");
      assert.deepEqual(writes, ["notes.txt"]);
    });

    it("a decision for other arguments (a wrong hash) is refused before anything is sent; the right one still works", async () => {
      const { url, writes } = await worker();
      const agent = coordinator(await toolFor(url), "interrupt");
      const result = await agent.run("go");
      assert.throws(() => agent.resume(result.checkpoint!, { decisions: { w_call: { approve: true, argumentsHash: "f".repeat(32) } } }), /made for other arguments/);
      assert.deepEqual(writes, []);
      const hash = result.checkpoint!.pending[0]!.argumentsHash;
      const resumed = agent.resume(result.checkpoint!, { decisions: { w_call: { approve: true, argumentsHash: hash } } });
      await collect(resumed);
      assert.equal((await resumed).state, "COMPLETED");
      assert.deepEqual(writes, ["notes.txt"]);
    });
  });
}
