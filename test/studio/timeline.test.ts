// The studio's timeline model (studio/src/timeline.ts): a pure function of the stored events.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatCost, overlaps, runsOf, timelineRows } from "../../studio/src/timeline.js";
import type { StoredEvent } from "../../studio/src/wire.js";

let seq = 0;
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms)).toISOString();
function event(type: string, ms: number, content: unknown, metadata: Record<string, unknown>): StoredEvent {
  seq++;
  return { event_id: `e${seq}`, session_id: "s", seq, timestamp: at(ms), event_type: type, content, metadata };
}
const modelCall = (turn: number, start: number, duration: number) => ({ turn, started_at: at(start), duration_ms: duration, usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15 }, finish_reason: turn === 1 ? "tool-calls" : "stop" });

describe("the timeline model", () => {
  it("a wave's calls overlap on rows of their own; model calls carry their tokens; a guardrail denial and a limit are marked", () => {
    const run = { run_id: "r1", agent: "a" };
    const events = [
      event("run_started", 0, { agent: "a", model: "m" }, { ...run, depth: 0 }),
      event("user_message", 0, "go", run),
      event("tool_call", 100, { tool: "x", arguments: { n: 1 } }, { ...run, tool_call_id: "c1", turn: 1, model_call: modelCall(1, 0, 100) }),
      event("tool_call", 101, { tool: "y", arguments: { n: 2 } }, { ...run, tool_call_id: "c2", turn: 1, model_call: modelCall(1, 0, 100) }),
      event("tool_call", 101, { tool: "shell", arguments: {} }, { ...run, tool_call_id: "c3", turn: 1 }),
      event("tool_result", 102, { tool: "shell", result: "Tool denied by guardrail: no" }, { ...run, tool_call_id: "c3", is_error: true, error_kind: "guardrail", duration_ms: 0 }),
      event("tool_result", 400, { tool: "x", result: "full output" }, { ...run, tool_call_id: "c1", duration_ms: 300, model_result: "full…" }),
      event("tool_result", 500, { tool: "y", result: "ok" }, { ...run, tool_call_id: "c2", duration_ms: 399, span_id: "sp" }),
      event("run_ended", 600, { state: "TURN_LIMIT", reason: "5 turns" }, { ...run, usage: { totalTokens: 15 } }),
    ];
    const [view] = runsOf(events);
    const rows = timelineRows(view);
    assert.deepEqual(
      rows.map((row) => `${row.bar.kind}:${row.bar.label}:${row.bar.status}`),
      ["model:model call 1:ok", "tool:x:ok", "tool:y:ok", "tool:shell:denied"],
    );
    const [model, x, y] = rows.map((row) => row.bar);
    assert.deepEqual(model.tokens, { input: 10, output: 5, total: 15 });
    assert.equal(model.cost, undefined, "an unpriced call has no cost");
    assert.equal(x.durationMs, 300);
    assert.equal(x.output, "full output", "the untruncated output");
    assert.equal(x.modelResult, "full…");
    assert.ok(overlaps(x, y), "the two calls of the wave overlap");
    assert.ok(!overlaps(model, y), "the wave starts after its model call");
    assert.deepEqual(
      view.marks.map((mark) => mark.kind),
      ["guardrail", "limit"],
    );
    assert.equal(view.state, "TURN_LIMIT");
  });

  it("a resumed run joins the run that stopped for approval; a sub-agent's run nests under its delegation", () => {
    const events = [
      event("run_started", 0, { agent: "a" }, { run_id: "r1", depth: 0 }),
      event("user_message", 0, "ask", { run_id: "r1" }),
      event("delegation_request", 10, { agent: "helper", task: "t" }, { run_id: "r1", tool_call_id: "d1", turn: 1 }),
      event("run_started", 11, { agent: "helper" }, { run_id: "child", depth: 1, parent_run_id: "r1" }),
      event("tool_call", 12, { tool: "z", arguments: {} }, { run_id: "child", tool_call_id: "cz", turn: 1 }),
      event("tool_result", 20, { tool: "z", result: "r" }, { run_id: "child", tool_call_id: "cz", duration_ms: 8 }),
      event("run_ended", 21, { state: "COMPLETED" }, { run_id: "child" }),
      event("delegation_response", 22, { agent: "helper", response: "done" }, { run_id: "r1", tool_call_id: "d1", duration_ms: 12 }),
      event("approval_requested", 30, { checkpoint_id: "ck1", pending: [] }, { run_id: "r1", checkpoint_id: "ck1", model_call: modelCall(2, 23, 7) }),
      event("run_ended", 30, { state: "INTERRUPTED" }, { run_id: "r1" }),
      event("run_started", 1000, { agent: "a" }, { run_id: "r2", depth: 0 }),
      event("approval_decided", 1000, { checkpoint_id: "ck1", decisions: { w: { approve: true } } }, { run_id: "r2" }),
      event("tool_call", 1001, { tool: "w", arguments: {} }, { run_id: "r2", tool_call_id: "w", turn: 2 }),
      event("tool_result", 1005, { tool: "w", result: "ok" }, { run_id: "r2", tool_call_id: "w", duration_ms: 4 }),
      event("agent_response", 1010, "answer", { run_id: "r2", model_call: modelCall(3, 1006, 4) }),
      event("run_ended", 1010, { state: "COMPLETED" }, { run_id: "r2" }),
    ];
    const runs = runsOf(events);
    assert.equal(runs.length, 1, "one request, one run on screen");
    const [run] = runs;
    assert.equal(run.state, "COMPLETED");
    assert.equal(run.answer, "answer");
    const rows = timelineRows(run);
    assert.deepEqual(
      rows.map((row) => `${row.depth}:${row.bar.label}`),
      ["0:→ helper", "1:z", "0:model call 2", "0:w", "0:model call 3"],
    );
    assert.deepEqual(
      run.marks.map((mark) => mark.label),
      ["stopped for approval", "resumed: w approved"],
    );
  });

  it("a priced model call's bar carries its cost, an unpriced model's is unknown; the run's total cost from run_ended", () => {
    const run = { run_id: "r3", agent: "a" };
    const events = [
      event("run_started", 0, { agent: "a", model: "m" }, { ...run, depth: 0 }),
      event("tool_call", 50, { tool: "x", arguments: {} }, { ...run, tool_call_id: "c1", turn: 1, model_call: { ...modelCall(1, 0, 50), cost: 0.000123 } }),
      event("tool_result", 60, { tool: "x", result: "r" }, { ...run, tool_call_id: "c1", duration_ms: 10 }),
      event("agent_response", 90, "done", { ...run, model_call: { ...modelCall(2, 60, 30), cost: "unknown" } }),
      event("run_ended", 90, { state: "COMPLETED" }, { ...run, usage: { totalTokens: 30, cost: "unknown" } }),
      event("run_started", 100, { agent: "a", model: "m" }, { run_id: "r4", depth: 0 }),
      event("agent_response", 120, "hi", { run_id: "r4", model_call: { ...modelCall(1, 100, 20), cost: "free?" } }),
      event("run_ended", 120, { state: "COMPLETED" }, { run_id: "r4", usage: { totalTokens: 15, cost: 0.0345 } }),
    ];
    const [priced, odd] = runsOf(events);
    const models = priced.bars.filter((bar) => bar.kind === "model");
    assert.deepEqual(
      models.map((bar) => bar.cost),
      [0.000123, "unknown"],
    );
    assert.deepEqual(
      models.map((bar) => formatCost(bar.cost ?? 0)),
      ["$0.000123", "cost unknown"],
    );
    assert.equal(priced.usage?.cost, "unknown");
    assert.equal(odd.bars[0].cost, undefined, "a cost that is neither a number nor \"unknown\" is not shown");
    assert.equal(odd.usage?.cost, 0.0345);
    assert.deepEqual([1.5, 0.0345, 0.00999, 1.23e-7, 0].map(formatCost), ["$1.50", "$0.0345", "$0.00999", "$0.000000123", "$0"]);
  });
});
