import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { historyFromEvents, INTERRUPTED_TOOL_RESULT, type MemoryEvent } from "../../src/memory/index.js";
import type { Message } from "../../src/messages.js";

let seq = 0;
function event(event_type: string, content: unknown, metadata: Record<string, unknown> = {}): MemoryEvent {
  seq++;
  return { event_id: `e${seq}`, session_id: "s", seq, timestamp: new Date(1_700_000_000_000 + seq).toISOString(), event_type, content, metadata };
}
const user = (text: string, runId = "r1") => event("user_message", text, { run_id: runId });
const answer = (text: string, runId = "r1") => event("agent_response", text, { run_id: runId });
const call = (id: string, name: string, raw: string, turn = 1, runId = "r1", extra: Record<string, unknown> = {}) =>
  event("tool_call", { tool: name, arguments: JSON.parse(raw) }, { run_id: runId, tool_call_id: id, tool_name: name, raw_arguments: raw, turn, ...extra });
const result = (id: string, name: string, output: string, extra: Record<string, unknown> = {}) =>
  event("tool_result", { tool: name, result: output }, { run_id: "r1", tool_call_id: id, tool_name: name, is_error: false, ...extra });

const assistantCalls = (...calls: Array<[string, string, string]>): Message => ({
  role: "assistant",
  content: calls.map(([id, name, args]) => ({ type: "tool-call" as const, id, name, arguments: args })),
});
const toolResult = (id: string, name: string, content: string, isError = false): Message => ({
  role: "tool",
  toolCallId: id,
  toolName: name,
  content,
  ...(isError ? { isError: true } : {}),
});

describe("historyFromEvents", () => {
  it("rebuilds user and assistant text", () => {
    const events = [event("run_started", { agent: "a" }), user("hi"), answer("hello"), event("run_ended", { state: "COMPLETED" })];
    assert.deepEqual(historyFromEvents(events), [
      { role: "user", content: "hi" },
      { role: "assistant", content: [{ type: "text", text: "hello" }] },
    ]);
  });

  it("groups one turn's calls into one assistant message, results follow in call order with the raw arguments kept", () => {
    const events = [
      user("weather in two cities?"),
      call("c1", "weather", '{"city":  "Paris"}', 1, "r1", { assistant_text: "Let me check." }),
      call("c2", "weather", '{"city":"Oslo"}'),
      result("c2", "weather", "cold"),
      result("c1", "weather", "mild"),
      call("c3", "summarize", "{}", 2),
      result("c3", "summarize", "done"),
      answer("Paris is mild, Oslo is cold."),
    ];
    assert.deepEqual(historyFromEvents(events), [
      { role: "user", content: "weather in two cities?" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me check." },
          { type: "tool-call", id: "c1", name: "weather", arguments: '{"city":  "Paris"}' },
          { type: "tool-call", id: "c2", name: "weather", arguments: '{"city":"Oslo"}' },
        ],
      },
      toolResult("c1", "weather", "mild"),
      toolResult("c2", "weather", "cold"),
      assistantCalls(["c3", "summarize", "{}"]),
      toolResult("c3", "summarize", "done"),
      { role: "assistant", content: [{ type: "text", text: "Paris is mild, Oslo is cold." }] },
    ]);
  });

  it("closes the calls of an interrupted run with an error result", () => {
    assert.equal(INTERRUPTED_TOOL_RESULT, "[interrupted: the run stopped before this tool call finished]");
    const events = [user("first"), answer("one"), user("second", "r2"), call("c1", "slow", '{"n":1}', 1, "r2")];
    assert.deepEqual(historyFromEvents(events), [
      { role: "user", content: "first" },
      { role: "assistant", content: [{ type: "text", text: "one" }] },
      { role: "user", content: "second" },
      assistantCalls(["c1", "slow", '{"n":1}']),
      toolResult("c1", "slow", INTERRUPTED_TOOL_RESULT, true),
    ]);
  });

  it("drops orphaned and duplicate results, and anything before the first user message", () => {
    const events = [
      // The start of the session was trimmed away: a call's result and an answer without their question.
      result("gone", "echo", "x"),
      answer("an answer to a trimmed question"),
      user("hi"),
      call("c1", "echo", "{}"),
      result("c1", "echo", "first"),
      result("c1", "echo", "second"),
      result("nope", "echo", "orphan"),
      answer("ok"),
    ];
    assert.deepEqual(historyFromEvents(events), [
      { role: "user", content: "hi" },
      assistantCalls(["c1", "echo", "{}"]),
      toolResult("c1", "echo", "first"),
      { role: "assistant", content: [{ type: "text", text: "ok" }] },
    ]);
  });

  it("keeps the last N exchanges and never separates a call from its result", () => {
    const events: MemoryEvent[] = [];
    for (let index = 1; index <= 8; index++) {
      events.push(user(`q${index}`), call(`c${index}`, "t", "{}", index), result(`c${index}`, "t", `r${index}`), answer(`a${index}`));
    }
    const history = historyFromEvents(events, { contextLimit: 2 });
    assert.deepEqual(history, [
      { role: "user", content: "q7" },
      assistantCalls(["c7", "t", "{}"]),
      toolResult("c7", "t", "r7"),
      { role: "assistant", content: [{ type: "text", text: "a7" }] },
      { role: "user", content: "q8" },
      assistantCalls(["c8", "t", "{}"]),
      toolResult("c8", "t", "r8"),
      { role: "assistant", content: [{ type: "text", text: "a8" }] },
    ]);
    assert.equal(historyFromEvents(events).filter((message) => message.role === "user").length, 6, "the default is 6 exchanges");
    assert.equal(historyFromEvents(events, { contextLimit: Number.POSITIVE_INFINITY }).length, 32);
    assert.deepEqual(historyFromEvents(events, { contextLimit: 0 }), []);
    assert.throws(() => historyFromEvents(events, { contextLimit: -1 }), /contextLimit must be a non-negative number/);
  });

  it("places steering after the results of the wave it arrived during", () => {
    const events = [user("go"), call("c1", "slow", "{}"), event("steering", "also check the spa", { run_id: "r1" }), result("c1", "slow", "done"), answer("ok")];
    assert.deepEqual(historyFromEvents(events), [
      { role: "user", content: "go" },
      assistantCalls(["c1", "slow", "{}"]),
      toolResult("c1", "slow", "done"),
      { role: "user", content: "also check the spa" },
      { role: "assistant", content: [{ type: "text", text: "ok" }] },
    ]);
  });

  it("turns delegations into delegate_to_ tool calls; uses what the model saw; keeps error flags", () => {
    const events = [
      user("research"),
      event("delegation_request", { agent: "researcher", task: "find" }, { run_id: "r1", tool_call_id: "d1", tool_name: "delegate_to_researcher", turn: 1 }),
      event("delegation_response", { agent: "researcher", response: "found it" }, { run_id: "r1", tool_call_id: "d1", tool_name: "delegate_to_researcher" }),
      call("c2", "big", "{}", 2),
      result("c2", "big", "x".repeat(1000), { model_result: "xxx…[truncated]" }),
      call("c3", "broken", "{}", 3),
      result("c3", "broken", "boom", { is_error: true }),
      event("error", "model failed", { run_id: "r1" }),
      event("task_delegation_received", "a task", {}),
      answer("done"),
    ];
    assert.deepEqual(historyFromEvents(events), [
      { role: "user", content: "research" },
      assistantCalls(["d1", "delegate_to_researcher", '{"task":"find"}']),
      toolResult("d1", "delegate_to_researcher", "found it"),
      assistantCalls(["c2", "big", "{}"]),
      toolResult("c2", "big", "xxx…[truncated]"),
      assistantCalls(["c3", "broken", "{}"]),
      toolResult("c3", "broken", "boom", true),
      { role: "assistant", content: [{ type: "text", text: "done" }] },
    ]);
  });

  it("rebuilds a log written without agentloop's metadata (another KAOS writer): ids, names and arguments from the content", () => {
    const bare = (event_type: string, content: unknown, metadata: Record<string, unknown> = {}) => event(event_type, content, metadata);
    const first = bare("tool_call", { tool: "lookup", arguments: { q: "x" } });
    const second = bare("tool_call", { tool: "raw", arguments: '{"a":1}' }, { tool_call_id: "" });
    const third = bare("tool_call", { agent: "helper" });
    const fourth = bare("delegation_request", { agent: "writer", task: "draft" }, { tool_call_id: "d1" });
    const fifth = bare("tool_call", "not an object", { tool_call_id: "c5", tool_name: "" });
    const sixth = bare("tool_call", { tool: 42, arguments: null }, { tool_call_id: "c6" });
    const events = [
      bare("user_message", { text: "structured" }),
      first,
      bare("tool_result", { result: { rows: [1] } }, { tool_call_id: first.event_id }),
      second,
      bare("tool_result", "plain text", { tool_call_id: second.event_id, is_error: "true" }),
      third,
      bare("tool_result", null, { tool_call_id: third.event_id, is_error: 1 }),
      fourth,
      bare("delegation_response", { other: "shape" }, { tool_call_id: "d1", model_result: 7 }),
      fifth,
      bare("tool_result", { response: null }, { tool_call_id: "c5" }),
      sixth,
      bare("agent_response", null),
      bare("agent_response", ""),
      bare("agent_response", ["a", 1]),
    ];
    assert.deepEqual(historyFromEvents(events), [
      { role: "user", content: '{"text":"structured"}' },
      assistantCalls([first.event_id, "lookup", '{"q":"x"}']),
      toolResult(first.event_id, "lookup", '{"rows":[1]}'),
      assistantCalls([second.event_id, "raw", '{"a":1}']),
      toolResult(second.event_id, "raw", "plain text"),
      assistantCalls([third.event_id, "delegate_to_helper", "{}"]),
      toolResult(third.event_id, "delegate_to_helper", ""),
      assistantCalls(["d1", "delegate_to_writer", '{"task":"draft"}']),
      toolResult("d1", "delegate_to_writer", '{"other":"shape"}'),
      assistantCalls(["c5", "unknown_tool", "{}"]),
      toolResult("c5", "unknown_tool", ""),
      assistantCalls(["c6", "unknown_tool", "{}"]),
      toolResult("c6", "unknown_tool", INTERRUPTED_TOOL_RESULT, true),
      { role: "assistant", content: [{ type: "text", text: '["a",1]' }] },
    ]);
  });

  it("groups calls only of the same run and turn with nothing between; a repeated call counts once", () => {
    const events = [
      user("go"),
      call("c1", "t", "{}", 1, "r1"),
      call("c2", "t", "{}", 1, "r2"),
      call("c3", "t", "{}", 1, "r2"),
      call("c3", "other", '{"again":true}', 1, "r2"),
      event("steering", "wait", { run_id: "r2" }),
      call("c4", "t", "{}", 1, "r2"),
      event("tool_call", { tool: "t", arguments: {} }, { run_id: "r2", tool_call_id: "c5", tool_name: "t" }),
      event("tool_call", { tool: "t", arguments: {} }, { run_id: "r2", tool_call_id: "c6", tool_name: "t" }),
    ];
    const history = historyFromEvents(events);
    const assistants = history.filter((message) => message.role === "assistant").map((message) => (message.content as Array<{ id: string }>).map((part) => part.id));
    assert.deepEqual(assistants, [["c1"], ["c2", "c3"], ["c4"], ["c5"], ["c6"]]);
    assert.equal(history.filter((message) => message.role === "tool").length, 6, "c3 has one interrupted result, not two");
    assert.deepEqual(history[4], toolResult("c2", "t", INTERRUPTED_TOOL_RESULT, true));
  });

  it("counts exchanges from user messages only (steering continues one), and takes a fractional or too large limit as whole", () => {
    const events = [event("steering", "before anything", {}), user("q1"), answer("a1"), user("q2"), event("steering", "more", {}), answer("a2"), user("q3")];
    const texts = (history: Message[]) => history.map((message) => (typeof message.content === "string" ? message.content : (message.content[0] as { text: string }).text));
    assert.deepEqual(texts(historyFromEvents(events, { contextLimit: 2 })), ["q2", "more", "a2", "q3"]);
    assert.deepEqual(texts(historyFromEvents(events, { contextLimit: 1.9 })), ["q3"]);
    assert.deepEqual(texts(historyFromEvents(events, { contextLimit: 0.5 })), []);
    assert.deepEqual(texts(historyFromEvents(events, { contextLimit: 50 })), ["q1", "a1", "q2", "more", "a2", "q3"]);
    assert.throws(() => historyFromEvents(events, { contextLimit: Number.NaN }), /contextLimit must be a non-negative number, got NaN/);
  });

  it("returns nothing for an empty log or one without user messages", () => {
    assert.deepEqual(historyFromEvents([]), []);
    assert.deepEqual(historyFromEvents([answer("orphan answer")]), []);
    assert.deepEqual(historyFromEvents([call("c0", "t", "{}"), result("c0", "t", "r"), user("after")]), [{ role: "user", content: "after" }]);
  });
});
