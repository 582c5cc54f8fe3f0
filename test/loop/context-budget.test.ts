import assert from "node:assert/strict";
import { test } from "node:test";
import {
  Agent,
  AgentLoopError,
  type AssistantMessage,
  defineTool,
  type Message,
  type Model,
  type ModelEvent,
  type ModelRequest,
  ScriptedModel,
  textOf,
} from "../../src/index.js";
import { byLastResult, calls, eventsOf, ofType } from "./helpers.js";

const long = (label: string) => `${label} ${"x".repeat(400)}`;

/** An earlier conversation: two plain exchanges, one with a tool call and its result. */
function history(): Message[] {
  return [
    { role: "user", content: long("first question") },
    { role: "assistant", content: [{ type: "text", text: long("first answer") }] },
    { role: "user", content: long("second question") },
    { role: "assistant", content: [{ type: "tool-call", id: "old_1", name: "lookup", arguments: JSON.stringify({ q: long("q") }) }] },
    { role: "tool", toolCallId: "old_1", toolName: "lookup", content: long("old result") },
    { role: "assistant", content: [{ type: "text", text: long("second answer") }] },
    { role: "user", content: long("third question") },
    { role: "assistant", content: [{ type: "text", text: long("third answer") }] },
  ];
}

const lookup = defineTool({ name: "lookup", description: "looks up", parameters: { type: "object", properties: { q: { type: "string" } } }, execute: ({ q }) => `found ${String(q)}` });

/** Every tool call in the request has its result right after its assistant message, and every result its call. */
function assertPairsIntact(messages: readonly Message[]): void {
  const open = new Set<string>();
  for (const message of messages) {
    if (message.role === "assistant") {
      assert.equal(open.size, 0, "a tool call lost its result");
      for (const part of message.content) if (part.type === "tool-call") open.add(part.id);
    } else if (message.role === "tool") {
      assert.ok(open.delete(message.toolCallId), `result ${message.toolCallId} without its call`);
    } else {
      assert.equal(open.size, 0, "a tool call lost its result");
    }
  }
}

test("over budget, the oldest exchanges leave the request, never a call without its result; the transcript keeps everything", async () => {
  const model = new ScriptedModel(["the answer"]);
  const agent = new Agent({ model, instructions: "You are terse.", tools: [lookup], context: { maxTokens: 450 } });
  const run = agent.run("current question", { history: history() });
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  const sent = model.requests[0]!.messages;
  assertPairsIntact(sent);
  assert.deepEqual(sent[0], { role: "system", content: "You are terse." });
  assert.equal(sent.at(-1)!.role, "user");
  assert.equal(textOf(sent.at(-1)!), "current question");
  // The input's index moved with the removal (text protocols count their steps from it).
  assert.equal(model.requests[0]!.inputStart, sent.length - 1);
  const marker = sent[1]!;
  assert.equal(marker.role, "user");
  assert.match(textOf(marker), /^\[agentloop\] \d+ earlier messages were left out to fit the context budget\.$/);
  // Whole exchanges went: the first, and the one with the tool call (with its result).
  assert.ok(!sent.some((message) => message.role === "tool"));
  const [trimmed] = ofType(events, "context-trimmed");
  assert.ok(trimmed);
  assert.equal(trimmed.reason, "budget");
  assert.equal(trimmed.strategy, "trim");
  assert.equal(trimmed.removedMessages, trimmed.removedIndexes.length);
  assert.deepEqual(trimmed.removedIndexes.slice(0, 6), [1, 2, 3, 4, 5, 6]);
  assert.ok(trimmed.tokensBefore > 450 && trimmed.tokensAfter <= 450, `${trimmed.tokensBefore} → ${trimmed.tokensAfter}`);
  assert.equal(trimmed.messages.length, sent.length);
  assert.ok(!("messages" in JSON.parse(JSON.stringify(trimmed))), "the request is not serialized with the event");
  // The transcript is whole: system, 8 history messages, the input, the answer.
  assert.equal(result.messages.length, 11);
  assert.deepEqual(result.messages.slice(1, 9), history());
});

test("within a budget nothing is removed and no event is emitted", async () => {
  const model = new ScriptedModel(["fine"]);
  const run = new Agent({ model, context: { maxTokens: 100_000 } }).run("hi", { history: history() });
  const events = await eventsOf(run);
  assert.equal(ofType(events, "context-trimmed").length, 0);
  assert.equal(model.requests[0]!.messages.length, 9);
});

test("the current input and the current wave are never removed; older rounds of the input can be", async () => {
  const big = long("payload");
  const echo = defineTool({ name: "echo", description: "echo", parameters: { type: "object", properties: { n: {} } }, execute: ({ n }) => `${String(n)} ${big}` });
  // The request loses rounds of the input, so a ScriptedModel (which counts the turns it sees) would
  // answer the wrong entry: this model answers from the last result it sees (c1 → c2 → c3 → done).
  const model = byLastResult([calls(["echo", { n: 1 }, "c1"]), calls(["echo", { n: 2 }, "c2"]), calls(["echo", { n: 3 }, "c3"]), "done"]);
  const run = new Agent({ model, tools: [echo], context: { maxTokens: 300 } }).run(long("the input"));
  const events = await eventsOf(run);
  assert.equal((await run).state, "COMPLETED");
  const last = model.requests.at(-1)!.messages;
  assertPairsIntact(last);
  assert.equal(textOf(last[0]!), long("the input"));
  // The last wave (call c3 and its result) is the end of the request.
  const wave = last.at(-2) as AssistantMessage;
  assert.equal(wave.role, "assistant");
  assert.equal((wave.content[0] as { id: string }).id, "c3");
  assert.equal(last.at(-1)!.role, "tool");
  assert.ok(!last.some((message) => message.role === "tool" && message.toolCallId === "c1"), "the oldest round left the request");
  assert.ok(ofType(events, "context-trimmed").length >= 1);
});

test("no slack: when the current wave alone is over budget, every older round goes but the wave's call stays with its result", async () => {
  const echo = defineTool({ name: "echo", description: "echo", parameters: { type: "object", properties: { n: {} } }, execute: ({ n }) => `result ${String(n)}` });
  // This budget leaves the older round out of the request: a model that answers from the last result.
  const model = byLastResult([calls(["echo", { n: 1 }, "c1"]), calls(["echo", { n: 2 }, "c2"]), "done"]);
  // A tool result weighs 100, any other message 1: the last wave's result alone is twice the budget.
  const estimator = (message: Message) => (message.role === "tool" ? 100 : 1);
  const run = new Agent({ model, tools: [echo], context: { maxTokens: 50, reserveTokens: 0, useReportedUsage: false, estimator } }).run("the input");
  const events = await eventsOf(run);
  assert.equal((await run).state, "COMPLETED");
  const last = model.requests.at(-1)!.messages;
  assertPairsIntact(last);
  assert.deepEqual(
    last.map((message) => message.role),
    ["user", "user", "assistant", "tool"],
    "the input, the marker, then the wave c2 whole",
  );
  assert.equal(textOf(last[0]!), "the input");
  assert.equal(((last[2] as AssistantMessage).content[0] as { id: string }).id, "c2");
  assert.deepEqual(ofType(events, "context-trimmed").at(-1)!.removedIndexes, [1, 2], "only the older round left");
});

test("a result stays with its call when a history puts a message between them", async () => {
  const interleaved: Message[] = [
    { role: "user", content: "q1" },
    { role: "assistant", content: [{ type: "tool-call", id: "h1", name: "lookup", arguments: "{}" }] },
    { role: "user", content: "a note sent while the tool ran" },
    { role: "tool", toolCallId: "h1", toolName: "lookup", content: "the big result" },
    { role: "assistant", content: [{ type: "text", text: "a1" }] },
    { role: "user", content: "q2" },
    { role: "assistant", content: [{ type: "text", text: "a2" }] },
  ];
  const model = new ScriptedModel(["ok"]);
  const estimator = (message: Message) => (message.role === "tool" ? 50 : 10);
  // 120 in all: leaving out the first exchange (q1 and the call) would be enough, but not without the call's result.
  const run = new Agent({ model, tools: [lookup], context: { maxTokens: 105, reserveTokens: 0, useReportedUsage: false, estimator } }).run("now", { history: interleaved });
  const events = await eventsOf(run);
  assert.equal((await run).state, "COMPLETED");
  const sent = model.requests[0]!.messages;
  assertPairsIntact(sent);
  assert.ok(!sent.some((message) => message.role === "tool"), "the result left with its call");
  assert.deepEqual(ofType(events, "context-trimmed")[0]!.removedIndexes, [0, 1, 3]);
  assert.equal(textOf(sent.at(-1)!), "now");
});

test("system messages stay where they are and as they are, never merged or removed", async () => {
  const model = new ScriptedModel(["ok"]);
  const withSystem: Message[] = [...history().slice(0, 2), { role: "system", content: "mid-history note" }, ...history().slice(2)];
  await new Agent({ model, instructions: "top", context: { maxTokens: 300 } }).run("now", { history: withSystem });
  const sent = model.requests[0]!.messages;
  assert.deepEqual(
    sent.filter((message) => message.role === "system"),
    [
      { role: "system", content: "top" },
      { role: "system", content: "mid-history note" },
    ],
  );
});

test("summarize: one summarizer call replaces the removed part with its summary, reused while the same part is removed", async () => {
  const summarizer = new ScriptedModel(["They asked three questions; a lookup was made."]);
  const model = new ScriptedModel([calls(["lookup", { q: "a" }]), "done"]);
  const run = new Agent({ model, tools: [lookup], context: { maxTokens: 500, strategy: "summarize", summarizer } }).run("current", { history: history() });
  const events = await eventsOf(run);
  assert.equal((await run).state, "COMPLETED");
  assert.equal(summarizer.requests.length, 1, "one summary for the same removed part");
  assert.match(textOf(summarizer.requests[0]!.messages[1]!), /User: first question/);
  assert.match(textOf(summarizer.requests[0]!.messages[1]!), /Assistant called lookup/);
  const marker = model.requests[0]!.messages[0]!;
  assert.match(textOf(marker), /Summary of them:\nThey asked three questions; a lookup was made\.$/);
  const trimmed = ofType(events, "context-trimmed");
  assert.equal(trimmed[0]!.summary, "They asked three questions; a lookup was made.");
  assert.equal(trimmed[0]!.strategy, "summarize");
});

test("summarize: a failing summarizer falls back to the plain marker and says why", async () => {
  const failing: Model = {
    provider: "test",
    modelId: "broken",
    async *stream(): AsyncIterable<ModelEvent> {
      yield { type: "error", error: new AgentLoopError("server", "summarizer down") };
    },
  };
  const model = new ScriptedModel(["done"]);
  const run = new Agent({ model, context: { maxTokens: 300, strategy: "summarize", summarizer: failing } }).run("now", { history: history() });
  const events = await eventsOf(run);
  assert.equal((await run).state, "COMPLETED");
  const [trimmed] = ofType(events, "context-trimmed");
  assert.equal(trimmed!.summaryError, "summarizer down");
  assert.match(textOf(model.requests[0]!.messages[0]!), /were left out to fit the context budget\.$/);
});

test("the estimator is replaceable, and a function can summarize", async () => {
  const model = new ScriptedModel(["ok"]);
  const seen: number[] = [];
  await new Agent({
    model,
    context: {
      maxTokens: 5,
      useReportedUsage: false,
      estimator: () => 1, // one unit a message
      strategy: "summarize",
      summarizer: (removed) => {
        seen.push(removed.length);
        return "short";
      },
      marker: ({ summary }) => `[Context summary: ${summary}]`,
    },
  }).run("now", { history: history() });
  const sent = model.requests[0]!.messages;
  assert.equal(textOf(sent[0]!), "[Context summary: short]");
  assert.ok(sent.length <= 5, `${sent.length} messages`);
  assert.deepEqual(seen, [8 - (sent.length - 2)]);
});

/** A model that refuses requests longer than `limit` messages with a context-length error. */

function refusingModel(limit: number, answer = "short enough"): Model & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    provider: "test",
    modelId: "small-window",
    requests,
    async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      requests.push(request);
      if (request.messages.length > limit) {
        yield { type: "error", error: new AgentLoopError("context_length", "test: maximum context length exceeded", { status: 400 }) };
        return;
      }
      yield { type: "text-delta", id: "t", delta: answer };
      yield { type: "finish", reason: { unified: "stop" }, usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12 } };
    },
  };
}

test("a context-length error from the provider triggers one trim and retry", async () => {
  const model = refusingModel(6);
  const run = new Agent({ model }).run("now", { history: history() });
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, "short enough");
  assert.equal(model.requests.length, 2);
  assert.ok(model.requests[1]!.messages.length <= 6);
  const [trimmed] = ofType(events, "context-trimmed");
  assert.equal(trimmed!.reason, "context_length");
  assert.equal(result.messages.length, 10, "the transcript keeps everything");
});

test("when the retry is still too long, the run fails with kind context_length after exactly two calls", async () => {
  const model = refusingModel(0);
  const result = await new Agent({ model }).run("now", { history: history() });
  assert.equal(result.state, "FAILED");
  assert.equal(result.error?.kind, "context_length");
  assert.equal(model.requests.length, 2);
});

test("bad context settings are refused at construction, naming the field", () => {
  const model = new ScriptedModel([]);
  assert.throws(() => new Agent({ model, context: { maxTokens: 0 } }), /context\.maxTokens must be a positive integer, got 0/);
  assert.throws(() => new Agent({ model, context: { maxTokens: 10, strategy: "drop" as "trim" } }), /context\.strategy must be "trim" or "summarize"/);
  assert.throws(() => new Agent({ model, context: { maxTokens: 10, summarizer: {} as Model } }), /context\.summarizer must be a Model or a function/);
  assert.throws(() => new Agent({ model, context: { maxTokens: 10, estimator: 4 as never } }), /context\.estimator must be a function/);
  assert.throws(() => new Agent({ model, context: { maxTokens: 10, markerRole: "tool" as never } }), /context\.markerRole must be "user" or "system", got "tool"/);
  assert.throws(() => new Agent({ model, context: 5000 as never }), /context must be an object like \{ maxTokens: 100000 \}, got 5000/);
});

test("messages-updated follows every change of the transcript, its count ending at the transcript's length", async () => {
  const model = new ScriptedModel([calls(["lookup", { q: "a" }], ["lookup", { q: "b" }]), "done"]);
  const run = new Agent({ model, tools: [lookup], instructions: "sys" }).run("go");
  run.steer("also this");
  const events = await eventsOf(run);
  const result = await run;
  const updates = ofType(events, "messages-updated");
  const counts = updates.map((event) => event.count);
  // system + input; + assistant; + two results and the steering message; + final answer.
  assert.deepEqual(counts, [2, 3, 6, 7]);
  assert.equal(counts.at(-1), result.messages.length);
  assert.equal(updates.at(-1)!.messages, result.messages);
  assert.ok(events.indexOf(updates.at(-1)!) < events.findIndex((event) => event.type === "run-end"));
  assert.deepEqual(Object.keys(JSON.parse(JSON.stringify(updates[0]))), ["type", "runId", "count"]);
});
