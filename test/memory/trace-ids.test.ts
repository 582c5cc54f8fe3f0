import assert from "node:assert/strict";
import { after, it } from "node:test";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { Agent, ScriptedModel } from "../../src/index.js";
import { InMemoryStore, sessionMemory } from "../../src/memory/index.js";

const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
trace.setGlobalTracerProvider(new BasicTracerProvider());
after(() => {
  trace.disable();
  context.disable();
});

it("puts the active OpenTelemetry span's trace and span ids in each event's metadata", async () => {
  const store = new InMemoryStore();
  const agent = new Agent({ model: new ScriptedModel(["traced"]), memory: sessionMemory(store) });
  const tracer = trace.getTracer("test");
  const ids = await tracer.startActiveSpan("request", async (span) => {
    await agent.run("hello", { sessionId: "t" });
    span.end();
    return span.spanContext();
  });
  const events = await store.events("t");
  assert.equal(events.length, 4);
  for (const event of events) {
    assert.equal(event.metadata.trace_id, ids.traceId);
    assert.equal(event.metadata.span_id, ids.spanId);
  }
  // Outside any span: no ids.
  await agent.run("untraced", { sessionId: "u" });
  for (const event of await store.events("u")) assert.equal(event.metadata.trace_id, undefined);
});
