import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, defineTool, type LoopEvent, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType, waitingTool } from "./helpers.js";

test("abort while the model streams: ABORTED, no hang, the stream stops", async () => {
  const model = new ScriptedModel(["one two three four five six seven eight nine ten eleven twelve"], { chunkDelayMs: 20 });
  const deltas: string[] = [];
  // Aborted from onEvent, as the second delta is emitted: however late a loaded machine runs the
  // chunk timers, nothing the model streams after the abort reaches the events.
  const run = new Agent({ model }).run("go", {
    onEvent: (event) => {
      if (event.type === "text-delta" && deltas.push(event.delta) === 2) run.abort("user pressed stop");
    },
  });
  const iterated: string[] = [];
  for await (const event of run) if (event.type === "text-delta") iterated.push(event.delta);
  const result = await run;
  assert.equal(result.state, "ABORTED");
  assert.equal(result.reason, "aborted: user pressed stop");
  assert.deepEqual(deltas, ["one ", "two "]);
  assert.deepEqual(iterated, deltas);
});

test("abort while tools run: running tools get the signal, every call has a result", async () => {
  const { tool, log } = waitingTool("wait", 10_000);
  const stubborn = defineTool({
    name: "stubborn",
    description: "ignores its signal",
    parameters: { type: "object" },
    execute: () => new Promise(() => undefined),
  });
  const controller = new AbortController();
  const model = new ScriptedModel([calls(["wait", {}, "w"], ["stubborn", {}, "s"]), "never"]);
  const run = new Agent({ model, tools: [tool, stubborn] }).run("go", { signal: controller.signal });
  for await (const event of run) if (event.type === "tool-start" && event.name === "wait") setTimeout(() => controller.abort("shutdown"), 10);
  const result = await run;
  assert.equal(result.state, "ABORTED");
  assert.equal(log[0].aborted, true, "the running tool saw its signal abort");
  const results = result.messages.filter((message): message is ToolResultMessage => message.role === "tool");
  assert.deepEqual(
    results.map((message) => [message.toolCallId, message.isError, message.content]),
    [
      ["w", true, "Cancelled: shutdown"],
      ["s", true, "Cancelled: shutdown"],
    ],
  );
  assert.equal(model.requests.length, 1, "no model call after the abort");
});

test("a signal aborted before the run starts ends it ABORTED at once", async () => {
  const model = new ScriptedModel(["hi"]);
  const result = await new Agent({ model }).run("go", { signal: AbortSignal.abort("too late") });
  assert.equal(result.state, "ABORTED");
  assert.equal(model.requests.length, 0);
});

test("steer() injects a user message after the current wave", async () => {
  const { tool } = waitingTool("wait", 30);
  const model = new ScriptedModel([calls(["wait", {}]), "answer after steering"]);
  const run = new Agent({ model, tools: [tool] }).run("go");
  for await (const event of run) if (event.type === "tool-start") run.steer("also check the spa");
  const result = await run;
  const second = model.requests[1].messages;
  assert.equal(second.at(-2)?.role, "tool");
  assert.deepEqual(second.at(-1), { role: "user", content: "also check the spa" });
  assert.equal(result.text, "answer after steering");
  const events = await eventsOf(run);
  assert.deepEqual(ofType(events, "steering").map((event) => event.content), ["also check the spa"]);
});

test("steering that arrives with the final answer makes the model answer again", async () => {
  const model = new ScriptedModel(["first answer", "second answer"], { chunkDelayMs: 5 });
  const run = new Agent({ model }).run("go");
  for await (const event of run) if (event.type === "text-delta" && event.turn === 1) run.steer("shorter please");
  const result = await run;
  assert.equal(result.text, "second answer");
  assert.equal(result.turns, 2);
});

test("followUp() queues a new input that starts when the current one completes", async () => {
  // One script through the run's inputs (each new input would start it again).
  const model = new ScriptedModel(["first", "second"], { continueAcrossRuns: true });
  const run = new Agent({ model }).run("question one");
  run.followUp("question two");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, "second");
  assert.deepEqual(
    ofType(events, "user-message").map((event) => [event.content, event.followUp]),
    [
      ["question one", false],
      ["question two", true],
    ],
  );
  assert.deepEqual(
    model.requests[1].messages.map((message) => message.role),
    ["user", "assistant", "user"],
  );
});

test("usage is reported per turn and summed per run", async () => {
  const model = new ScriptedModel([calls(["wait", {}]), "done"]);
  const run = new Agent({ model, tools: [waitingTool("wait", 0).tool] }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  const usage = ofType(events, "usage");
  assert.equal(usage.length, 2);
  assert.ok(usage.every((event) => event.usage.totalTokens > 0));
  assert.equal(result.usage.totalTokens, usage[0].usage.totalTokens + usage[1].usage.totalTokens);
  assert.equal(result.usage.inputTokens, usage[0].usage.inputTokens + usage[1].usage.inputTokens);
  assert.deepEqual(usage[1].total, result.usage);
});

test("the events of a full run come in order", async () => {
  const model = new ScriptedModel([calls(["wait", {}, "c1"]), "all done"]);
  const run = new Agent({ model, tools: [waitingTool("wait", 0).tool], instructions: "be brief" }).run("go");
  const types = (await eventsOf(run)).map((event) => event.type);
  assert.deepEqual(types, [
    "run-start",
    "messages-updated", // system + input
    "user-message",
    "turn-start",
    "messages-updated", // + the assistant's tool call
    "usage",
    "turn-end",
    "progress",
    "tool-start",
    "tool-end",
    "messages-updated", // + the tool result
    "turn-start",
    "text-delta",
    "text-delta",
    "messages-updated", // + the answer
    "usage",
    "turn-end",
    "run-end",
  ]);
});

test("a turn that asks for tools is not answer text; the final answer streams word by word", async () => {
  const model = new ScriptedModel([calls(["wait", {}]), "The answer is forty two."]);
  const run = new Agent({ model, tools: [waitingTool("wait", 0).tool] }).run("go");
  const chunks: string[] = [];
  for await (const chunk of run.textStream()) chunks.push(chunk);
  assert.deepEqual(chunks, ["The ", "answer ", "is ", "forty ", "two."]);
  const ends = ofType(await eventsOf(run), "turn-end");
  assert.deepEqual(
    ends.map((event) => [event.toolCalls, event.finishReason.unified]),
    [
      [1, "tool-calls"],
      [0, "stop"],
    ],
  );
});

test("every iterator replays the whole run, and awaiting works before or after", async () => {
  const run = new Agent({ model: new ScriptedModel(["hello there"]) }).run("go");
  const [first, second] = await Promise.all([eventsOf(run), eventsOf(run)]);
  const late = await eventsOf(run);
  assert.deepEqual(first, second);
  assert.deepEqual(first, late);
  assert.equal((await run).text, "hello there");
  assert.equal(run.state, "COMPLETED");
});

test("a model stream that throws (breaking its contract) ends the run FAILED, never rejecting", async () => {
  const broken = {
    provider: "broken",
    modelId: "x",
    // biome-ignore lint/correctness/useYield: the point is to throw before yielding
    async *stream(): AsyncGenerator<never> {
      throw new Error("socket hang up");
    },
  };
  const run = new Agent({ model: broken }).run("go");
  const events: LoopEvent[] = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "FAILED");
  assert.equal(result.reason, "model error (unknown): socket hang up");
  const [error] = ofType(events, "error");
  assert.equal(error.fatal, true);
  assert.equal(events.at(-1)?.type, "run-end");
});

test("a model error event ends the run FAILED with the error's kind", async () => {
  const { AgentLoopError } = await import("../../src/index.js");
  const failing = {
    provider: "p",
    modelId: "m",
    async *stream() {
      yield { type: "error" as const, error: new AgentLoopError("authentication", "Set OPENAI_API_KEY") };
    },
  };
  const result = await new Agent({ model: failing }).run("go");
  assert.equal(result.state, "FAILED");
  assert.equal(result.error?.kind, "authentication");
  assert.equal(result.reason, "model error (authentication): Set OPENAI_API_KEY");
});

test("an observer that fails is reported as a non-fatal error event; the run still completes", async () => {
  const seen: string[] = [];
  const observers = [
    {
      onEvent: (event: LoopEvent) => {
        if (event.type === "turn-start") throw new Error("disk full");
      },
    },
    {
      onEvent: async (event: LoopEvent) => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        seen.push(event.type);
      },
    },
  ];
  const run = new Agent({ model: new ScriptedModel(["hi"]), observers }).run("go");
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.equal(seen.at(-1), "run-end", "observers are flushed before the result resolves");
  const errors = ofType(run.events, "error");
  assert.equal(errors.length, 1);
  assert.equal(errors[0].fatal, false);
  assert.match(errors[0].error.message, /observer failed: disk full/);
});

test("observers get every event in emit order, sync or async, even when one aborts the run from inside onEvent", async () => {
  const entry = JSON.stringify({ tool_calls: [{ name: "wait", arguments: {} }] });
  const sync: string[] = [];
  const slow: string[] = [];
  let run: ReturnType<Agent["run"]> | undefined;
  const observers = [
    {
      onEvent: (event: LoopEvent) => {
        sync.push(event.type);
        // Aborting from inside onEvent: the events the abort leads to still arrive in order.
        if (event.type === "tool-start") run!.abort("stop from an observer");
      },
    },
    {
      onEvent: (event: LoopEvent) => {
        slow.push(event.type);
        // Every third event answers with a promise: the next ones must wait for it.
        if (slow.length % 3 === 0) return new Promise<void>((resolve) => setTimeout(resolve, 2));
        return undefined;
      },
    },
  ];
  run = new Agent({ model: new ScriptedModel([entry, "never"]), tools: [waitingTool("wait", 1000).tool], observers }).run("go");
  const result = await run;
  assert.equal(result.state, "ABORTED");
  const emitted = run.events.map((event) => event.type);
  assert.deepEqual(sync, emitted, "the synchronous observer sees the events in emit order");
  assert.deepEqual(slow, emitted, "an observer that sometimes awaits sees the same order, and all of them before the result");
  assert.equal(sync.at(-1), "run-end");
});

test("bad configuration fails at construction with a message naming the setting", () => {
  const model = new ScriptedModel([]);
  assert.throws(() => new Agent({ model, maxTurns: 0 }), /maxTurns must be a positive integer, got 0/);
  assert.throws(() => new Agent({ model, onLimit: "retry" as never }), /onLimit must be "stop" or "final-answer"/);
  assert.throws(() => new Agent({ model: {} as never }), /model must implement Model/);
  const { tool } = waitingTool("same", 0);
  assert.throws(() => new Agent({ model, tools: [tool, tool] }), /two tools are named "same"/);
});

test("an unknown toolCallMode is refused at construction", () => {
  assert.throws(() => new Agent({ model: new ScriptedModel([]), toolCallMode: "telepathy" as never }), /toolCallMode must be one of auto, native, string, action, plan/);
});

test("text in a turn that calls tools arrives as commentary-delta, never as answer text", async () => {
  const entry = JSON.stringify({ content: "Let me check the calendar.", tool_calls: [{ name: "wait", arguments: {} }] });
  const run = new Agent({ model: new ScriptedModel([entry, "It is free."]), tools: [waitingTool("wait", 0).tool] }).run("go");
  const events = await eventsOf(run);
  assert.equal(ofType(events, "commentary-delta").map((event) => event.delta).join(""), "Let me check the calendar.");
  assert.equal(ofType(events, "text-delta").map((event) => event.delta).join(""), "It is free.");
});

test('toolCallMode "auto" falls back to string mode once and remembers it for the agent\'s next runs', async () => {
  const { AgentLoopError } = await import("../../src/index.js");
  const nativeRequests: number[] = [];
  let calls = 0;
  const noTools = {
    provider: "local",
    modelId: "tiny",
    async *stream(request: import("../../src/index.js").ModelRequest) {
      calls++;
      if (request.tools?.length) {
        nativeRequests.push(calls);
        yield { type: "error" as const, error: new AgentLoopError("invalid_request", "this model does not support tools", { status: 400 }) };
        return;
      }
      yield { type: "text-delta" as const, id: "t", delta: "plain answer" };
      yield { type: "finish" as const, reason: { unified: "stop" as const } };
    },
  };
  const agent = new Agent({ model: noTools, tools: [waitingTool("wait", 0).tool], toolCallMode: "auto" });
  assert.equal((await agent.run("one")).text, "plain answer");
  assert.equal((await agent.run("two")).text, "plain answer");
  assert.deepEqual(nativeRequests, [1], "only the first request tried native tools");
});

test("onEvent receives every event synchronously, in order; a throwing listener is a non-fatal error event", async () => {
  const seen: string[] = [];
  const run = new Agent({ model: new ScriptedModel([calls(["wait", {}]), "done"]), tools: [waitingTool("wait", 0).tool] }).run("go", {
    onEvent: (event) => {
      seen.push(event.type);
      if (event.type === "tool-start") throw new Error("listener bug");
    },
  });
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(seen, run.events.filter((event) => event.type !== "error").map((event) => event.type));
  const [error] = ofType(run.events, "error");
  assert.equal(error.fatal, false);
  assert.match(error.error.message, /onEvent failed: listener bug/);
});
