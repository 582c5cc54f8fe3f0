// The context window (src/loop/context.ts) against the survivors of its first mutation run: the
// config's accepted values, what a summarizer model is sent (the transcript's text, clipped) and what
// its answer becomes, the reserve of each strategy, the measure from the provider's reports, the
// units removed (exchanges, tool rounds), a marker that grows with what was removed.
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  Agent,
  AgentLoopError,
  type AgentConfig,
  type AssistantMessage,
  defineTool,
  type Message,
  type Model,
  type ModelEvent,
  type ModelRequest,
  ScriptedModel,
} from "../../src/index.js";
import { byLastResult, calls, eventsOf, ofType } from "./helpers.js";


const textOf = (message: Message) => (typeof message.content === "string" ? message.content : JSON.stringify(message.content));
const echo = defineTool({ name: "echo", description: "", parameters: { type: "object", properties: { n: {} } }, execute: ({ n }) => `result ${String(n)}` });

test("context config: the accepted values pass, a null context or summarizer and non-integer budgets are refused by name", () => {
  const model = new ScriptedModel(["ok"]);
  const make = (context: unknown) => new Agent({ model, context: context as AgentConfig["context"] });
  for (const context of [
    { maxTokens: 1 },
    { maxTokens: 10, strategy: "trim" },
    { maxTokens: 10, strategy: "summarize" },
    { maxTokens: 10, markerRole: "user" },
    { maxTokens: 10, markerRole: "system" },
    { maxTokens: 10, summarizer: model },
    { maxTokens: 10, summarizer: () => "s" },
  ]) {
    assert.doesNotThrow(() => make(context), JSON.stringify(context));
  }
  assert.throws(() => make(null), /context must be an object like \{ maxTokens: 100000 \}, got null/);
  assert.throws(() => make({ maxTokens: 1.5 }), /context\.maxTokens must be a positive integer, got 1\.5/);
  assert.throws(() => make({ maxTokens: "10" }), /context\.maxTokens must be a positive integer, got "10"/);
  assert.throws(() => make({ maxTokens: 10, summarizer: null }), /context\.summarizer must be a Model or a function/);
});

const conversation: Message[] = [
  { role: "user", content: "plain question" },
  { role: "assistant", content: [{ type: "text", text: "" }, { type: "reasoning", text: "hidden" } as never, { type: "text", text: "first answer" }] },
  {
    role: "user",
    content: [
      { type: "text", text: "look at " },
      { type: "image", data: "AAAA", mediaType: "image/png" },
    ],
  },
  { role: "assistant", content: [{ type: "tool-call", id: "k1", name: "lookup", arguments: '{"q":"x"}' }] },
  {
    role: "tool",
    toolCallId: "k1",
    toolName: "lookup",
    content: [
      { type: "text", text: "found " },
      { type: "image", data: "AAAA", mediaType: "image/png" },
    ],
  },
  { role: "assistant", content: [{ type: "text", text: "x".repeat(2001) }] },
  { role: "user", content: "y".repeat(2000) },
  { role: "tool", toolCallId: "zz", toolName: "orphan", content: "plain result" },
];

test("a summarizer model is sent the removed messages as text, clipped at 2000 characters; its text parts, trimmed, are the summary", async () => {
  const summarizer = new ScriptedModel(["  the summary  "]);
  const model = new ScriptedModel(["ok"]);
  const run = new Agent({ model, context: { maxTokens: 2, strategy: "summarize", summarizer, useReportedUsage: false, estimator: () => 1 } }).run("now", { history: conversation });
  const events = await eventsOf(run);
  assert.equal((await run).state, "COMPLETED");
  const request = summarizer.requests[0]!;
  assert.deepEqual(request.options, { maxOutputTokens: 1000 });
  assert.deepEqual(request.messages[0], {
    role: "system",
    content:
      "Summarize the conversation below for an assistant that will continue it without seeing it: keep facts, decisions, tool results and open questions. Answer with the summary only.",
  });
  assert.deepEqual(request.messages[1], {
    role: "user",
    content: [
      "User: plain question",
      "Assistant: first answer",
      "User: look at [image]",
      'Assistant called lookup({"q":"x"})',
      "Tool lookup returned: found [image]",
      `Assistant: ${"x".repeat(2000)}…`,
      `User: ${"y".repeat(2000)}`,
      "Tool orphan returned: plain result",
    ].join("\n"),
  });
  const [trimmed] = ofType(events, "context-trimmed");
  assert.equal(trimmed!.summary, "the summary");
  assert.equal(
    textOf(model.requests[0]!.messages[0]!),
    `[agentloop] ${conversation.length} earlier messages were left out to fit the context budget. Summary of them:\nthe summary`,
  );
});

/** A model whose every answer is the given events (a summarizer answering with reasoning, or nothing). */
function answering(events: ModelEvent[]): Model {
  return {
    provider: "fixed",
    modelId: "fixed-1",
    async *stream(_request: ModelRequest) {
      yield* events;
    },
  };
}

test("a summary leaves out the summarizer's reasoning; an empty summary is a failure the event names", async () => {
  const finish: ModelEvent = { type: "finish", reason: { unified: "stop" }, usage: { inputTokens: 1, outputTokens: 1 } as never };
  const reasoned = answering([
    { type: "reasoning-start", id: "r" },
    { type: "reasoning-delta", id: "r", delta: "thinking" },
    { type: "reasoning-end", id: "r" },
    { type: "text-start", id: "t" },
    { type: "text-delta", id: "t", delta: "short" },
    { type: "text-end", id: "t" },
    finish,
  ]);
  const empty = answering([{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "   " }, { type: "text-end", id: "t" }, finish]);
  const history = conversation.slice(0, 2);
  const results: Array<{ summary?: string; summaryError?: string }> = [];
  for (const summarizer of [reasoned, empty]) {
    const run = new Agent({ model: new ScriptedModel(["ok"]), context: { maxTokens: 2, strategy: "summarize", summarizer, useReportedUsage: false, estimator: () => 1 } }).run("now", {
      history,
    });
    const [trimmed] = ofType(await eventsOf(run), "context-trimmed");
    results.push({ summary: trimmed!.summary, summaryError: trimmed!.summaryError });
  }
  assert.deepEqual(results, [{ summary: "short", summaryError: undefined }, { summary: undefined, summaryError: "the summarizer returned an empty summary" }]);
});

test("a plain trim's event has no summary", async () => {
  const model = new ScriptedModel(["ok"]);
  const run = new Agent({ model, context: { maxTokens: 2, useReportedUsage: false, estimator: () => 1 } }).run("now", { history: conversation.slice(0, 2) });
  const [trimmed] = ofType(await eventsOf(run), "context-trimmed");
  assert.ok(trimmed);
  assert.equal("summary" in trimmed, false);
  assert.equal("summaryError" in trimmed, false);
});

test("the default reserve: a tenth of the budget (at most 1000) for a summary, 40 for a marker", async () => {
  // Ten old messages of 10 each and the input of 10: 110 against a budget of 100.
  const history: Message[] = Array.from({ length: 10 }, (_, index) =>
    index % 2 === 0 ? { role: "user", content: `q${index}` } : { role: "assistant", content: [{ type: "text", text: `a${index}` }] },
  );
  const removed = async (context: NonNullable<AgentConfig["context"]>) => {
    const run = new Agent({ model: new ScriptedModel(["ok"]), context: { useReportedUsage: false, estimator: () => 10, ...context } }).run("now", { history });
    return ofType(await eventsOf(run), "context-trimmed")[0]?.removedIndexes;
  };
  // summarize: down to 100 - 10 = 90 → one exchange; trim: down to 60 → three exchanges.
  assert.deepEqual(await removed({ maxTokens: 100, strategy: "summarize", summarizer: () => "s" }), [0, 1]);
  assert.deepEqual(await removed({ maxTokens: 100 }), [0, 1, 2, 3, 4, 5]);
  // A budget of 20000: the reserve is 1000, not 2000 (messages of 2000 each, 11 of them: 22000).
  const big = async (strategy: "trim" | "summarize") => {
    const run = new Agent({ model: new ScriptedModel(["ok"]), context: { maxTokens: 20_000, strategy, summarizer: () => "s", useReportedUsage: false, estimator: () => 2000 } }).run("now", { history });
    return ofType(await eventsOf(run), "context-trimmed")[0]?.removedIndexes;
  };
  assert.deepEqual(await big("summarize"), [0, 1]);
});

test("a request exactly at the budget is sent whole; over it with nothing removable, sent whole without an event", async () => {
  const history = conversation.slice(0, 2);
  const exact = new ScriptedModel(["ok"]);
  const run = new Agent({ model: exact, context: { maxTokens: 3, useReportedUsage: false, estimator: () => 1 } }).run("now", { history });
  assert.deepEqual(ofType(await eventsOf(run), "context-trimmed"), []);
  assert.equal(exact.requests[0]!.messages.length, 3);
  const alone = new ScriptedModel(["ok"]);
  const lone = new Agent({ model: alone, context: { maxTokens: 1, useReportedUsage: false, estimator: () => 5 } }).run("now");
  assert.deepEqual(ofType(await eventsOf(lone), "context-trimmed"), []);
  assert.equal(alone.requests[0]!.messages.length, 1);
});

test("an exchange goes whole (a question and its answer); within the input a tool round goes whole, one at a time", async () => {
  // Questions weigh 5, answers 1: removing the first question alone would fit, but its answer goes with it.
  const history: Message[] = [
    { role: "user", content: "q1" },
    { role: "assistant", content: [{ type: "text", text: "a1" }] },
    { role: "user", content: "q2" },
    { role: "assistant", content: [{ type: "text", text: "a2" }] },
  ];
  const weights = (message: Message) => (message.role === "user" ? 5 : 1);
  const run = new Agent({ model: new ScriptedModel(["ok"]), context: { maxTokens: 12, reserveTokens: 0, useReportedUsage: false, estimator: weights } }).run("now", { history });
  assert.deepEqual(ofType(await eventsOf(run), "context-trimmed")[0]?.removedIndexes, [0, 1]);

  // Three tool rounds in the input; a call weighs 5, a result 1, the tool's definition 22 (measured
  // before any report): the fourth request (19 + 22) is over 36 by one round, which goes with its
  // result although the call alone would do.
  const heavyCalls = (message: Message) => (message.role === "assistant" ? 5 : 1);
  const model = byLastResult([calls(["echo", { n: 1 }, "c1"]), calls(["echo", { n: 2 }, "c2"]), calls(["echo", { n: 3 }, "c3"]), "done"]);
  const rounds = new Agent({ model, tools: [echo], context: { maxTokens: 36, reserveTokens: 0, useReportedUsage: false, estimator: heavyCalls } }).run("go");
  const events = await eventsOf(rounds);
  assert.equal((await rounds).state, "COMPLETED");
  assert.deepEqual(
    ofType(events, "context-trimmed").map((event) => [event.removedIndexes, event.tokensBefore]),
    [[[1, 2], 41]],
  );
});

test("removed indexes are in transcript order when a result stood apart from its call", async () => {
  const interleaved: Message[] = [
    { role: "user", content: "q1" },
    { role: "assistant", content: [{ type: "tool-call", id: "h1", name: "echo", arguments: "{}" }] },
    { role: "user", content: "a note" },
    { role: "tool", toolCallId: "h1", toolName: "echo", content: "late result" },
    { role: "assistant", content: [{ type: "text", text: "a1" }] },
  ];
  const run = new Agent({ model: new ScriptedModel(["ok"]), tools: [echo], context: { maxTokens: 2, reserveTokens: 0, useReportedUsage: false, estimator: () => 1 } }).run("now", {
    history: interleaved,
  });
  assert.deepEqual(ofType(await eventsOf(run), "context-trimmed")[0]?.removedIndexes, [0, 1, 2, 3, 4]);
});

test("a marker counts what is removed now, not what was removed the first time; a summary grows from the last one with only the new messages", async () => {
  const model = byLastResult([calls(["echo", { n: 1 }, "c1"]), calls(["echo", { n: 2 }, "c2"]), calls(["echo", { n: 3 }, "c3"]), "done"]);
  const seen: string[] = [];
  const run = new Agent({ model, tools: [echo], context: { maxTokens: 6, reserveTokens: 0, useReportedUsage: false, estimator: () => 1 } }).run("go");
  await eventsOf(run);
  for (const request of model.requests) {
    const marker = request.messages.find((message) => message.role === "user" && textOf(message).startsWith("[agentloop]"));
    if (marker) seen.push(textOf(marker));
  }
  assert.deepEqual(seen, [
    "[agentloop] 2 earlier messages were left out to fit the context budget.",
    "[agentloop] 4 earlier messages were left out to fit the context budget.",
  ]);

  const summarizer = new ScriptedModel(["first summary", "second summary"]);
  const summarized = byLastResult([calls(["echo", { n: 1 }, "c1"]), calls(["echo", { n: 2 }, "c2"]), calls(["echo", { n: 3 }, "c3"]), "done"]);
  const again = new Agent({
    model: summarized,
    tools: [echo],
    context: { maxTokens: 6, reserveTokens: 0, strategy: "summarize", summarizer, useReportedUsage: false, estimator: () => 1 },
  }).run("go");
  await eventsOf(again);
  assert.equal(summarizer.requests.length, 2);
  assert.deepEqual(
    summarizer.requests.map((request) => textOf(request.messages[1]!)),
    [
      'Assistant called echo({"n":1})\nTool echo returned: result 1',
      'Summary so far:\nfirst summary\n\nMore of the conversation:\nAssistant called echo({"n":2})\nTool echo returned: result 2',
    ],
  );
});

/** A scripted model that reports a fixed number of input tokens for every request. */
function reporting(script: string[], inputTokens: number): ScriptedModel {
  const model = new ScriptedModel(script);
  const stream = model.stream.bind(model);
  model.stream = async function* (request: ModelRequest) {
    for await (const event of stream(request)) {
      if (event.type === "finish") yield { ...event, usage: { inputTokens, outputTokens: 1 } as never };
      else if (event.type !== "usage") yield event;
    }
  };
  return model;
}

test("after a report, a request is measured as the reported tokens plus what was added minus what is no longer sent", async () => {
  const history: Message[] = [
    { role: "user", content: "q1" },
    { role: "assistant", content: [{ type: "text", text: "a1" }] },
    { role: "user", content: "q2" },
    { role: "assistant", content: [{ type: "text", text: "a2" }] },
  ];
  const script = [calls(["echo", { n: 1 }, "c1"]), "done"];
  // First request: 5 messages of 10 (estimated, no report yet) → 50 + the tool definitions: under 515.
  // Second: the report's 500 + the call and its result (20) = 520: the oldest exchange goes → 500 + the marker.
  for (const useReportedUsage of [undefined, true]) {
    const model = reporting(script, 500);
    const run = new Agent({ model, tools: [echo], context: { maxTokens: 515, reserveTokens: 0, estimator: () => 10, ...(useReportedUsage ? { useReportedUsage } : {}) } }).run("now", { history });
    const events = await eventsOf(run);
    assert.equal((await run).state, "COMPLETED");
    const trimmed = ofType(events, "context-trimmed");
    assert.equal(trimmed.length, 1);
    const { removedIndexes, tokensBefore, tokensAfter, turn } = trimmed[0]!;
    assert.deepEqual({ removedIndexes, tokensBefore, tokensAfter, turn }, { removedIndexes: [0, 1], tokensBefore: 520, tokensAfter: 510, turn: 2 }, `useReportedUsage ${useReportedUsage}`);
  }

  // The same run measuring by the estimator alone: 70, nothing removed.
  const estimated = reporting(script, 500);
  const plain = new Agent({ model: estimated, tools: [echo], context: { maxTokens: 515, reserveTokens: 0, useReportedUsage: false, estimator: () => 10 } }).run("now", { history });
  assert.deepEqual(ofType(await eventsOf(plain), "context-trimmed"), []);

  // A report of 0 tokens is no report: estimates go on (the second request is trimmed again; measured
  // from a report of 0 it would be 20).
  const zero = reporting(script, 0);
  const none = new Agent({ model: zero, tools: [echo], context: { maxTokens: 60, reserveTokens: 0, estimator: () => 10 } }).run("now", { history });
  assert.deepEqual(
    ofType(await eventsOf(none), "context-trimmed").map((event) => event.turn),
    [1, 2],
  );
  const last = (estimated.requests.at(-1)!.messages.at(-2) as AssistantMessage).content[0];
  assert.equal((last as { id: string }).id, "c1");
});

test("a provider's context-length refusal when nothing can be removed: the run fails after that one call", async () => {
  const requests: ModelRequest[] = [];
  const refusing: Model = {
    provider: "test",
    modelId: "tiny-window",
    async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      requests.push(request);
      yield { type: "error", error: new AgentLoopError("context_length", "test: maximum context length exceeded", { status: 400 }) };
    },
  };
  const result = await new Agent({ model: refusing }).run("only the input");
  assert.equal(result.state, "FAILED");
  assert.equal(result.error?.kind, "context_length");
  assert.equal(requests.length, 1, "no retry of the same request");
});

test("a context-length refusal where removing one message (replaced by the marker) is enough: that request is retried", async () => {
  const requests: ModelRequest[] = [];
  const refusingOld: Model = {
    provider: "test",
    modelId: "no-old-questions",
    async *stream(request: ModelRequest): AsyncIterable<ModelEvent> {
      requests.push(request);
      if (request.messages.some((message) => message.content === "old question")) {
        yield { type: "error", error: new AgentLoopError("context_length", "test: maximum context length exceeded", { status: 400 }) };
        return;
      }
      yield { type: "text-delta", id: "t", delta: "answered" };
      yield { type: "finish", reason: { unified: "stop" }, usage: { inputTokens: 10, outputTokens: 2 } as never };
    },
  };
  const result = await new Agent({ model: refusingOld }).run("now", { history: [{ role: "user", content: "old question" }] });
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, "answered");
  assert.equal(requests.length, 2);
  assert.equal(requests[1]!.messages.length, requests[0]!.messages.length, "the marker took the question's place");
});
