// historyFromEvents on logs other writers leave (KAOS writers without agentloop's metadata, events
// built by hand): what the mutation run of history.ts found no test for.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { historyFromEvents, INTERRUPTED_TOOL_RESULT, type MemoryEvent } from "../../src/memory/index.js";

let seq = 0;
function event(event_type: string, content: unknown, metadata: Record<string, unknown> = {}): MemoryEvent {
  seq++;
  return { event_id: `e${seq}`, session_id: "s", seq, timestamp: new Date(1_700_000_000_000 + seq).toISOString(), event_type, content, metadata };
}

describe("historyFromEvents: logs of other writers", () => {
  it("reads a missing content as empty text, not as undefined", () => {
    const events = [event("user_message", undefined), event("agent_response", undefined), event("user_message", "next")];
    assert.deepEqual(historyFromEvents(events), [
      { role: "user", content: "" },
      { role: "user", content: "next" },
    ]);
  });

  it("takes the tool name from the metadata when the content does not name it", () => {
    const call = event("tool_call", { query: "weather" }, { tool_call_id: "c1", tool_name: "search" });
    const history = historyFromEvents([event("user_message", "go"), call, event("tool_result", "sunny", { tool_call_id: "c1" })]);
    assert.deepEqual(history.slice(1), [
      { role: "assistant", content: [{ type: "tool-call", id: "c1", name: "search", arguments: "{}" }] },
      { role: "tool", toolCallId: "c1", toolName: "search", content: "sunny" },
    ]);
  });

  it("names a call whose content is null and whose metadata has no name unknown_tool", () => {
    const history = historyFromEvents([event("user_message", "go"), event("tool_call", null, { tool_call_id: "c1" })]);
    assert.deepEqual(history.slice(1), [
      { role: "assistant", content: [{ type: "tool-call", id: "c1", name: "unknown_tool", arguments: "{}" }] },
      { role: "tool", toolCallId: "c1", toolName: "unknown_tool", content: INTERRUPTED_TOOL_RESULT, isError: true },
    ]);
  });

  it("takes a tool call's arguments from its arguments even when its content also has a task (only a delegation's task is its arguments)", () => {
    const call = event("tool_call", { tool: "plan", arguments: { steps: 2 }, task: "not the arguments" }, { tool_call_id: "c1" });
    const delegation = event("delegation_request", { agent: "writer", task: "draft", arguments: { ignored: true } }, { tool_call_id: "d1" });
    const history = historyFromEvents([event("user_message", "go"), call, delegation]);
    assert.deepEqual(
      history.filter((message) => message.role === "assistant").map((message) => message.content),
      [
        [{ type: "tool-call", id: "c1", name: "plan", arguments: '{"steps":2}' }],
        [{ type: "tool-call", id: "d1", name: "delegate_to_writer", arguments: '{"task":"draft"}' }],
      ],
    );
  });
});
