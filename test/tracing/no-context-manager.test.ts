// Without a registered context manager the active context is always the root one: spans must still
// nest (through the parent run id) and tools must still get their trace headers.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent } from "../../src/loop/agent.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import type { Tool } from "../../src/tools/tool.js";
import { otelInstrumentation } from "../../src/tracing/index.js";
import { memoryTracer, sortedTree, spanNamed, spanTree } from "./helpers.js";

const calls = (...list: Array<{ id: string; name: string; arguments: unknown }>) => JSON.stringify({ tool_calls: list });

test("sub-agent spans nest through the parent run id, and traceHeaders still names the tool's span", async () => {
  const { exporter, tracer } = memoryTracer();
  const instrumentation = otelInstrumentation({ tracer });
  const child = new Agent({ name: "child", model: new ScriptedModel(["child answer"]), instrumentation });
  let headers: Record<string, string> = {};
  const delegate: Tool<{ task: string }> = {
    name: "delegate",
    description: "runs the child",
    parameters: { type: "object", properties: { task: { type: "string" } } },
    execute: async ({ task }, context) => {
      headers = (context.services.traceHeaders as () => Record<string, string>)();
      return (await child.run(task, { parentRunId: context.runId, services: context.services })).text;
    },
  };
  const parent = new Agent({
    name: "parent",
    model: new ScriptedModel([calls({ id: "d1", name: "delegate", arguments: { task: "x" } }), "done"]),
    tools: [delegate],
    instrumentation,
  });
  assert.equal((await parent.run("go")).state, "COMPLETED");
  const spans = exporter.getFinishedSpans();
  assert.deepEqual(sortedTree(spanTree(spans)), [
    {
      name: "invoke_agent parent",
      children: [
        { name: "chat scripted", children: [] },
        { name: "chat scripted", children: [] },
        { name: "execute_tool delegate", children: [{ name: "invoke_agent child", children: [{ name: "chat scripted", children: [] }] }] },
      ],
    },
  ]);
  const toolSpan = spanNamed(spans, "execute_tool delegate").spanContext();
  assert.equal(headers.traceparent, `00-${toolSpan.traceId}-${toolSpan.spanId}-01`);
});
