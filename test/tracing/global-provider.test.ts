// Tracing without extra code (seed 004: the invoke_agent span MUST be emitted): once a tracer
// provider is registered globally, runs of agents built without `instrumentation` emit their
// invoke_agent / chat / execute_tool spans; `instrumentation: false` opts out.
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { after, beforeEach, describe, test } from "node:test";
import { trace } from "@opentelemetry/api";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { Agent, defineTool, ScriptedModel } from "../../src/index.js";
import { globalTracerProviderRegistered } from "../../src/loop/global-tracing.js";
import { invokeAgent } from "../../src/prompty/index.js";
import { sortedTree, spanNamed, spanTree } from "./helpers.js";

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
beforeEach(() => exporter.reset());
after(async () => {
  trace.disable();
  await provider.shutdown();
});

const weather = defineTool({
  name: "get_weather",
  description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  execute: ({ city }) => `${city}: sunny`,
});
const script = () =>
  new ScriptedModel([
    JSON.stringify({
      tool_calls: [
        { name: "get_weather", arguments: { city: "Paris" } },
        { name: "get_weather", arguments: { city: "Oslo" } },
      ],
    }),
    "Both sunny.",
  ]);

describe("a globally registered tracer provider", () => {
  test("before one is registered, runs emit nothing; an agent built before the registration is traced after it", async () => {
    assert.equal(globalTracerProviderRegistered(), false);
    const agent = new Agent({ name: "weather", model: script(), tools: [weather] });
    assert.equal((await agent.run("Weather?")).state, "COMPLETED");
    assert.equal(exporter.getFinishedSpans().length, 0);

    // provider.register(): the global tracer provider, the AsyncLocalStorage context manager, W3C propagation.
    provider.register();
    assert.equal(globalTracerProviderRegistered(), true);
    const result = await agent.run("Weather in Paris and Oslo?");
    assert.equal(result.state, "COMPLETED");
    const spans = exporter.getFinishedSpans();
    assert.deepEqual(sortedTree(spanTree(spans)), [
      {
        name: "invoke_agent weather",
        children: [
          { name: "chat scripted", children: [] },
          { name: "chat scripted", children: [] },
          { name: "execute_tool get_weather", children: [] },
          { name: "execute_tool get_weather", children: [] },
        ],
      },
    ]);
    const run = spanNamed(spans, "invoke_agent weather");
    assert.equal(run.attributes["gen_ai.operation.name"], "invoke_agent");
    assert.equal(run.attributes["gen_ai.agent.name"], "weather");
    assert.equal(run.attributes["agentloop.run.id"], result.runId);
    assert.equal(run.attributes["agentloop.run.state"], "COMPLETED");
    const tool = spanNamed(spans, "execute_tool get_weather");
    assert.equal(tool.attributes["gen_ai.tool.name"], "get_weather");
    assert.equal(spanNamed(spans, "chat scripted").attributes["gen_ai.operation.name"], "chat");
  });

  test("sub-agents nest under the delegating tool call; instrumentation: false opts an agent out", async () => {
    const researcher = new Agent({ name: "researcher", description: "Finds facts", model: new ScriptedModel(["Paris is sunny."]) });
    const lead = new Agent({
      name: "lead",
      model: new ScriptedModel([JSON.stringify({ tool_calls: [{ name: "delegate_to_researcher", arguments: { task: "Paris?" } }] }), "Sunny."]),
      subAgents: [researcher],
    });
    assert.equal((await lead.run("Weather?")).state, "COMPLETED");
    assert.deepEqual(sortedTree(spanTree(exporter.getFinishedSpans())), [
      {
        name: "invoke_agent lead",
        children: [
          { name: "chat scripted", children: [] },
          { name: "chat scripted", children: [] },
          {
            name: "execute_tool delegate_to_researcher",
            children: [{ name: "invoke_agent researcher", children: [{ name: "chat scripted", children: [] }] }],
          },
        ],
      },
    ]);

    exporter.reset();
    const quiet = new Agent({ name: "quiet", model: script(), tools: [weather], instrumentation: false });
    assert.equal((await quiet.run("Weather?")).state, "COMPLETED");
    assert.deepEqual(exporter.getFinishedSpans(), []);
  });

  test("a .prompty run through invokeAgent emits its invoke_agent span", async () => {
    const file = fileURLToPath(new URL("../prompty/fixtures/greeting.prompty", import.meta.url));
    const result = await invokeAgent(file, { name: "Ana", place: "Porto" }, undefined, { model: new ScriptedModel(["Hello, Ana!"]), env: { PROMPTY_TEST_KEY: "unused" } });
    assert.equal(result.text, "Hello, Ana!");
    assert.deepEqual(spanTree(exporter.getFinishedSpans()), [{ name: "invoke_agent greeting", children: [{ name: "chat scripted", children: [] }] }]);
  });
});
