// The SSE serializers write a text delta without serializing an object: the same bytes as the
// object's JSON, whatever the delta holds, and every other part serialized whole.
import assert from "node:assert/strict";
import { test } from "node:test";
import { agUiSse } from "../../src/ui/ag-ui.js";
import { uiChunkSse } from "../../src/ui/ui-message-stream.js";

const DELTAS = ["plain ", 'a "quoted" \\ back', "line\nbreak\ttab\u0000nul", "emoji 🎉 and \ud800 lone", "</script>", ""];

test("a text delta's fast path is byte for byte the object's JSON, in both protocols", () => {
  for (const delta of DELTAS) {
    const part = { type: "text-delta", id: 'text-"r"-1', delta } as const;
    assert.equal(uiChunkSse(part), `data: ${JSON.stringify(part)}\n\n`);
    const event = { type: "TEXT_MESSAGE_CONTENT", messageId: 'msg-"r"-1', delta } as const;
    assert.equal(agUiSse(event as never), `data: ${JSON.stringify(event)}\n\n`);
  }
});

test("a delta with more fields (a sub-agent's attribution, provider metadata) is serialized whole", () => {
  const part = { type: "text-delta", id: "t", delta: "x", providerMetadata: { a: { b: 1 } } } as const;
  assert.equal(uiChunkSse(part as never), `data: ${JSON.stringify(part)}\n\n`);
  const event = { type: "TEXT_MESSAGE_CONTENT", messageId: "m", delta: "x", subagentRunId: "run_2" };
  assert.equal(agUiSse(event as never), `data: ${JSON.stringify(event)}\n\n`);
  assert.match(agUiSse(event as never), /"subagentRunId":"run_2"/);
});
