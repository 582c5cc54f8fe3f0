// Tracing without extra code (src/loop/global-tracing.ts) from the loop's side: which instrumentation
// a run uses before and after a tracer provider is registered globally, with `instrumentation: false`
// and with one of the caller's own; what counts as a registered provider.
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { trace } from "@opentelemetry/api";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { Agent, defineTool, type Instrumentation, ScriptedModel } from "../../src/index.js";
import { globalTracerProviderRegistered } from "../../src/loop/global-tracing.js";
import { calls } from "./helpers.js";

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
after(async () => {
  trace.disable();
  await provider.shutdown();
});

const API_GLOBAL = Symbol.for("opentelemetry.js.api.1");
const echo = defineTool({ name: "echo", description: "", parameters: { type: "object" }, execute: () => "echoed" });
const agent = (instrumentation?: Instrumentation | false) =>
  new Agent({ name: "traced", model: new ScriptedModel([calls(["echo", {}]), "done"]), tools: [echo], ...(instrumentation !== undefined ? { instrumentation } : {}) });

test("a provider counts as registered only once the API's global registry holds a tracer provider", () => {
  const global = globalThis as Record<symbol, unknown>;
  const before = global[API_GLOBAL];
  try {
    for (const registry of [undefined, null, "1.9.0", { version: "1.9.0" }]) {
      global[API_GLOBAL] = registry;
      assert.equal(globalTracerProviderRegistered(), false, JSON.stringify(registry));
    }
    global[API_GLOBAL] = { version: "1.9.0", trace: {} };
    assert.equal(globalTracerProviderRegistered(), true);
  } finally {
    if (before === undefined) delete global[API_GLOBAL];
    else global[API_GLOBAL] = before;
  }
});

test("runs are traced once a provider is registered, unless instrumentation is false or the agent's own", async () => {
  assert.equal(globalTracerProviderRegistered(), false);
  assert.equal((await agent().run("go")).state, "COMPLETED");
  assert.equal(exporter.getFinishedSpans().length, 0, "nothing to trace to yet");

  provider.register();
  const first = await agent().run("go");
  assert.equal(first.state, "COMPLETED");
  const names = exporter
    .getFinishedSpans()
    .map((span) => span.name)
    .sort();
  assert.deepEqual(names, ["chat scripted", "chat scripted", "execute_tool echo", "invoke_agent traced"]);
  // A second run, the instrumentation already loaded: traced the same way.
  exporter.reset();
  await agent().run("go");
  assert.equal(exporter.getFinishedSpans().length, 4);

  exporter.reset();
  assert.equal((await agent(false).run("go")).state, "COMPLETED");
  assert.equal(exporter.getFinishedSpans().length, 0, "instrumentation: false opts out");

  const wrapped: string[] = [];
  const own: Instrumentation = {
    run: (info, fn) => {
      wrapped.push(`run ${info.agentName}`);
      return fn();
    },
    modelCall: (_info, fn) => {
      wrapped.push("model");
      return fn();
    },
    toolCall: (info, fn) => {
      wrapped.push(`tool ${info.toolName}`);
      return fn();
    },
  };
  assert.equal((await agent(own).run("go")).state, "COMPLETED");
  assert.equal(exporter.getFinishedSpans().length, 0, "the agent's own instrumentation replaces the global one");
  assert.deepEqual(wrapped, ["run traced", "model", "tool echo", "model"]);
});
