// A tool's `durationMs` measures the tool's own execution: the first wave of a process waits for
// the JSON Schema validator (ajv is imported and the schema compiled on first use), and that wait is
// not billed to the tools (issue 11: a trivial tool reported 140–2,670 ms). This file must be the
// first in its process to validate a JSON Schema (agentloop-test: own process).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Agent, defineTool, type Instrumentation, type LoopEvent, ScriptedModel } from "../../src/index.js";
import { validatorReady } from "../../src/tools/validate.js";

const schema = () => ({
  type: "object",
  properties: Object.fromEntries(Array.from({ length: 40 }, (_, index) => [`field_${index}`, { type: "string", pattern: `^[a-z]{0,${index + 1}}$` }])),
});

/** A run of one wave calling `tool` once; what it saw, timed from inside. */
async function timedRun(options: { instrumentation?: boolean; timeoutMs?: number; sleepMs?: number }) {
  const seen = { entered: 0, returned: 0, toolEnd: 0, compilingAtProgress: false, compilingAtSpan: true, spanStarted: 0 };
  const tool = defineTool({
    name: "noop",
    description: "Does nothing",
    parameters: schema(),
    timeoutMs: options.timeoutMs,
    execute: async () => {
      seen.entered = performance.now();
      if (options.sleepMs) await new Promise((resolve) => setTimeout(resolve, options.sleepMs));
      seen.returned = performance.now();
      return "ok";
    },
  });
  const instrumentation: Instrumentation = {
    run: (_info, fn) => fn(),
    modelCall: (_info, fn) => fn(),
    toolCall: (_info, fn) => {
      seen.compilingAtSpan = validatorReady(tool) !== undefined;
      seen.spanStarted = performance.now();
      return fn();
    },
  };
  const model = new ScriptedModel([JSON.stringify({ tool_calls: [{ name: "noop", arguments: { field_0: "a" } }] }), "done"]);
  const agent = new Agent({ model, tools: [tool], instrumentation: options.instrumentation ? instrumentation : undefined });
  let end: Extract<LoopEvent, { type: "tool-end" }> | undefined;
  const result = await agent.run("go", {
    onEvent: (event) => {
      if (event.type === "progress") seen.compilingAtProgress = validatorReady(tool) !== undefined;
      if (event.type === "tool-end") {
        seen.toolEnd = performance.now();
        end = event;
      }
    },
  });
  assert.equal(result.state, "COMPLETED");
  assert.equal(end?.output, "ok");
  return { ...seen, durationMs: end!.durationMs };
}

describe("tool-end durationMs", () => {
  it("the first wave waits for the validator to compile, and that wait is not the tool's duration (plain, instrumented, with a timeout)", async () => {
    // Concurrently, so all three reach their wave before ajv is loaded.
    const runs = await Promise.all([timedRun({}), timedRun({ instrumentation: true }), timedRun({ timeoutMs: 60_000 })]);
    for (const [index, run] of runs.entries()) {
      assert.ok(run.compilingAtProgress, `run ${index}: the validator was still compiling when the wave started`);
      // The duration fits between the tool's entry and the tool-end event, give or take a GC pause or
      // a descheduled moment on a loaded machine (25 ms): the validator's compile it must not include
      // takes 140–265 ms on a fresh process.
      assert.ok(run.durationMs <= run.toolEnd - run.entered + 25, `run ${index}: ${run.durationMs} ms > ${run.toolEnd - run.entered} ms of execution`);
    }
    // The instrumented path opens its span (execute_tool) once the validator is ready.
    assert.equal(runs[1]!.compilingAtSpan, false);
  });

  it("measures the tool's execution: a tool that takes 40 ms reports about 40 ms", async () => {
    for (const options of [{}, { instrumentation: true }, { timeoutMs: 60_000 }]) {
      const run = await timedRun({ ...options, sleepMs: 40 });
      assert.ok(run.durationMs >= run.returned - run.entered - 0.01, `${JSON.stringify(options)}: ${run.durationMs} ms`);
      assert.ok(run.durationMs >= 35, `${JSON.stringify(options)}: ${run.durationMs} ms`);
    }
  });
});
