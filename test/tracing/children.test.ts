// Spans of sub-agents and prompty children in both modes: `agentic` children are runs of their
// own (invoke_agent), `single` children one model call (chat); both nest under the calling tool.
// No context manager is registered here: nesting must come from the parent run id alone.
import assert from "node:assert/strict";
import { join } from "node:path";
import { beforeEach, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { SpanStatusCode } from "@opentelemetry/api";
import { agentTool } from "../../src/agents/index.js";
import { AgentLoopError } from "../../src/errors.js";
import { Agent } from "../../src/loop/agent.js";
import type { Model, ModelEvent } from "../../src/model/model.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { type PromptyAgent, startAgent } from "../../src/prompty/index.js";
import { otelInstrumentation } from "../../src/tracing/index.js";
import { memoryTracer, sortedTree, spanNamed, spanTree } from "./helpers.js";

const { exporter, tracer } = memoryTracer();
beforeEach(() => exporter.reset());

const parentPrompty = join(fileURLToPath(new URL("../prompty/fixtures", import.meta.url)), "parent.prompty");
const calls = (...list: Array<{ id: string; name: string; arguments: unknown }>) => JSON.stringify({ tool_calls: list });

describe("prompty children", () => {
  test("a single child is a chat span and an agentic child an invoke_agent span, each under its execute_tool", async () => {
    const scripts: Record<string, string[]> = {
      planner: [
        calls({ id: "s1", name: "summarize", arguments: { text: "Fjords are long." } }, { id: "r1", name: "research", arguments: { topic: "fjords" } }),
        "Go see the fjords.",
      ],
      summarizer: ["Long fjords."],
      researcher: [calls({ id: "l1", name: "lookup", arguments: { query: "longest fjord" } }), "Sognefjord."],
    };
    const model = (agent: PromptyAgent) => new ScriptedModel(scripts[agent.name], { modelId: `${agent.name}-model` });
    const { run } = await startAgent(parentPrompty, { destination: "Norway" }, { lookup: () => "Sognefjord, 205 km", get_weather: () => "n/a" }, {
      model,
      instrumentation: otelInstrumentation({ tracer }),
    });
    const result = await run;
    assert.equal(result.state, "COMPLETED", result.reason);
    const spans = exporter.getFinishedSpans();
    assert.deepEqual(sortedTree(spanTree(spans)), [
      {
        name: "invoke_agent planner",
        children: [
          { name: "chat planner-model", children: [] },
          { name: "chat planner-model", children: [] },
          {
            name: "execute_tool research",
            children: [
              {
                name: "invoke_agent researcher",
                children: [
                  { name: "chat researcher-model", children: [] },
                  { name: "chat researcher-model", children: [] },
                  { name: "execute_tool lookup", children: [] },
                ],
              },
            ],
          },
          { name: "execute_tool summarize", children: [{ name: "chat summarizer-model", children: [] }] },
        ],
      },
    ]);
    assert.equal(new Set(spans.map((span) => span.spanContext().traceId)).size, 1, "one trace");
    const single = spanNamed(spans, "chat summarizer-model");
    assert.equal(single.attributes["gen_ai.agent.name"], "summarizer");
    assert.equal(single.attributes["gen_ai.request.model"], "summarizer-model");
    assert.deepEqual(single.attributes["gen_ai.response.finish_reasons"], ["stop"]);
    assert.ok((single.attributes["gen_ai.usage.output_tokens"] as number) > 0);
  });
});

describe("agentTool single mode", () => {
  test("the one model call is a chat span under the calling tool; a failure marks it ERROR", async () => {
    const instrumentation = otelInstrumentation({ tracer });
    const failing: Model = {
      provider: "test",
      modelId: "broken-model",
      async *stream(): AsyncGenerator<ModelEvent> {
        yield { type: "error", error: new AgentLoopError("rate_limit", "slow down") };
      },
    };
    const summarizer = agentTool(
      { name: "summarizer", instructions: "Summarize.", model: new ScriptedModel(["Short."], { modelId: "summary-model" }), instrumentation },
      { mode: "single" },
    );
    const broken = agentTool({ name: "broken", model: failing, instrumentation }, { mode: "single" });
    const lead = new Agent({
      name: "lead",
      model: new ScriptedModel([
        calls({ id: "a", name: "summarizer", arguments: { task: "Summarize this." } }, { id: "b", name: "broken", arguments: { task: "x" } }),
        "Done.",
      ]),
      tools: [summarizer, broken],
      instrumentation,
    });
    assert.equal((await lead.run("go")).state, "COMPLETED");
    const spans = exporter.getFinishedSpans();
    assert.deepEqual(sortedTree(spanTree(spans)), [
      {
        name: "invoke_agent lead",
        children: [
          { name: "chat scripted", children: [] },
          { name: "chat scripted", children: [] },
          { name: "execute_tool broken", children: [{ name: "chat broken-model", children: [] }] },
          { name: "execute_tool summarizer", children: [{ name: "chat summary-model", children: [] }] },
        ],
      },
    ]);
    const failed = spanNamed(spans, "chat broken-model");
    assert.equal(failed.status.code, SpanStatusCode.ERROR);
    assert.equal(failed.attributes["error.type"], "rate_limit");
    assert.equal(spanNamed(spans, "execute_tool broken").status.code, SpanStatusCode.ERROR);
  });
});
