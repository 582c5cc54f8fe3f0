import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { AGENT_CARD_PATH, type AgentCard, TaskState } from "@a2a-js/sdk";
import { AgentEvent, type AgentExecutor, DefaultRequestHandler, type ExecutionEventBus, InMemoryTaskStore, type RequestContext } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import express from "express";
import { type A2AProgress, a2aAgentTool } from "../../src/a2a/index.js";
import { AgentLoopError } from "../../src/errors.js";
import { Agent } from "../../src/loop/agent.js";
import type { LoopEvent } from "../../src/loop/events.js";
import type { Model, ModelEvent } from "../../src/model/model.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import type { Tool } from "../../src/tools/tool.js";
import { otelInstrumentation } from "../../src/tracing/index.js";
import { memoryTracer, spanNamed } from "../tracing/helpers.js";
import { toolContext } from "../mcp/tool-context.js";
import { agentMessage, textPart } from "./helpers.js";

/** Serves an agentloop Agent over A2A: tool calls become status updates, answer text an artifact. */
class LoopExecutor implements AgentExecutor {
  readonly headers: Array<Record<string, unknown>> = [];
  constructor(private readonly makeAgent: () => Agent) {}

  readonly cancelled: string[] = [];
  private cancelWaiters: Array<() => void> = [];

  /** Resolves once the server has been asked to cancel `taskId`. */
  cancelRequested(taskId: string): Promise<void> {
    if (this.cancelled.includes(taskId)) return Promise.resolve();
    return new Promise((resolve) => this.cancelWaiters.push(resolve));
  }

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.cancelled.push(taskId);
    for (const wake of this.cancelWaiters.splice(0)) wake();
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: "",
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: undefined },
        metadata: undefined,
      }),
    );
  };

  async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = request;
    this.headers.push((request.context.state.get("headers") as Record<string, unknown>) ?? {});
    const input = request.userMessage.parts.map((part) => (part.content?.$case === "text" ? part.content.value : "")).join("");
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [],
        history: [request.userMessage],
        metadata: undefined,
      }),
    );
    const run = this.makeAgent().run(input);
    let chunks = 0;
    const artifactId = randomUUID();
    for await (const event of run) {
      if (event.type === "tool-start") {
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: { state: TaskState.TASK_STATE_WORKING, message: agentMessage(taskId, contextId, `calling ${event.name}`), timestamp: undefined },
            metadata: undefined,
          }),
        );
      }
      if (event.type === "text-delta") {
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            artifact: { artifactId, name: "answer", description: "", parts: [textPart(event.delta)], metadata: undefined, extensions: [] },
            append: chunks++ > 0,
            lastChunk: false,
            metadata: undefined,
          }),
        );
      }
    }
    const result = await run;
    const completed = result.state === "COMPLETED";
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: {
          state: completed ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_FAILED,
          message: completed ? undefined : agentMessage(taskId, contextId, result.reason),
          timestamp: undefined,
        },
        metadata: undefined,
      }),
    );
  }
}

interface TestServer {
  url: string;
  executor: LoopExecutor;
  close(): Promise<void>;
}

async function startA2AServer(name: string, makeAgent: () => Agent, streaming = true): Promise<TestServer> {
  const executor = new LoopExecutor(makeAgent);
  const app = express();
  // The card names the server's own URL, known only once it listens: the routes are set up after.
  let cardRoute: express.RequestHandler = (_request, _response, next) => next();
  let rpcRoute: express.RequestHandler = (_request, _response, next) => next();
  app.use(`/${AGENT_CARD_PATH}`, (request, response, next) => cardRoute(request, response, next));
  app.use("/a2a/jsonrpc", (request, response, next) => rpcRoute(request, response, next));
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, "127.0.0.1", () => resolve(listening));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card: AgentCard = {
    name,
    description: `${name} answers questions about time.`,
    supportedInterfaces: [{ url: `${url}/a2a/jsonrpc`, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "1.0" }],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text"],
    defaultOutputModes: ["text"],
    skills: [],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  cardRoute = agentCardHandler({ agentCardProvider: handler });
  rpcRoute = jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication });
  return {
    url,
    executor,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const clockTool = { name: "clock", description: "time", parameters: { type: "object", properties: {} }, execute: () => "12:00" };

async function delegateOnce(tool: Tool<{ task: string }>, task: string, runOptions = {}) {
  const lead = new Agent({
    name: "lead",
    model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "call_1", name: tool.name, arguments: { task } }] }), "Relayed."]),
    tools: [tool],
  });
  const events: LoopEvent[] = [];
  const run = lead.run("go", runOptions);
  for await (const event of run) events.push(event);
  const end = events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>;
  const progress = events.filter((event) => event.type === "tool-progress").map((event) => (event as { data: A2AProgress }).data);
  return { end, progress, result: await run };
}

describe("a2aAgentTool against a real A2A server", () => {
  let clock: TestServer;
  let broken: TestServer;
  let plain: TestServer;

  before(async () => {
    clock = await startA2AServer("Clock Agent", () => new Agent({ name: "clock-agent", model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "t1", name: "clock", arguments: {} }] }), "It is twelve o'clock now."]), tools: [clockTool] }));
    const failing: Model = {
      provider: "test",
      modelId: "down",
      async *stream(): AsyncGenerator<ModelEvent> {
        yield { type: "error", error: new AgentLoopError("server", "upstream model is down") };
      },
    };
    broken = await startA2AServer("Broken Agent", () => new Agent({ name: "broken", model: failing }));
    plain = await startA2AServer("Plain Agent", () => new Agent({ name: "plain", model: new ScriptedModel(["plain answer"]) }), false);
  });

  after(async () => {
    await Promise.all([clock.close(), broken.close(), plain.close()]);
  });

  it("names the tool from the agent card, streams progress and returns the final text", async () => {
    const tool = await a2aAgentTool({ cardUrl: clock.url });
    assert.equal(tool.name, "delegate_to_Clock_Agent");
    assert.equal(tool.description, "Clock Agent answers questions about time.");
    assert.equal(tool.kind, "a2a");
    assert.equal(tool.action, "delegate");
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const { end, progress, result } = await delegateOnce(tool, "What time is it?", { services: { traceHeaders: () => ({ traceparent }) } });
    assert.equal(result.state, "COMPLETED");
    assert.equal(end.isError, false);
    assert.equal(end.output, "It is twelve o'clock now.");

    assert.ok(progress.every((data) => data.source === "a2a" && data.agent === "Clock Agent"));
    assert.deepEqual(progress[0], { source: "a2a", agent: "Clock Agent", update: "task", taskId: progress[0].taskId, state: "submitted" });
    assert.ok(progress.some((data) => data.update === "status" && data.state === "working" && data.text === "calling clock"));
    const chunks = progress.filter((data) => data.update === "artifact").map((data) => data.text);
    assert.ok(chunks.length > 1, "the answer arrives in several artifact chunks");
    assert.equal(chunks.join(""), "It is twelve o'clock now.");
    assert.equal(progress.at(-1)?.state, "completed");

    // W3C trace context went out with the A2A request.
    assert.equal(clock.executor.headers.at(-1)?.traceparent, traceparent);
  });

  it("with otelInstrumentation, the A2A request carries the traceparent of its execute_tool span", async () => {
    const { exporter, tracer } = memoryTracer();
    const tool = await a2aAgentTool({ cardUrl: clock.url });
    const lead = new Agent({
      name: "lead",
      model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "call_1", name: tool.name, arguments: { task: "time?" } }] }), "Relayed."]),
      tools: [tool],
      instrumentation: otelInstrumentation({ tracer }),
    });
    assert.equal((await lead.run("go")).state, "COMPLETED");
    const { traceId, spanId } = spanNamed(exporter.getFinishedSpans(), `execute_tool ${tool.name}`).spanContext();
    assert.equal(clock.executor.headers.at(-1)?.traceparent, `00-${traceId}-${spanId}-01`);
  });

  it("accepts the card's full URL and an explicit name and description", async () => {
    const tool = await a2aAgentTool({ cardUrl: `${clock.url}/${AGENT_CARD_PATH}`, name: "clock", description: "Tells the time." });
    assert.equal(tool.name, "delegate_to_clock");
    assert.equal(tool.description, "Tells the time.");
    const { end } = await delegateOnce(tool, "time?");
    assert.equal(end.output, "It is twelve o'clock now.");
  });

  it("uses message/send when the card says the agent does not stream", async () => {
    const tool = await a2aAgentTool({ cardUrl: plain.url });
    const { end, progress } = await delegateOnce(tool, "hello");
    assert.equal(end.output, "plain answer");
    assert.equal(end.isError, false);
    assert.deepEqual(progress, []);
  });

  it("turns a failed remote task into [Delegation failed: ...]", async () => {
    const tool = await a2aAgentTool({ cardUrl: broken.url });
    const { end, result } = await delegateOnce(tool, "anything");
    assert.equal(result.state, "COMPLETED");
    assert.equal(end.isError, true);
    assert.equal(end.output, '[Delegation failed: the remote task of "Broken Agent" ended as failed: model error (server): upstream model is down]');
  });

  it("with a name, creates the tool for an unreachable card and reports the failure per call", async () => {
    const down = await startA2AServer("Gone", () => new Agent({ model: new ScriptedModel([]) }));
    const url = down.url;
    await down.close();
    const tool = await a2aAgentTool({ cardUrl: url, name: "gone" });
    assert.equal(tool.name, "delegate_to_gone");
    const { end, result } = await delegateOnce(tool, "hello?");
    assert.equal(result.state, "COMPLETED");
    assert.equal(end.isError, true);
    assert.match(end.output, /^\[Delegation failed: .+\]$/);
    assert.match(end.output, /ECONNREFUSED|fetch failed/);
  });

  it("without a name, rejects an unreachable card clearly, and rejects a bad URL", async () => {
    const down = await startA2AServer("Gone", () => new Agent({ model: new ScriptedModel([]) }));
    const url = down.url;
    await down.close();
    await assert.rejects(a2aAgentTool({ cardUrl: url }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.match(error.message, new RegExp(`could not read the agent card at ${url.replace(/[.]/g, "\\.")}`));
      return true;
    });
    await assert.rejects(a2aAgentTool({ cardUrl: "nonsense" }), /"nonsense" is not a valid agent card URL/);
  });

  it("an empty task is a failed delegation that never reaches the server", async () => {
    const tool = await a2aAgentTool({ cardUrl: clock.url });
    const before = clock.executor.headers.length;
    const { end } = await delegateOnce(tool, "  ");
    assert.deepEqual([end.output, end.isError], ['[Delegation failed: delegation to "Clock Agent" needs a non-empty "task" string]', true]);
    assert.equal(clock.executor.headers.length, before);
  });

  it("stops on abort and cancels the remote task", async () => {
    const slow = await startA2AServer(
      "Slow",
      () => new Agent({ name: "slow", model: new ScriptedModel(["a b c d e f g h i j k l m n o p"], { chunkDelayMs: 100 }) }),
    );
    try {
      const tool = await a2aAgentTool({ cardUrl: slow.url });
      const controller = new AbortController();
      let taskId: string | undefined;
      const result = await tool.execute(
        { task: "talk slowly" },
        toolContext({
          signal: controller.signal,
          runId: "run_x",
          idempotencyKey: "run_x:call_x",
          toolCallId: "c1",
          toolName: tool.name,
          agentPath: ["lead"],
          progress: (data) => {
            const update = data as A2AProgress;
            taskId ??= update.taskId;
            if (update.update === "artifact") controller.abort("user stopped");
          },
        }),
      );
      assert.deepEqual(result, { content: "[Delegation failed: aborted (user stopped)]", isError: true });
      await slow.executor.cancelRequested(taskId!);
      assert.deepEqual(slow.executor.cancelled, [taskId]);
    } finally {
      await slow.close();
    }
  });

  it("gives up after timeoutMs without crashing the run", async () => {
    const slow = await startA2AServer(
      "Slow",
      () => new Agent({ name: "slow", model: new ScriptedModel(["a b c d e f g h i j k l m n o p"], { chunkDelayMs: 100 }) }),
    );
    try {
      const tool = await a2aAgentTool({ cardUrl: slow.url, timeoutMs: 150 });
      const { end, result } = await delegateOnce(tool, "talk slowly");
      assert.equal(result.state, "COMPLETED");
      assert.equal(end.output, '[Delegation failed: no answer from "Slow" within 150 ms]');
    } finally {
      await slow.close();
    }
  });
});
