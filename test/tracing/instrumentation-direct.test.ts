// The Instrumentation used directly (as any loop-like caller would), without an Agent.
import assert from "node:assert/strict";
import { afterEach, test } from "node:test";
import { SpanStatusCode } from "@opentelemetry/api";
import type { RunInfo } from "../../src/loop/types.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { otelInstrumentation } from "../../src/tracing/index.js";
import { memoryTracer, spanNamed } from "./helpers.js";

const info: RunInfo = { runId: "run_direct", agentName: "direct", model: new ScriptedModel([]), depth: 0 };
const { exporter, tracer } = memoryTracer();
afterEach(() => {
  exporter.reset();
  delete process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT;
});

test("a wrapped function that throws: the span records it, sets ERROR and error.type, and the error is rethrown", async () => {
  const instrumentation = otelInstrumentation({ tracer });
  const toolInfo = { ...info, toolCallId: "t1", toolName: "explode", arguments: "{}", services: {} };
  await assert.rejects(
    instrumentation.toolCall(toolInfo, async () => {
      throw new TypeError("bad shape");
    }),
    /bad shape/,
  );
  await assert.rejects(
    instrumentation.modelCall({ ...info, turn: 1, toolNames: [] }, async () => {
      throw Object.assign(new Error("gone"), { kind: "network" });
    }),
    /gone/,
  );
  const spans = exporter.getFinishedSpans();
  const tool = spanNamed(spans, "execute_tool explode");
  assert.equal(tool.status.code, SpanStatusCode.ERROR);
  assert.equal(tool.attributes["error.type"], "TypeError");
  assert.equal(tool.events[0]?.name, "exception");
  assert.equal(spanNamed(spans, "chat scripted").attributes["error.type"], "network");
});

test("wrappers return what fn returns and call it once", async () => {
  const instrumentation = otelInstrumentation({ tracer });
  let count = 0;
  const outcome = { isError: false, output: "ok" };
  assert.equal(
    await instrumentation.toolCall({ ...info, toolCallId: "t2", toolName: "once", arguments: {}, services: {} }, async () => {
      count++;
      return outcome;
    }),
    outcome,
  );
  assert.equal(count, 1);
});

test("content capture follows OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT and is cut at maxContentChars", async () => {
  process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = "true";
  const instrumentation = otelInstrumentation({ tracer, maxContentChars: 20 });
  await instrumentation.toolCall({ ...info, toolCallId: "t3", toolName: "long", arguments: { text: "x".repeat(100) }, services: {} }, async () => ({
    isError: false,
    output: "y".repeat(100),
  }));
  const span = spanNamed(exporter.getFinishedSpans(), "execute_tool long");
  assert.equal(span.attributes["gen_ai.tool.call.arguments"], `${'{"text":"xxxxxxxxxxx'}…`);
  assert.equal(span.attributes["gen_ai.tool.call.result"], `${"y".repeat(20)}…`);

  delete process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT;
  exporter.reset();
  await otelInstrumentation({ tracer }).toolCall({ ...info, toolCallId: "t4", toolName: "quiet", arguments: { text: "x" }, services: {} }, async () => ({
    isError: true,
    errorKind: "threw",
    output: "secret-ish output",
  }));
  const quiet = spanNamed(exporter.getFinishedSpans(), "execute_tool quiet");
  assert.equal(quiet.attributes["gen_ai.tool.call.arguments"], undefined);
  assert.equal(quiet.attributes["gen_ai.tool.call.result"], undefined);
  assert.equal(quiet.attributes["error.type"], "threw");
});
