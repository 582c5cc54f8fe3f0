// A remote A2A agent that is not agentloop asks for input (input-required without an
// approval_required data part): the question goes up as an elicitation.
import assert from "node:assert/strict";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { AGENT_CARD_PATH, type AgentCard, TaskState } from "@a2a-js/sdk";
import { AgentEvent, type AgentExecutor, DefaultRequestHandler, type ExecutionEventBus, InMemoryTaskStore, type RequestContext } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import express from "express";
import { a2aAgentTool } from "../../src/a2a/index.js";
import { Agent } from "../../src/loop/agent.js";
import type { LoopEvent } from "../../src/loop/events.js";
import type { McpElicitation } from "../../src/mcp/config.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import type { Tool } from "../../src/tools/tool.js";
import { agentMessage } from "./helpers.js";

/** Asks "Which city?" on a new task; the answer on the task completes it. */
class AskingExecutor implements AgentExecutor {
  cancelTask = async (): Promise<void> => {};
  async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = request;
    const text = request.userMessage.parts.map((part) => (part.content?.$case === "text" ? part.content.value : "")).join("");
    const status = (state: TaskState, message: string) => AgentEvent.statusUpdate({ taskId, contextId, status: { state, message: agentMessage(taskId, contextId, message), timestamp: undefined }, metadata: undefined });
    bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined }, artifacts: [], history: [request.userMessage], metadata: undefined }));
    if (!request.task) bus.publish(status(TaskState.TASK_STATE_INPUT_REQUIRED, "Which city?"));
    else bus.publish(status(TaskState.TASK_STATE_COMPLETED, `Sunny in ${text}.`));
    bus.finished();
  }
}

async function delegateOnce(tool: Tool<{ task: string }>) {
  const lead = new Agent({ name: "lead", model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "call_1", name: tool.name, arguments: { task: "weather?" } }] }), "Relayed."]), tools: [tool] });
  const events: LoopEvent[] = [];
  for await (const event of lead.run("go")) events.push(event);
  return events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>;
}

describe("a remote A2A agent asking for input", () => {
  let server: Server;
  let url: string;
  before(async () => {
    const app = express();
    server = await new Promise((resolve) => {
      const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const card: AgentCard = {
      name: "weather",
      description: "Asks which city.",
      supportedInterfaces: [{ url: `${url}/a2a/jsonrpc`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" }],
      provider: undefined,
      version: "1.0.0",
      capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
      securitySchemes: {},
      securityRequirements: [],
      defaultInputModes: ["text"],
      defaultOutputModes: ["text"],
      skills: [],
      signatures: [],
    };
    const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new AskingExecutor());
    app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
    app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("passes the question up as an elicitation and sends the accepted answer on the task", async () => {
    const asked: McpElicitation[] = [];
    const tool = await a2aAgentTool({
      cardUrl: url,
      onElicitation: async (request) => {
        asked.push(request);
        return { action: "accept", content: { answer: "Lisbon" } };
      },
    });
    const end = await delegateOnce(tool);
    assert.equal(asked.length, 1);
    assert.equal(asked[0]!.server, "weather");
    assert.equal(asked[0]!.message, "Which city?");
    assert.equal(end.isError, false, end.output);
    assert.equal(end.output, "Sunny in Lisbon.");
  });

  it("a declined question, or no one to ask, ends the call naming the question", async () => {
    const declined = await delegateOnce(await a2aAgentTool({ cardUrl: url, onElicitation: async () => ({ action: "decline" }) }));
    assert.equal(declined.isError, true);
    assert.match(declined.output, /asks for input and the answer was declined: Which city\?/);
    const nobody = await delegateOnce(await a2aAgentTool({ cardUrl: url }));
    assert.equal(nobody.isError, true);
    assert.match(nobody.output, /input-required: Which city\?/);
  });
});
