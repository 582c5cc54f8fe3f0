// The SSE serializers write a text delta without serializing an object: the same bytes as the
// object's JSON, whatever the delta holds, and every other part serialized whole.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, ScriptedModel } from "../../src/index.js";
import { AgUiEncoder, agUiSse } from "../../src/ui/ag-ui.js";
import { UiMessageStreamEncoder, uiChunkSse } from "../../src/ui/ui-message-stream.js";
import { type RecordedRun, record, scenarios } from "./scenarios.js";

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

/** Every object's JSON, as a generic serializer writes it. */
const wholeSse = (parts: readonly object[]) => parts.map((part) => `data: ${JSON.stringify(part)}\n\n`).join("");

test("eventSse (what the server writes) is byte for byte each event's parts serialized whole, in every scenario and both protocols", async () => {
  const tricky = new Agent({ name: "tricky", model: new ScriptedModel([DELTAS.join(" ")]) });
  const runs: RecordedRun[] = [await record(tricky.run("say it"))];
  for (const scenario of scenarios) runs.push(...(await scenario.runs()));
  let fastDeltas = 0;
  for (const run of runs) {
    const [ui, uiWhole] = [new UiMessageStreamEncoder({ messageId: "m1" }), new UiMessageStreamEncoder({ messageId: "m1" })];
    const [agUi, agUiWhole] = [new AgUiEncoder({ threadId: "t", runId: "r" }), new AgUiEncoder({ threadId: "t", runId: "r" })];
    for (const event of run.events) {
      assert.equal(ui.eventSse(event), wholeSse(uiWhole.event(event)), `${event.type} (UI message stream)`);
      assert.equal(agUi.eventSse(event), wholeSse(agUiWhole.event(event)), `${event.type} (AG-UI)`);
      if (event.type === "text-delta") fastDeltas++;
    }
  }
  assert.ok(fastDeltas > 20, "the runs stream text deltas");
});
