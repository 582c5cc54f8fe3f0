// Review: model streams and wrappers that break their contracts, and settings the Agent should refuse.
import assert from "node:assert/strict";
import { test } from "node:test";
import { sleep } from "../../src/abort.js";
import { Agent, type Model, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import type { Instrumentation } from "../../src/loop/types.js";
import { calls, eventsOf, waitingTool } from "./helpers.js";
import { assertEventOrder, assertRunInvariants, within } from "./review-helpers.js";

test("a model stream that stays open after its finish event does not hold the run", async () => {
  let closed = false;
  const lingering: Model = {
    provider: "lingering",
    modelId: "keep-alive",
    async *stream(request) {
      try {
        yield { type: "text-delta", id: "t", delta: "Done." };
        yield { type: "finish", reason: { unified: "stop", raw: "stop" } };
        // A server that keeps the connection open after the last event (no [DONE], no close).
        await new Promise((resolve) => request.signal?.addEventListener("abort", resolve));
      } finally {
        closed = true;
      }
    },
  };
  const run = new Agent({ model: lingering }).run("go");
  const result = await within(run, 500);
  if (result === "timeout") run.abort("test cleanup");
  assert.notEqual(result, "timeout", "the run waited for the stream to close although it had finished");
  assert.equal(result !== "timeout" && result.text, "Done.");
  await sleep(1);
  assert.ok(closed, "the stream was closed (return()) after its finish");
});

test("a model stream that ends without finish or error (a dropped connection) is not taken as the answer", async () => {
  const dropped: Model = {
    provider: "dropped",
    modelId: "x",
    async *stream() {
      yield { type: "text-start", id: "t" };
      yield { type: "text-delta", id: "t", delta: "The rooms that are free are" };
    },
  };
  const result = await new Agent({ model: dropped }).run("go");
  assert.notEqual(result.state, "COMPLETED", `a cut-off answer was accepted: ${JSON.stringify(result.text)}`);
});

test("a throwing toolCall wrapper does not end the run; sibling calls finish inside it", async () => {
  const failing: Instrumentation = {
    run: (_info, fn) => fn(),
    modelCall: (_info, fn) => fn(),
    toolCall: (info, fn) => (info.toolCallId === "bad" ? Promise.reject(new Error("span exporter down")) : fn()),
  };
  const { tool, log } = waitingTool("wait", 30);
  const model = new ScriptedModel([calls(["wait", { value: 1 }, "bad"], ["wait", { value: 2 }, "good"]), "answer"]);
  const run = new Agent({ model, tools: [tool], instrumentation: failing }).run("go");
  const result = await run;
  await sleep(50); // the sibling would finish now if the run had left it behind
  assertEventOrder(run.events);
  assert.equal(result.state, "COMPLETED", result.reason);
  const results = result.messages.filter((message): message is ToolResultMessage => message.role === "tool");
  assert.deepEqual(
    results.map((message) => message.toolCallId),
    ["bad", "good"],
  );
  assert.equal(results[1].isError, undefined, "the sibling's own result is kept");
  assert.ok(log.every((entry) => entry.endedAt !== undefined), "no tool is left running after the run");
  assertRunInvariants(result, await eventsOf(run));
});

test("bad loop-detection and truncation settings are refused at construction, naming the setting", () => {
  const model = new ScriptedModel([]);
  assert.throws(() => new Agent({ model, loopDetection: { window: 0 } }), /loopDetection\.window/);
  assert.throws(() => new Agent({ model, loopDetection: { maxWarnings: -1 } }), /loopDetection\.maxWarnings/);
  assert.throws(() => new Agent({ model, truncation: { maxChars: -5 } }), /truncation\.maxChars/);
  assert.throws(() => new Agent({ model, truncation: { mode: "middle" as never } }), /truncation\.mode/);
});
