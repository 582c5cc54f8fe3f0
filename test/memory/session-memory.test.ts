import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { Agent, defineTool, type LoopEvent, type Model, ScriptedModel } from "../../src/index.js";
import {
  type EventQuery,
  InMemoryStore,
  INTERRUPTED_TOOL_RESULT,
  type MemoryEvent,
  type MemoryStore,
  type NewMemoryEvent,
  sessionMemory,
} from "../../src/memory/index.js";
import { openaiChat } from "../../src/providers/openai/index.js";
import { sse, startServer } from "../providers/fixture-server.js";
import { chatFrames } from "../providers/wire-scripts.js";

const STATE_TYPES = new Set(["run_started", "run_ended"]);
const toolCall = (name: string, args: unknown, id: string) => JSON.stringify({ tool_calls: [{ id, name, arguments: args }] });

const echo = defineTool({
  name: "echo",
  description: "echoes its text",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  execute: (args: { text: string }) => `echo: ${args.text}`,
});

async function waitFor<T>(check: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("sessionMemory with the agent loop", () => {
  it("records user_message, tool_call, tool_result, agent_response; the next run gets the conversation", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store);
    const model = new ScriptedModel([toolCall("echo", { text: "hi" }, "call_1"), "The echo said hi."]);
    const agent = new Agent({ name: "helper", model, tools: [echo], memory, instructions: "Be brief." });

    const first = await agent.run("say hi through echo", { sessionId: "chat-1" });
    assert.equal(first.state, "COMPLETED");
    const events = await store.events("chat-1");
    assert.deepEqual(
      events.filter((event) => !STATE_TYPES.has(event.event_type)).map((event) => event.event_type),
      ["user_message", "tool_call", "tool_result", "agent_response"],
    );
    assert.deepEqual(
      events.map((event) => event.event_type),
      ["run_started", "user_message", "tool_call", "tool_result", "agent_response", "run_ended"],
    );
    const [started, userMessage, call, result, response, ended] = events;
    assert.deepEqual(started.content, { agent: "helper", model: "scripted:scripted" });
    assert.equal(userMessage.content, "say hi through echo");
    assert.deepEqual(call.content, { tool: "echo", arguments: { text: "hi" } });
    assert.equal(call.metadata.tool_call_id, "call_1");
    assert.equal(call.metadata.tool_name, "echo");
    assert.equal(call.metadata.raw_arguments, '{"text":"hi"}');
    assert.deepEqual(result.content, { tool: "echo", result: "echo: hi" });
    assert.equal(result.metadata.is_error, false);
    assert.equal(result.metadata.tool_call_id, "call_1");
    assert.equal(response.content, "The echo said hi.");
    assert.deepEqual(ended.content, { state: "COMPLETED", reason: first.reason });
    for (const event of events) assert.equal(event.metadata.run_id, first.runId);

    const second = await agent.run("and again?", { sessionId: "chat-1" });
    assert.equal(second.state, "COMPLETED");
    const secondRunFirstRequest = model.requests[2];
    assert.deepEqual(secondRunFirstRequest.messages, [
      { role: "system", content: "Be brief." },
      { role: "user", content: "say hi through echo" },
      { role: "assistant", content: [{ type: "tool-call", id: "call_1", name: "echo", arguments: '{"text":"hi"}' }] },
      { role: "tool", toolCallId: "call_1", toolName: "echo", content: "echo: hi" },
      { role: "assistant", content: [{ type: "text", text: "The echo said hi." }] },
      { role: "user", content: "and again?" },
    ]);
    assert.deepEqual(
      (await store.listSessions()).map((session) => [session.session_id, session.event_count]),
      [["chat-1", 12]],
    );
  });

  it("writes events as they happen, before the run ends", async () => {
    const store = new InMemoryStore();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = defineTool({
      name: "slow",
      description: "waits",
      parameters: { type: "object" },
      execute: async () => {
        await gate;
        return "finally";
      },
    });
    const agent = new Agent({ model: new ScriptedModel([toolCall("slow", {}, "s1"), "done"]), tools: [slow], memory: sessionMemory(store) });
    const run = agent.run("wait for it", { sessionId: "live" });
    const during = await waitFor(async () => {
      const events = await store.events("live");
      return events.some((event) => event.event_type === "tool_call") ? events : undefined;
    }, "the tool_call event");
    assert.deepEqual(
      during.map((event) => event.event_type),
      ["run_started", "user_message", "tool_call"],
    );
    release();
    assert.equal((await run).state, "COMPLETED");
    assert.equal((await store.events("live")).at(-1)?.event_type, "run_ended");
  });

  it("records delegations, tool errors, steering and aborts", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store);
    const worker = new Agent({ name: "worker", description: "does work", model: new ScriptedModel(["work done"]), memory });
    const failing = defineTool({
      name: "failing",
      description: "always fails",
      parameters: { type: "object" },
      execute: () => {
        throw new Error("boom");
      },
    });
    const model = new ScriptedModel([toolCall("delegate_to_worker", { task: "process data" }, "d1"), toolCall("failing", {}, "f1"), "all done"]);
    const boss = new Agent({ name: "boss", model, tools: [failing], subAgents: [worker], memory });
    const run = boss.run("delegate it", { sessionId: "team" });
    for await (const event of run) if (event.type === "tool-start" && event.name === "failing") run.steer("hurry up");
    assert.equal((await run).state, "COMPLETED");
    const events = await store.events("team", { types: ["delegation_request", "delegation_response", "tool_result", "steering"] });
    assert.deepEqual(
      events.map((event) => event.event_type),
      ["delegation_request", "delegation_response", "tool_result", "steering"],
    );
    assert.deepEqual(events[0].content, { agent: "worker", task: "process data" });
    assert.deepEqual(events[1].content, { agent: "worker", response: "work done" });
    assert.equal(events[3].content, "hurry up");
    assert.equal(events[2].metadata.is_error, true);
    assert.match(String((events[2].content as { result: string }).result), /boom/);
    assert.equal(events[0].metadata.tool_name, "delegate_to_worker");
    // The sub-agent's own run (depth 1) is not mixed into the parent's session.
    assert.deepEqual(
      (await store.events("team", { types: ["user_message"] })).map((event) => event.content),
      ["delegate it"],
    );

    const hanging = defineTool({
      name: "hanging",
      description: "waits for abort",
      parameters: { type: "object" },
      execute: (_args, context) => new Promise((resolve) => context.signal.addEventListener("abort", () => resolve("stopped"))),
    });
    const abortable = new Agent({ model: new ScriptedModel([toolCall("hanging", {}, "h1"), "never"]), tools: [hanging], memory });
    const aborted = abortable.run("start", { sessionId: "stop-me" });
    for await (const event of aborted) if (event.type === "tool-start") aborted.abort("client went away");
    const abortedResult = await aborted;
    assert.equal(abortedResult.state, "ABORTED");
    const log = await store.events("stop-me");
    assert.deepEqual(log.at(-1)?.content, { state: "ABORTED", reason: abortedResult.reason });
    assert.equal(log.some((event) => event.event_type === "agent_response"), false);
  });

  it("keeps every answer: one continued by steering and one followed by a follow-up", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store);
    const steered = new Agent({ model: new ScriptedModel(["first answer", "better answer"], { chunkDelayMs: 1 }), memory });
    const run = steered.run("question", { sessionId: "s" });
    let steeredOnce = false;
    for await (const event of run) {
      if (event.type === "text-delta" && !steeredOnce) {
        steeredOnce = true;
        run.steer("be more precise");
      }
    }
    assert.equal((await run).text, "better answer");
    // One script through the run's inputs (each new input would start it again).
    const followed = new Agent({ model: new ScriptedModel(["answer one", "answer two"], { continueAcrossRuns: true }), memory });
    const second = followed.run("q1", { sessionId: "s" });
    second.followUp("q2");
    assert.equal((await second).text, "answer two");
    const log = await store.events("s", { types: ["user_message", "steering", "agent_response"] });
    assert.deepEqual(
      log.map((event) => [event.event_type, event.content]),
      [
        ["user_message", "question"],
        ["agent_response", "first answer"],
        ["steering", "be more precise"],
        ["agent_response", "better answer"],
        ["user_message", "q1"],
        ["agent_response", "answer one"],
        ["user_message", "q2"],
        ["agent_response", "answer two"],
      ],
    );
    assert.equal(log[6].metadata.follow_up, true);
    const text = (content: string) => [{ type: "text", text: content }];
    assert.deepEqual(await memory.loadHistory("s"), [
      { role: "user", content: "question" },
      { role: "assistant", content: text("first answer") },
      { role: "user", content: "be more precise" },
      { role: "assistant", content: text("better answer") },
      { role: "user", content: "q1" },
      { role: "assistant", content: text("answer one") },
      { role: "user", content: "q2" },
      { role: "assistant", content: text("answer two") },
    ]);
  });

  it("keeps what the model said alongside its tool calls", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store);
    const script = [JSON.stringify({ content: "Let me check.", tool_calls: [{ id: "c1", name: "echo", arguments: { text: "x" } }] }), "Checked."];
    await new Agent({ model: new ScriptedModel(script), tools: [echo], memory }).run("check x", { sessionId: "s" });
    const [call] = await store.events("s", { types: ["tool_call"] });
    assert.equal(call.metadata.assistant_text, "Let me check.");
    assert.deepEqual((await memory.loadHistory("s"))[1], {
      role: "assistant",
      content: [
        { type: "text", text: "Let me check." },
        { type: "tool-call", id: "c1", name: "echo", arguments: '{"text":"x"}' },
      ],
    });
  });

  it("writes in event order even when the caller does not wait, one queue per session; flush waits for all", async () => {
    const inner = new InMemoryStore();
    const delays = [30, 0, 20, 5, 0, 10];
    let calls = 0;
    const slow: MemoryStore = Object.assign(Object.create(inner) as MemoryStore, {
      append: async (id: string, events: readonly NewMemoryEvent[]) => {
        await new Promise((resolve) => setTimeout(resolve, delays[calls++ % delays.length]));
        return inner.append(id, events);
      },
    });
    const memory = sessionMemory(slow);
    const info = (sessionId: string) => ({ runId: `run-${sessionId}`, agentName: "a", model: new ScriptedModel([]), sessionId, depth: 0 });
    for (const sessionId of ["a", "b"]) {
      for (let index = 0; index < 3; index++) {
        void memory.onEvent({ type: "user-message", runId: `run-${sessionId}`, content: `${sessionId}${index}`, followUp: index > 0 }, info(sessionId));
      }
    }
    await memory.flush();
    for (const sessionId of ["a", "b"]) {
      assert.deepEqual(
        (await inner.events(sessionId)).map((event) => event.content),
        [`${sessionId}0`, `${sessionId}1`, `${sessionId}2`],
      );
    }
  });

  it("records nothing for a run without a session id", async () => {
    const store = new InMemoryStore();
    const result = await new Agent({ model: new ScriptedModel(["hi"]), memory: sessionMemory(store) }).run("hello");
    assert.equal(result.state, "COMPLETED");
    assert.deepEqual(await store.listSessions(), []);
  });

  it("loads an interrupted session cleanly: the dangling call gets an interrupted result", async () => {
    const store = new InMemoryStore();
    await store.append("cut", [
      { event_type: "run_started", content: {}, metadata: { run_id: "old" } },
      { event_type: "user_message", content: "start the job", metadata: { run_id: "old" } },
      { event_type: "tool_call", content: { tool: "job", arguments: {} }, metadata: { run_id: "old", tool_call_id: "j1", tool_name: "job", raw_arguments: "{}", turn: 1 } },
    ]);
    const model = new ScriptedModel(["It was interrupted; shall I retry?"]);
    const result = await new Agent({ model, memory: sessionMemory(store) }).run("what happened?", { sessionId: "cut" });
    assert.equal(result.state, "COMPLETED");
    assert.deepEqual(model.requests[0].messages, [
      { role: "user", content: "start the job" },
      { role: "assistant", content: [{ type: "tool-call", id: "j1", name: "job", arguments: "{}" }] },
      { role: "tool", toolCallId: "j1", toolName: "job", content: INTERRUPTED_TOOL_RESULT, isError: true },
      { role: "user", content: "what happened?" },
    ]);
  });

  it("honours the context limit and puts trace ids in metadata", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store, { contextLimit: 1, traceIds: () => ({ traceId: "a".repeat(32), spanId: "b".repeat(16) }) });
    const model = new ScriptedModel(["answer"]);
    const agent = new Agent({ model, memory });
    for (const input of ["one", "two", "three"]) await agent.run(input, { sessionId: "s" });
    assert.deepEqual(model.requests[2].messages, [
      { role: "user", content: "two" },
      { role: "assistant", content: [{ type: "text", text: "answer" }] },
      { role: "user", content: "three" },
    ]);
    const [first] = await store.events("s", { limit: 1 });
    assert.equal(first.metadata.trace_id, "a".repeat(32));
    assert.equal(first.metadata.span_id, "b".repeat(16));
    assert.throws(() => sessionMemory(store, { contextLimit: -2 }), /contextLimit/);
  });

  it("a failing store does not stop the run: the failure is reported as an error event and later writes continue", async () => {
    const inner = new InMemoryStore();
    let failures = 0;
    const flaky: MemoryStore = {
      kind: "flaky",
      createSession: (id, metadata) => inner.createSession(id, metadata),
      getSession: (id) => inner.getSession(id),
      append: async (id: string, events: readonly NewMemoryEvent[]): Promise<MemoryEvent[]> => {
        if (events.some((event) => event.event_type === "user_message")) {
          failures++;
          throw new Error("disk full");
        }
        return inner.append(id, events);
      },
      events: (id: string, query?: EventQuery) => inner.events(id, query),
      latestEvents: (query) => inner.latestEvents(query),
      listSessions: (options) => inner.listSessions(options),
      deleteSession: (id) => inner.deleteSession(id),
      close: () => inner.close(),
    };
    // Each event written at once (no held start), so only the user_message's append fails.
    const run = new Agent({ model: new ScriptedModel(["fine"]), memory: sessionMemory(flaky, { startWriteDelayMs: 0 }) }).run("hello", { sessionId: "s" });
    const seen: LoopEvent[] = [];
    for await (const event of run) seen.push(event);
    const result = await run;
    assert.equal(result.state, "COMPLETED");
    assert.equal(failures, 1);
    const errors = seen.filter((event): event is Extract<LoopEvent, { type: "error" }> => event.type === "error");
    assert.equal(errors.length, 1);
    assert.match(errors[0].error.message, /disk full/);
    assert.deepEqual(
      (await inner.events("s")).map((event) => event.event_type),
      ["run_started", "agent_response", "run_ended"],
    );
  });
});

describe("what sessionMemory writes, in full", () => {
  it("every event of a run that stops for an approval and its resume: type, content and metadata (trace ids, turns, steps, the model call, the checkpoint, the decisions)", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store, { traceIds: () => ({ traceId: "t".repeat(32), spanId: "s".repeat(16) }), startWriteDelayMs: 0 });
    const pay = defineTool({ name: "pay", description: "pays", parameters: { type: "object" }, needsApproval: true, execute: () => "paid" });
    const model = new ScriptedModel([
      JSON.stringify({ content: "Checking.", tool_calls: [{ id: "c1", name: "echo", arguments: { text: "hi" } }] }),
      JSON.stringify({ tool_calls: [{ id: "c2", name: "pay", arguments: {} }] }),
      "Done.",
    ]);
    const agent = new Agent({ name: "helper", model, tools: [echo, pay], memory });
    const first = await agent.run("go", { sessionId: "s", onApproval: "interrupt" });
    assert.equal(first.state, "INTERRUPTED");
    const checkpoint = first.checkpoint!;
    const second = await agent.resume(checkpoint, { decisions: { c2: { approve: false, reason: "no" } }, sessionId: "s" });
    assert.equal(second.text, "Done.");
    const events = await store.events("s");
    // The times of a model call vary: checked apart, then left out.
    const calls: Array<Record<string, unknown>> = [];
    const shown = events.map((event) => {
      const { model_call: call, duration_ms: duration, ...metadata } = event.metadata as Record<string, unknown>;
      if (duration !== undefined) assert.ok(Number.isInteger(duration) && (duration as number) >= 0);
      if (call) {
        const { started_at: startedAt, duration_ms: callDuration, ...rest } = call as Record<string, unknown>;
        assert.ok(Date.parse(startedAt as string) <= Date.parse(event.timestamp), "the call started before its event");
        assert.ok(Number.isFinite(callDuration) && (callDuration as number) >= 0);
        calls.push(rest);
      }
      const content = event.event_type === "approval_requested" && (event.content as { checkpoint?: unknown }).checkpoint ? { ...(event.content as object), checkpoint: "…" } : event.content;
      return [event.event_type, content, metadata];
    });
    const base = (runId: string) => ({ run_id: runId, agent: "helper", trace_id: "t".repeat(32), span_id: "s".repeat(16) });
    const one = base(first.runId);
    const two = base(second.runId);
    assert.deepEqual(shown, [
      ["run_started", { agent: "helper", model: "scripted:scripted" }, { ...one, depth: 0 }],
      ["user_message", "go", one],
      ["tool_call", { tool: "echo", arguments: { text: "hi" } }, { ...one, tool_call_id: "c1", tool_name: "echo", raw_arguments: '{"text":"hi"}', turn: 1, step: 1, assistant_text: "Checking." }],
      ["tool_result", { tool: "echo", result: "echo: hi" }, { ...one, tool_call_id: "c1", tool_name: "echo", is_error: false }],
      ["approval_requested", { tool_call_id: "c2", tool: "pay", arguments: {}, arguments_hash: checkpoint.pending[0].argumentsHash }, { ...one, tool_call_id: "c2", tool_name: "pay" }],
      ["approval_requested", { checkpoint_id: checkpoint.id, pending: JSON.parse(JSON.stringify(checkpoint.pending)), checkpoint: "…" }, { ...one, checkpoint_id: checkpoint.id }],
      ["run_ended", { state: "INTERRUPTED", reason: first.reason }, { ...one, turns: 2, tool_calls: 2, usage: JSON.parse(JSON.stringify(first.usage)) }],
      ["run_started", { agent: "helper", model: "scripted:scripted" }, { ...two, depth: 0 }],
      ["approval_decided", { checkpoint_id: checkpoint.id, decisions: { c2: { approve: false, reason: "no" } } }, { ...two, checkpoint_id: checkpoint.id }],
      // A call rejected before it was prepared: its tool-start carries the raw arguments' text.
      ["tool_call", { tool: "pay", arguments: "{}" }, { ...two, tool_call_id: "c2", tool_name: "pay", raw_arguments: "{}", turn: 0, step: 2 }],
      ["tool_result", { tool: "pay", result: "Rejected: no" }, { ...two, tool_call_id: "c2", tool_name: "pay", is_error: true, error_kind: "rejected" }],
      ["agent_response", "Done.", { ...two, turn: 3 }],
      ["run_ended", { state: "COMPLETED", reason: second.reason }, { ...two, turns: 3, tool_calls: 2, usage: JSON.parse(JSON.stringify(second.usage)) }],
    ]);
    // The model calls: on the first turn's tool call, on the checkpoint (the call that asked for the waiting one), on the answer.
    assert.deepEqual(
      calls.map((call) => [call.turn, call.finish_reason, Object.keys(call.usage as object)]),
      [
        [1, "tool-calls", ["input_tokens", "output_tokens", "total_tokens"]],
        [2, "tool-calls", ["input_tokens", "output_tokens", "total_tokens"]],
        [3, "stop", ["input_tokens", "output_tokens", "total_tokens"]],
      ],
    );
    const usage = calls[2].usage as { input_tokens: number; output_tokens: number; total_tokens: number };
    assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
    assert.ok(usage.output_tokens > 0);
  });
});

describe("what sessionMemory writes for delegations, truncated results, loop warnings and model errors", () => {
  it("a delegation's kind, a truncated result's text as the model saw it, a loop warning's pattern and count", async () => {
    const store = new InMemoryStore();
    const memory = sessionMemory(store, { startWriteDelayMs: 0 });
    const worker = new Agent({ name: "worker", description: "does work", model: new ScriptedModel(["work done"]), memory });
    const big = defineTool({ name: "big", description: "big output", parameters: { type: "object" }, truncation: { maxChars: 10 }, execute: () => "x".repeat(100) });
    const same = toolCall("big", {}, "b");
    const model = new ScriptedModel([toolCall("delegate_to_worker", { task: "t" }, "d1"), same, same, same, same, "ok"]);
    await new Agent({ name: "boss", model, tools: [big], subAgents: [worker], memory, loopDetection: { window: 4 } }).run("go", { sessionId: "s" });
    const events = await store.events("s");
    const [request] = events.filter((event) => event.event_type === "delegation_request");
    assert.equal(request.metadata.kind, "agent");
    assert.deepEqual(request.content, { agent: "worker", task: "t" });
    const results = events.filter((event) => event.event_type === "tool_result");
    assert.equal(results.length, 4);
    for (const result of results) {
      assert.deepEqual(result.content, { tool: "big", result: "x".repeat(100) }, "the full output is kept");
      assert.equal(result.metadata.truncated, true);
      assert.match(String(result.metadata.model_result), /^xxxxx[\s\S]*90 characters removed/);
    }
    const [warning] = events.filter((event) => event.event_type === "loop_warning");
    assert.match(String(warning.content), /Loop detected: the last 4 tool calls repeat the pattern big/);
    assert.deepEqual([warning.metadata.pattern, warning.metadata.warnings], [["big"], 1]);
    // What the model saw is what the next run's history gives it.
    const history = await memory.loadHistory("s");
    const tool = history.find((message) => message.role === "tool" && message.toolName === "big");
    assert.equal(tool?.role === "tool" ? tool.content : undefined, results[0].metadata.model_result);
  });

  it("a model error: its kind, whether it was fatal, and its status and provider only when it has them", async () => {
    const failing = (error: AgentLoopError): Model => ({
      provider: "p",
      modelId: "m",
      async *stream() {
        yield { type: "error", error };
      },
    });
    const store = new InMemoryStore();
    const memory = sessionMemory(store, { startWriteDelayMs: 0 });
    await new Agent({ name: "f", model: failing(new AgentLoopError("rate_limit", "slow down", { status: 429, provider: "acme" })), memory }).run("x", { sessionId: "rate" });
    await new Agent({ name: "f", model: failing(new AgentLoopError("invalid_request", "bad")), memory }).run("x", { sessionId: "bare" });
    const errorOf = async (sessionId: string) => (await store.events(sessionId, { types: ["error"] })).map((event) => [event.content, event.metadata.kind, event.metadata.fatal, event.metadata.status, event.metadata.provider, "model_call" in event.metadata]);
    assert.deepEqual(await errorOf("rate"), [["slow down", "rate_limit", true, 429, "acme", false]]);
    assert.deepEqual(await errorOf("bare"), [["bad", "invalid_request", true, undefined, undefined, false]]);
    const [bare] = await store.events("bare", { types: ["error"] });
    assert.ok(!("status" in bare.metadata) && !("provider" in bare.metadata));
    assert.deepEqual((await store.events("rate", { types: ["run_ended"] }))[0].content, { state: "FAILED", reason: "model error (rate_limit): slow down" });
  });
});

describe("model_call carries the call's cost", () => {
  it("a priced model's call: its usage's cost in dollars on the events it produced; an unpriced model's is \"unknown\"; the scripted model's has none", async () => {
    const usage = { input: 1000, output: 50 };
    const server = await startServer([
      sse(chatFrames({ toolCalls: [{ id: "call_1", name: "echo", arguments: { text: "hi" } }], usage })),
      sse(chatFrames({ text: "Done.", usage })),
      sse(chatFrames({ text: "hi", usage: { input: 5, output: 2 } })),
    ]);
    try {
      const store = new InMemoryStore();
      const events: LoopEvent[] = [];
      const priced = new Agent({ name: "p", model: openaiChat("gpt-4.1", { baseURL: `${server.url}/v1`, apiKey: "k" }), tools: [echo], memory: sessionMemory(store) });
      const run = priced.run("go", { sessionId: "priced" });
      for await (const event of run) events.push(event);
      assert.equal((await run).state, "COMPLETED");
      const costs = events.flatMap((event) => (event.type === "usage" ? [event.usage.cost] : []));
      assert.equal(costs.length, 2);
      assert.ok(costs.every((cost) => typeof cost === "number" && cost > 0), `the model is priced: ${costs}`);
      const logged = await store.events("priced");
      const call = logged.find((event) => event.event_type === "tool_call");
      const answer = logged.find((event) => event.event_type === "agent_response");
      assert.deepEqual(
        [call, answer].map((event) => (event?.metadata.model_call as { turn: number; cost?: unknown } | undefined)?.cost),
        costs,
      );

      const local = new Agent({ name: "l", model: openaiChat("llama3.2", { baseURL: `${server.url}/v1` }), memory: sessionMemory(store) });
      await local.run("hi", { sessionId: "local" });
      const localAnswer = (await store.events("local")).find((event) => event.event_type === "agent_response");
      assert.equal((localAnswer?.metadata.model_call as { cost?: unknown } | undefined)?.cost, "unknown");

      const scripted = new Agent({ name: "s", model: new ScriptedModel(["ok"]), memory: sessionMemory(store) });
      await scripted.run("hi", { sessionId: "scripted" });
      const scriptedAnswer = (await store.events("scripted")).find((event) => event.event_type === "agent_response");
      const record = scriptedAnswer?.metadata.model_call as Record<string, unknown> | undefined;
      assert.ok(record && !("cost" in record), `no pricing, no cost: ${JSON.stringify(record)}`);
    } finally {
      await server.close();
    }
  });
});
