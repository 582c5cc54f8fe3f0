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

const user = (content: string) => ({ role: "user" as const, content });
const said = (text: string) => ({ role: "assistant" as const, content: [{ type: "text" as const, text }] });
const textOf = (response: Awaited<ReturnType<typeof generate>>) => response.message.content.map((part) => (part.type === "text" ? part.text : `[${part.type}]`)).join("");

test("the answer comes from the conversation: the entry after the assistant turns of the current input; once exhausted, [no more mock responses]", async () => {
  const model = new ScriptedModel(["first", "second"]);
  assert.equal(textOf(await generate(model, { messages: [user("x")] })), "first");
  // The same conversation gets the same answer (a retry, a replica, a recovered run).
  assert.equal(textOf(await generate(model, { messages: [user("x")] })), "first");
  assert.equal(textOf(await generate(model, { messages: [user("x"), said("first"), user("steer")], inputStart: 0 })), "second");
  // Without inputStart, the last user message starts the input.
  assert.equal(textOf(await generate(model, { messages: [user("x"), said("first"), user("again")] })), "first");
  assert.equal(textOf(await generate(model, { messages: [user("x"), said("first"), said("second")] })), NO_MORE_MOCK_RESPONSES);
  assert.equal(model.requests.length, 5);
});

test("each input starts the script again; with continueAcrossRuns each new input goes on where the previous one stopped", async () => {
  const perInput = new ScriptedModel(["a", "b"]);
  const history = [user("one"), said("a")];
  assert.equal(textOf(await generate(perInput, { messages: [...history, user("two")], inputStart: 2 })), "a");

  const chat = new ScriptedModel(["a", "b", "c"], { continueAcrossRuns: true });
  assert.equal(textOf(await generate(chat, { messages: [user("one")], inputStart: 0 })), "a");
  // A chat without memory: the next run does not see the first turn.
  assert.equal(textOf(await generate(chat, { messages: [user("two")], inputStart: 0 })), "b");
  // The same input's next turn (a tool round or a resumed run) goes on from where the input started.
  assert.equal(textOf(await generate(chat, { messages: [user("two"), said("b"), user("steer")], inputStart: 0 })), "c");
  assert.equal(chat.remaining, 0);
  // A new process recovering an input with one turn answers its second entry.
  const recovered = new ScriptedModel(["a", "b", "c"], { continueAcrossRuns: true });
  assert.equal(textOf(await generate(recovered, { messages: [user("one"), said("a")], inputStart: 0 })), "b");
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
    await generate(model, { messages: [{ role: "user", content: String(index) }] });
  }
  assert.equal(model.requests.length, MAX_RECORDED_REQUESTS);
  assert.equal(model.requests.at(-1)?.messages[0].content, String(MAX_RECORDED_REQUESTS + 4));
});
