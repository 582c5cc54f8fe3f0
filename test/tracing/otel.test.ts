import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, beforeEach, describe, test } from "node:test";
import { context, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { AgentLoopError } from "../../src/errors.js";
import { Agent } from "../../src/loop/agent.js";
import type { Model, ModelEvent } from "../../src/model/model.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import type { Tool } from "../../src/tools/tool.js";
import { extractTraceContext, injectTraceHeaders, otelInstrumentation, REDACTED } from "../../src/tracing/index.js";
import { memoryTracer, overlaps, sortedTree, spanNamed, spanTree } from "./helpers.js";

const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
after(() => contextManager.disable());

const { exporter, tracer } = memoryTracer();
beforeEach(() => exporter.reset());

const calls = (...list: Array<{ id: string; name: string; arguments: unknown }>) => JSON.stringify({ tool_calls: list });
/** A meeting point for the calls of one wave: `enter()` resolves once `size` calls are inside, so
 * they overlap for sure; it fails if they never all arrive (the wave did not run in parallel). */
function waveBarrier(size: number) {
  let arrived = 0;
  let open: () => void = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return async () => {
    if (++arrived === size) open();
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`only ${arrived} of ${size} calls of the wave started`)), 60_000); // a deadlock guard: generous for a loaded machine
    });
    await Promise.race([opened, stuck]).finally(() => clearTimeout(timer));
  };
}

function answeringTool(name: string, answer: string, enterWave?: () => Promise<void>): Tool {
  return {
    name,
    description: `answers ${answer}`,
    parameters: { type: "object", properties: { city: { type: "string" } } },
    execute: async () => {
      await enterWave?.();
      return answer;
    },
  };
}

describe("span tree", () => {
  test("a run with a parallel wave and a sub-agent nests invoke_agent > execute_tool > invoke_agent", async () => {
    const instrumentation = otelInstrumentation({ tracer });
    // The three calls of the parent's wave wait for each other: they overlap.
    const enterWave = waveBarrier(3);
    const researcher = new Agent({
      name: "researcher",
      model: new ScriptedModel([calls({ id: "call_lookup", name: "lookup", arguments: { city: "Paris" } }), "Paris is sunny."], { modelId: "child-model" }),
      tools: [answeringTool("lookup", "sunny")],
      instrumentation,
    });
    // A tool that runs another Agent with the same instrumentation, built inline.
    const research: Tool<{ task: string }> = {
      name: "research",
      description: "Delegates research",
      parameters: { type: "object", properties: { task: { type: "string" } }, required: ["task"] },
      kind: "agent",
      action: "delegate",
      execute: async ({ task }, toolContext) => {
        await enterWave();
        const result = await researcher.run(task, { signal: toolContext.signal, parentRunId: toolContext.runId, depth: toolContext.depth + 1 });
        return result.text;
      },
    };
    const planner = new Agent({
      name: "planner",
      model: new ScriptedModel(
        [
          calls(
            { id: "call_weather", name: "weather", arguments: { city: "Paris" } },
            { id: "call_time", name: "clock", arguments: {} },
            { id: "call_research", name: "research", arguments: { task: "weather in Paris" } },
          ),
          "It is sunny in Paris at noon.",
        ],
        { modelId: "parent-model" },
      ),
      tools: [answeringTool("weather", "22C", enterWave), answeringTool("clock", "noon", enterWave), research],
      instrumentation,
    });

    const result = await planner.run("Plan my day in Paris");
    assert.equal(result.state, "COMPLETED");
    const spans = exporter.getFinishedSpans();
    assert.deepEqual(sortedTree(spanTree(spans)), [
      {
        name: "invoke_agent planner",
        children: [
          { name: "chat parent-model", children: [] },
          { name: "chat parent-model", children: [] },
          { name: "execute_tool clock", children: [] },
          {
            name: "execute_tool research",
            children: [
              {
                name: "invoke_agent researcher",
                children: [
                  { name: "chat child-model", children: [] },
                  { name: "chat child-model", children: [] },
                  { name: "execute_tool lookup", children: [] },
                ],
              },
            ],
          },
          { name: "execute_tool weather", children: [] },
        ],
      },
    ]);
    assert.equal(new Set(spans.map((span) => span.spanContext().traceId)).size, 1, "one trace");

    // The wave ran in parallel: the tool spans overlap in time.
    assert.ok(overlaps(spanNamed(spans, "execute_tool weather"), spanNamed(spans, "execute_tool clock")));
    assert.ok(overlaps(spanNamed(spans, "execute_tool weather"), spanNamed(spans, "execute_tool research")));

    const root = spanNamed(spans, "invoke_agent planner");
    assert.equal(root.kind, SpanKind.INTERNAL);
    assert.equal(root.attributes["gen_ai.operation.name"], "invoke_agent");
    assert.equal(root.attributes["gen_ai.agent.name"], "planner");
    assert.equal(root.attributes["agentloop.run.state"], "COMPLETED");
    assert.equal(root.attributes["gen_ai.usage.input_tokens"], result.usage.inputTokens);
    assert.equal(root.status.code, SpanStatusCode.UNSET);
    assert.equal(spanNamed(spans, "invoke_agent researcher").attributes["agentloop.parent_run.id"], result.runId);

    const tool = spanNamed(spans, "execute_tool weather");
    assert.equal(tool.attributes["gen_ai.operation.name"], "execute_tool");
    assert.equal(tool.attributes["gen_ai.tool.name"], "weather");
    assert.equal(tool.attributes["gen_ai.tool.call.id"], "call_weather");
    assert.equal(spanNamed(spans, "execute_tool research").attributes["agentloop.tool.kind"], "agent");
    // Content is not captured by default.
    assert.equal(tool.attributes["gen_ai.tool.call.arguments"], undefined);
    assert.equal(root.attributes["gen_ai.input.messages"], undefined);
  });

  test("a sub-agent given through subAgents (delegate_to_<name>) nests under its execute_tool span", async () => {
    const instrumentation = otelInstrumentation({ tracer });
    const helper = new Agent({ name: "helper", description: "helps", model: new ScriptedModel(["helped"]), instrumentation });
    const boss = new Agent({
      name: "boss",
      model: new ScriptedModel([calls({ id: "d1", name: "delegate_to_helper", arguments: { task: "help" } }), "thanks"]),
      subAgents: [helper],
      instrumentation,
    });
    assert.equal((await boss.run("go")).state, "COMPLETED");
    assert.deepEqual(sortedTree(spanTree(exporter.getFinishedSpans())), [
      {
        name: "invoke_agent boss",
        children: [
          { name: "chat scripted", children: [] },
          { name: "chat scripted", children: [] },
          { name: "execute_tool delegate_to_helper", children: [{ name: "invoke_agent helper", children: [{ name: "chat scripted", children: [] }] }] },
        ],
      },
    ]);
  });

  test("model spans carry the GenAI attributes and usage", async () => {
    const model = new ScriptedModel([calls({ id: "call_1", name: "weather", arguments: { city: "Oslo" } }), "Cold."], { modelId: "gpt-test" });
    const agent = new Agent({ name: "solo", model, tools: [answeringTool("weather", "-5C")], instrumentation: otelInstrumentation({ tracer }) });
    const result = await agent.run("Weather in Oslo?");
    const chats = exporter.getFinishedSpans().filter((span) => span.name === "chat gpt-test");
    assert.equal(chats.length, 2);
    const [first, second] = chats.sort((a, b) => (a.attributes["agentloop.turn"] as number) - (b.attributes["agentloop.turn"] as number));
    for (const span of chats) {
      assert.equal(span.kind, SpanKind.CLIENT);
      assert.equal(span.attributes["gen_ai.operation.name"], "chat");
      assert.equal(span.attributes["gen_ai.provider.name"], "scripted");
      assert.equal(span.attributes["gen_ai.system"], "scripted");
      assert.equal(span.attributes["gen_ai.request.model"], "gpt-test");
      assert.ok((span.attributes["gen_ai.usage.input_tokens"] as number) > 0);
      assert.ok((span.attributes["gen_ai.usage.output_tokens"] as number) > 0);
    }
    assert.deepEqual(first.attributes["gen_ai.response.finish_reasons"], ["tool-calls"]);
    assert.deepEqual(second.attributes["gen_ai.response.finish_reasons"], ["stop"]);
    assert.deepEqual(first.attributes["agentloop.request.tool_names"], ["weather"]);
    const total = chats.reduce((sum, span) => sum + (span.attributes["gen_ai.usage.output_tokens"] as number), 0);
    assert.equal(total, result.usage.outputTokens);
  });
});

describe("errors", () => {
  test("a failing tool and an unknown tool set ERROR and error.type; the run goes on", async () => {
    const broken: Tool = {
      name: "broken",
      description: "always throws",
      parameters: { type: "object", properties: {} },
      execute: () => {
        throw new Error("disk on fire");
      },
    };
    const agent = new Agent({
      name: "unlucky",
      model: new ScriptedModel([calls({ id: "c1", name: "broken", arguments: {} }, { id: "c2", name: "missing", arguments: {} }), "Sorry."]),
      tools: [broken],
      instrumentation: otelInstrumentation({ tracer }),
    });
    const result = await agent.run("go");
    assert.equal(result.state, "COMPLETED");
    const spans = exporter.getFinishedSpans();
    const thrown = spanNamed(spans, "execute_tool broken");
    assert.equal(thrown.status.code, SpanStatusCode.ERROR);
    assert.equal(thrown.attributes["error.type"], "threw");
    assert.equal(thrown.status.message, undefined, "no tool output in the status without content capture");
    const unknown = spanNamed(spans, "execute_tool missing");
    assert.equal(unknown.status.code, SpanStatusCode.ERROR);
    assert.equal(unknown.attributes["error.type"], "unknown_tool");
    assert.equal(spanNamed(spans, "invoke_agent unlucky").status.code, SpanStatusCode.UNSET);
  });

  test("a model error marks the chat span and the failed run", async () => {
    const failing: Model = {
      provider: "test-provider",
      modelId: "flaky",
      async *stream(): AsyncGenerator<ModelEvent> {
        yield { type: "error", error: new AgentLoopError("rate_limit", "slow down", { status: 429 }) };
      },
    };
    const agent = new Agent({ name: "failing", model: failing, instrumentation: otelInstrumentation({ tracer }) });
    const result = await agent.run("hello");
    assert.equal(result.state, "FAILED");
    const spans = exporter.getFinishedSpans();
    const chat = spanNamed(spans, "chat flaky");
    assert.equal(chat.status.code, SpanStatusCode.ERROR);
    assert.equal(chat.attributes["error.type"], "rate_limit");
    assert.equal(chat.attributes["gen_ai.provider.name"], "test-provider");
    assert.ok(chat.events.some((event) => event.name === "exception"));
    const run = spanNamed(spans, "invoke_agent failing");
    assert.equal(run.status.code, SpanStatusCode.ERROR);
    assert.equal(run.attributes["error.type"], "rate_limit");
    assert.equal(run.attributes["agentloop.run.state"], "FAILED");
  });

  test("an aborted run is recorded with its state, the cancelled tool as an error", async () => {
    const controller = new AbortController();
    const waiting: Tool = {
      name: "wait",
      description: "waits for the abort",
      parameters: { type: "object", properties: {} },
      execute: (_args, toolContext) =>
        new Promise((resolve) => {
          toolContext.signal.addEventListener("abort", () => resolve("stopped"));
          controller.abort("user stop");
        }),
    };
    const agent = new Agent({
      name: "stoppable",
      model: new ScriptedModel([calls({ id: "w1", name: "wait", arguments: {} }), "never"]),
      tools: [waiting],
      instrumentation: otelInstrumentation({ tracer }),
    });
    const result = await agent.run("go", { signal: controller.signal });
    assert.equal(result.state, "ABORTED");
    const spans = exporter.getFinishedSpans();
    assert.equal(spanNamed(spans, "invoke_agent stoppable").attributes["agentloop.run.state"], "ABORTED");
    assert.equal(spanNamed(spans, "execute_tool wait").attributes["error.type"], "cancelled");
  });
});

describe("content capture and redaction", () => {
  const secrets = ["sk-live-123456", "hunter2", "tok_abcdef", "Bearer xyz-987", "s3cr3t-value"];

  test("captured arguments, results and messages never carry values of sensitive keys", async () => {
    const login: Tool = {
      name: "login",
      description: "logs in",
      parameters: { type: "object" },
      execute: () => JSON.stringify({ ok: true, session_token: "tok_abcdef", user: "ada" }),
    };
    const agent = new Agent({
      name: "careful",
      model: new ScriptedModel([
        calls({
          id: "l1",
          name: "login",
          arguments: {
            user: "ada",
            api_key: "sk-live-123456",
            nested: { password: "hunter2", headers: { Authorization: "Bearer xyz-987" }, list: [{ clientSecret: "s3cr3t-value" }] },
          },
        }),
        "Logged in.",
      ]),
      tools: [login],
      instrumentation: otelInstrumentation({ tracer, captureContent: true, attributes: { "deployment.api_key": "s3cr3t-value", "deployment.name": "prod" } }),
    });
    await agent.run("log me in");
    const spans = exporter.getFinishedSpans();
    const everything = JSON.stringify(spans.map((span: ReadableSpan) => ({ attributes: span.attributes, events: span.events, status: span.status })));
    for (const secret of secrets) assert.equal(everything.includes(secret), false, `${secret} leaked into spans`);

    const tool = spanNamed(spans, "execute_tool login");
    const args = JSON.parse(tool.attributes["gen_ai.tool.call.arguments"] as string);
    assert.deepEqual(args, {
      user: "ada",
      api_key: REDACTED,
      nested: { password: REDACTED, headers: { Authorization: REDACTED }, list: [{ clientSecret: REDACTED }] },
    });
    assert.deepEqual(JSON.parse(tool.attributes["gen_ai.tool.call.result"] as string), { ok: true, session_token: REDACTED, user: "ada" });
    const run = spanNamed(spans, "invoke_agent careful");
    assert.equal(run.attributes["deployment.api_key"], REDACTED);
    assert.equal(run.attributes["deployment.name"], "prod");
    assert.match(run.attributes["gen_ai.input.messages"] as string, /log me in/);
    assert.match(run.attributes["gen_ai.output.messages"] as string, /Logged in\./);
    // Token counters are not secrets.
    assert.equal(typeof run.attributes["gen_ai.usage.input_tokens"], "number");
    const chat = spans.find((span) => span.name.startsWith("chat ") && span.attributes["agentloop.turn"] === 1)!;
    assert.match(chat.attributes["gen_ai.output.messages"] as string, /"tool_call"/);
  });
});

describe("trace context propagation", () => {
  test("tools get W3C headers of their own execute_tool span, and a remote side continues the trace", async () => {
    const received: Array<{ tool: string; traceparent: string; viaHelper: string }> = [];
    const remoteTracer = memoryTracer();
    const server = createServer((request, response) => {
      // The remote side continues the trace from the headers.
      const remoteContext = extractTraceContext(request.headers);
      remoteTracer.tracer.startSpan("remote work", {}, remoteContext).end();
      received.push({
        tool: String(request.headers["x-tool"]),
        traceparent: String(request.headers.traceparent),
        viaHelper: String(request.headers["x-helper-traceparent"]),
      });
      response.end("remote ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    const url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/`;
    // Both calls are in flight when either reads its headers: each must still get its own span's.
    const enterRemoteWave = waveBarrier(2);
    const remoteTool = (name: string): Tool => ({
      name,
      description: "calls a remote agent",
      parameters: { type: "object" },
      kind: "kaos",
      execute: async (_args, toolContext) => {
        await enterRemoteWave();
        const fromServices = (toolContext.services.traceHeaders as () => Record<string, string>)();
        const fromHelper = injectTraceHeaders();
        const response = await fetch(url, {
          headers: { ...fromServices, "x-tool": name, "x-helper-traceparent": fromHelper.traceparent },
          signal: toolContext.signal,
        });
        return response.text();
      },
    });
    try {
      const agent = new Agent({
        name: "delegator",
        model: new ScriptedModel([calls({ id: "r1", name: "remote_a", arguments: {} }, { id: "r2", name: "remote_b", arguments: {} }), "done"]),
        tools: [remoteTool("remote_a"), remoteTool("remote_b")],
        instrumentation: otelInstrumentation({ tracer }),
      });
      assert.equal((await agent.run("delegate")).state, "COMPLETED");
      const spans = exporter.getFinishedSpans();
      assert.equal(received.length, 2);
      for (const entry of received) {
        const span = spanNamed(spans, `execute_tool ${entry.tool}`).spanContext();
        assert.equal(entry.traceparent, `00-${span.traceId}-${span.spanId}-01`);
        assert.equal(entry.viaHelper, entry.traceparent);
      }
      const remoteSpans = remoteTracer.exporter.getFinishedSpans();
      assert.equal(remoteSpans.length, 2);
      const traceId = spans[0].spanContext().traceId;
      for (const span of remoteSpans) {
        assert.equal(span.spanContext().traceId, traceId);
        assert.ok(spans.some((local) => local.name.startsWith("execute_tool") && local.spanContext().spanId === span.parentSpanContext?.spanId));
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("injectTraceHeaders outside any span writes nothing; extract ignores a malformed traceparent", () => {
    assert.deepEqual(injectTraceHeaders({ accept: "text/plain" }), { accept: "text/plain" });
    const base = context.active();
    assert.equal(trace.getSpanContext(extractTraceContext({ traceparent: "garbage" }, base)), undefined);
    assert.equal(trace.getSpanContext(extractTraceContext({ traceparent: `00-${"0".repeat(32)}-${"1".repeat(16)}-01` }, base)), undefined);
    const valid = trace.getSpanContext(extractTraceContext({ TraceParent: `00-${"a".repeat(32)}-${"b".repeat(16)}-01` }, base));
    assert.deepEqual(valid, { traceId: "a".repeat(32), spanId: "b".repeat(16), traceFlags: 1, isRemote: true });
  });
});
