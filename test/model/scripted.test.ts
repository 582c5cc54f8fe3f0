import assert from "node:assert/strict";
import { test } from "node:test";
import { generate, NO_MORE_MOCK_RESPONSES, parseMockResponses, parseScriptEntry, ScriptedModel } from "../../src/index.js";

test("a script is a JSON array of strings; other JSON is wrapped; invalid JSON is one raw entry", () => {
  assert.deepEqual(parseMockResponses('["a", "b"]'), ["a", "b"]);
  assert.deepEqual(parseMockResponses('"just text"'), ["just text"]);
  assert.deepEqual(parseMockResponses('{"tool_calls": []}'), ['{"tool_calls":[]}']);
  assert.deepEqual(parseMockResponses("Hello! not json"), ["Hello! not json"]);
});

test("an entry with tool_calls becomes calls: string arguments are JSON text, missing ids are generated", async () => {
  const entry = JSON.stringify({ tool_calls: [{ name: "echo", arguments: '{"message":"hi"}' }, { id: "call_9", name: "add", arguments: { a: 1 } }], content: "thinking" });
  assert.equal(parseScriptEntry(entry).toolCalls.length, 2);
  const response = await generate(new ScriptedModel([entry]), { messages: [{ role: "user", content: "x" }] });
  // Tool calls are announced before the content, so the turn is a tool turn from its first chunk.
  const parts = response.message.content;
  assert.equal(parts[0].type === "tool-call" && parts[0].arguments, '{"message":"hi"}');
  assert.ok(parts[0].type === "tool-call" && /^call_/.test(parts[0].id));
  assert.deepEqual(parts[1], { type: "tool-call", id: "call_9", name: "add", arguments: '{"a":1}' });
  assert.deepEqual(parts[2], { type: "text", text: "thinking" });
  assert.equal(response.finishReason.unified, "tool-calls");
});

test("once exhausted the model answers [no more mock responses]; each run restarts the script", async () => {
  const model = new ScriptedModel(["only"]);
  const request = { messages: [{ role: "user" as const, content: "x" }] };
  const first = model.forRun();
  assert.equal((await generate(first, request)).message.content[0].type, "text");
  const exhausted = await generate(first, request);
  assert.deepEqual(exhausted.message.content, [{ type: "text", text: NO_MORE_MOCK_RESPONSES }]);
  const again = await generate(model.forRun(), request);
  assert.deepEqual(again.message.content, [{ type: "text", text: "only" }]);
  assert.equal(model.requests.length, 3, "per-run copies record into the parent");
});

test("text streams in word-sized chunks that join back to the text", async () => {
  const deltas: string[] = [];
  for await (const event of new ScriptedModel(["Hello  brave new\nworld"]).stream({ messages: [] })) {
    if (event.type === "text-delta") deltas.push(event.delta);
  }
  assert.deepEqual(deltas, ["Hello  ", "brave ", "new\n", "world"]);
});

test("an aborted request ends the stream with an aborted error event, never a throw", async () => {
  const controller = new AbortController();
  const events: string[] = [];
  for await (const event of new ScriptedModel(["a b c d e f"], { chunkDelayMs: 5 }).stream({ messages: [], signal: controller.signal })) {
    events.push(event.type === "error" ? `error:${event.error.kind}` : event.type);
    if (event.type === "text-delta") controller.abort();
  }
  assert.equal(events.at(-1), "error:aborted");
  assert.equal(events.filter((type) => type === "text-delta").length, 1);
});

test("the request log is bounded: a long-lived scripted model keeps only the most recent requests", async () => {
  const { MAX_RECORDED_REQUESTS } = await import("../../src/model/scripted.js");
  const model = new ScriptedModel(["ok"]);
  for (let index = 0; index < MAX_RECORDED_REQUESTS + 5; index++) {
    await generate(model.forRun(), { messages: [{ role: "user", content: String(index) }] });
  }
  assert.equal(model.requests.length, MAX_RECORDED_REQUESTS);
  assert.equal(model.requests.at(-1)?.messages[0].content, String(MAX_RECORDED_REQUESTS + 4));
});
