import assert from "node:assert/strict";
import { after, it } from "node:test";
import { context, INVALID_SPAN_CONTEXT, trace } from "@opentelemetry/api";
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
  // Not traced itself (the global provider would give the run a span of its own: see below).
  const agent = new Agent({ model: new ScriptedModel(["traced"]), memory: sessionMemory(store), instrumentation: false });
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
  // Outside any span (a context manager and a provider registered all the same): no ids, and every event written.
  await agent.run("untraced", { sessionId: "u" });
  const untraced = await store.events("u");
  assert.equal(untraced.length, 4);
  for (const event of untraced) assert.deepEqual([event.metadata.trace_id, event.metadata.span_id], [undefined, undefined]);
  // In a span whose context is not valid (all-zero ids, as a non-sampling propagator leaves it): no ids either.
  await context.with(trace.setSpanContext(context.active(), INVALID_SPAN_CONTEXT), () => agent.run("invalid", { sessionId: "i" }));
  const invalid = await store.events("i");
  assert.equal(invalid.length, 4);
  for (const event of invalid) assert.deepEqual([event.metadata.trace_id, event.metadata.span_id], [undefined, undefined]);
});

it("with a global tracer provider the run is traced by itself: its events carry its invoke_agent span, in the caller's trace", async () => {
  const store = new InMemoryStore();
  const agent = new Agent({ model: new ScriptedModel(["traced"]), memory: sessionMemory(store) });
  const tracer = trace.getTracer("test");
  const request = await tracer.startActiveSpan("request", async (span) => {
    await agent.run("hello", { sessionId: "t" });
    span.end();
    return span.spanContext();
  });
  const events = await store.events("t");
  assert.equal(events.length, 4);
  const spanIds = new Set(events.map((event) => event.metadata.span_id));
  assert.equal(spanIds.size, 1, "one span: the run's");
  assert.notEqual([...spanIds][0], request.spanId);
  for (const event of events) assert.equal(event.metadata.trace_id, request.traceId);
  // Outside any span the run's own span starts a trace.
  await agent.run("alone", { sessionId: "u" });
  const alone = await store.events("u");
  assert.match(String(alone[0]?.metadata.trace_id), /^[0-9a-f]{32}$/);
  assert.notEqual(alone[0]?.metadata.trace_id, request.traceId);
});
