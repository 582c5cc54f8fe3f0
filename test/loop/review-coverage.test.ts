// Review: issue 2 bullets that the lead's tests did not prove (or could not fail on), through the public API.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AgentLoopError, Agent, type Model, type ModelEvent, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType, waitingTool } from "./helpers.js";
import { assertRunInvariants } from "./review-helpers.js";

/** A model that plays fixed event lists, one per call. */
function playing(...turns: ModelEvent[][]): Model {
  let index = 0;
  return {
    provider: "played",
    modelId: "events",
    async *stream() {
      for (const event of turns[index++] ?? []) yield event;
    },
  };
}

test("text said in a turn that calls tools is not part of the answer stream (textStream)", async () => {
  const tool = waitingTool("wait", 0).tool;
  const entry = JSON.stringify({ content: "Let me check the calendar.", tool_calls: [{ name: "wait", arguments: {} }] });
  const run = new Agent({ model: new ScriptedModel([entry, "It is free."]), tools: [tool] }).run("go");
  const chunks: string[] = [];
  for await (const chunk of run.textStream()) chunks.push(chunk);
  assert.equal((await run).text, "It is free.");
  assert.equal(chunks.join(""), "It is free.", "the tool turn's preamble was streamed as answer text");
});

test("usage sums input, output, total, reasoning and cached tokens over the turns of a run", async () => {
  const usage = (input: number, output: number, reasoning: number, cached: number) => ({
    inputTokens: input,
    outputTokens: output,
    totalTokens: input + output,
    reasoningTokens: reasoning,
    cachedInputTokens: cached,
  });
  const model = playing(
    [
      { type: "tool-call-end", id: "c1", name: "wait", arguments: "{}" },
      { type: "finish", reason: { unified: "tool-calls", raw: "tool_use" }, usage: usage(100, 20, 5, 40) },
    ],
    [
      { type: "text-delta", id: "t", delta: "ok" },
      { type: "finish", reason: { unified: "stop", raw: "end_turn" }, usage: usage(150, 10, 3, 90) },
    ],
  );
  const run = new Agent({ model, tools: [waitingTool("wait", 0).tool] }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  assert.deepEqual(result.usage, usage(250, 30, 8, 130));
  assert.deepEqual(
    ofType(events, "usage").map((event) => event.usage.reasoningTokens),
    [5, 3],
  );
  assert.deepEqual(ofType(events, "usage").at(-1)?.total, result.usage);
});

test("reasoning streams as reasoning-delta events, stays in the transcript, and is not answer text", async () => {
  const model = playing([
    { type: "reasoning-start", id: "r" },
    { type: "reasoning-delta", id: "r", delta: "The user wants " },
    { type: "reasoning-delta", id: "r", delta: "a greeting." },
    { type: "reasoning-end", id: "r", providerData: { signature: "sig" } },
    { type: "text-delta", id: "t", delta: "Hello!" },
    { type: "finish", reason: { unified: "stop" } },
  ]);
  const run = new Agent({ model }).run("hi");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(ofType(events, "reasoning-delta").map((event) => event.delta).join(""), "The user wants a greeting.");
  const chunks: string[] = [];
  for await (const chunk of run.textStream()) chunks.push(chunk);
  assert.deepEqual(chunks, ["Hello!"]);
  assert.equal(result.text, "Hello!");
  const assistant = result.messages.at(-1);
  assert.equal(assistant?.role, "assistant");
  assert.deepEqual(assistant?.role === "assistant" && assistant.content[0], {
    type: "reasoning",
    text: "The user wants a greeting.",
    providerData: { signature: "sig" },
  });
});

test("maxTurns and maxToolRounds count per input: each follow-up gets its own budget", async () => {
  const { tool } = waitingTool("wait", 0);
  const script = [calls(["wait", { value: 1 }]), "first", calls(["wait", { value: 2 }]), "second"];
  // One script through the run's inputs (each new input would start it again).
  const run = new Agent({ model: new ScriptedModel(script, { continueAcrossRuns: true }), tools: [tool], maxTurns: 2, maxToolRounds: 1 }).run("one");
  run.followUp("two");
  const result = await run;
  assert.equal(result.state, "COMPLETED", result.reason);
  assert.equal(result.text, "second");
  assert.equal(result.turns, 4);
  assert.equal(result.toolRounds, 2);
});

test("progress blocks never report a step past max_steps, follow-ups included", async () => {
  const { tool } = waitingTool("wait", 0);
  const script = [calls(["wait", { value: 1 }]), "first", calls(["wait", { value: 2 }]), "second", calls(["wait", { value: 3 }]), "third"];
  const run = new Agent({ model: new ScriptedModel(script), tools: [tool], maxTurns: 2 }).run("one");
  run.followUp("two");
  run.followUp("three");
  const events = await eventsOf(run);
  assert.equal((await run).state, "COMPLETED");
  const blocks = ofType(events, "progress").map((block) => `${block.step}/${block.max_steps}`);
  assert.equal(blocks.length, 3);
  for (const block of ofType(events, "progress")) assert.ok(block.step <= block.max_steps, `progress ${blocks.join(", ")}`);
});

test("a tool call cut off mid-stream by an abort still gets a Cancelled result", async () => {
  let abort!: () => void;
  const model: Model = {
    provider: "cut",
    modelId: "x",
    async *stream(request) {
      yield { type: "tool-call-end", id: "done", name: "wait", arguments: "{}" };
      yield { type: "tool-call-start", id: "half", name: "wait" };
      yield { type: "tool-call-delta", id: "half", delta: '{"val' };
      abort();
      await new Promise((resolve) => request.signal?.addEventListener("abort", resolve));
      yield { type: "error", error: new AgentLoopError("aborted", "aborted") };
    },
  };
  const { tool, log } = waitingTool("wait", 0);
  const run = new Agent({ model, tools: [tool] }).run("go");
  abort = () => run.abort("cut");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "ABORTED");
  assert.equal(log.length, 0, "no tool of an aborted response runs");
  const results = result.messages.filter((message): message is ToolResultMessage => message.role === "tool");
  assert.deepEqual(
    results.map((message) => [message.toolCallId, message.isError]),
    [
      ["done", true],
      ["half", true],
    ],
  );
  assertRunInvariants(result, events);
});

test("a model error after complete tool calls ends FAILED with a consistent transcript; no tool runs", async () => {
  const model = playing([
    { type: "tool-call-end", id: "c1", name: "wait", arguments: "{}" },
    { type: "error", error: new AgentLoopError("network", "connection reset", { retryable: true }) },
  ]);
  const { tool, log } = waitingTool("wait", 0);
  const run = new Agent({ model, tools: [tool] }).run("go");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "FAILED");
  assert.equal(result.error?.kind, "network");
  assert.equal(log.length, 0);
  assertRunInvariants(result, events);
});

test("default truncation: an output past 20,000 characters reaches the model cut, with the marker", async () => {
  const big = `${"a".repeat(15_000)}${"z".repeat(15_000)}`;
  const model = new ScriptedModel([calls(["big", {}, "b"]), "ok"]);
  const tool = { name: "big", description: "", parameters: { type: "object" }, execute: () => big };
  const run = new Agent({ model, tools: [tool] }).run("go");
  const result = await run;
  const sent = String(model.requests[1].messages.find((message) => message.role === "tool")?.content);
  assert.match(sent, /\[agentloop: 10000 characters removed from the output of "big" \(limit 20000 characters, mode head_tail\)/);
  assert.ok(sent.startsWith("a".repeat(10_000)) && sent.endsWith("z".repeat(10_000)));
  assert.equal(ofType(run.events, "tool-end")[0].output, big);
  assert.equal(result.state, "COMPLETED");
});

test("the tool-call budget counts over the whole run, follow-ups included", async () => {
  const { tool, log } = waitingTool("wait", 0);
  const script = [calls(["wait", { value: 1 }], ["wait", { value: 2 }]), "first", calls(["wait", { value: 3 }], ["wait", { value: 4 }]), "second"];
  const run = new Agent({ model: new ScriptedModel(script), tools: [tool], maxToolCalls: 3 }).run("one");
  run.followUp("two");
  const result = await run;
  assert.equal(result.state, "TOOL_BUDGET");
  assert.equal(log.length, 2);
  assertRunInvariants(result, run.events);
});

test("a run whose input is not a string is refused with a message naming the input", async () => {
  // Either a TypeError at once or a FAILED result will do, as long as it names the input.
  let message: string;
  try {
    const result = await new Agent({ model: new ScriptedModel(["hi"]) }).run(undefined as unknown as string);
    assert.equal(result.state, "FAILED");
    message = result.reason;
  } catch (error) {
    message = String(error);
  }
  assert.match(message, /input/i);
});

test("steering that arrives during the last allowed turn does not throw that turn's answer away", async () => {
  const model = new ScriptedModel(["first answer here", "second"], { chunkDelayMs: 5 });
  const run = new Agent({ model, maxTurns: 1 }).run("go");
  for await (const event of run) if (event.type === "text-delta" && event.delta.startsWith("first")) run.steer("more");
  const result = await run;
  assert.equal(result.text, "first answer here", `${result.state}: ${result.reason}`);
});

test("context.progress() is a tool-progress event inside its call; the context names the run, the call and the wave", async () => {
  const seen: Array<Record<string, unknown>> = [];
  const tool = {
    name: "report",
    description: "",
    parameters: { type: "object" },
    execute: (_args: Record<string, unknown>, context: import("../../src/index.js").ToolContext) => {
      seen.push({ runId: context.runId, toolCallId: context.toolCallId, toolName: context.toolName, step: context.step });
      context.progress({ percent: 50 });
      return "ok";
    },
  };
  const run = new Agent({ model: new ScriptedModel([calls(["report", {}, "r1"]), calls(["report", {}, "r2"]), "done"]), tools: [tool] }).run("go");
  const events = await eventsOf(run);
  assert.deepEqual(seen, [
    { runId: run.id, toolCallId: "r1", toolName: "report", step: 1 },
    { runId: run.id, toolCallId: "r2", toolName: "report", step: 2 },
  ]);
  assert.deepEqual(
    ofType(events, "tool-progress").map((event) => [event.toolCallId, event.data]),
    [
      ["r1", { percent: 50 }],
      ["r2", { percent: 50 }],
    ],
  );
  assertRunInvariants(await run, events);
});

test("the root module imports no third-party package at load time (static imports from src/index.ts)", async () => {
  const { readFileSync } = await import("node:fs");
  const { dirname, resolve } = await import("node:path");
  const { fileURLToPath } = await import("node:url");
  const start = fileURLToPath(new URL("../../src/index.ts", import.meta.url));
  const seen = new Set<string>();
  const external = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const source = readFileSync(file, "utf8");
    // Static value imports and re-exports; `import type` and dynamic import() are free at load time.
    for (const match of source.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^;]*?\sfrom\s+["']([^"']+)["']|^\s*import\s+["']([^"']+)["']/gm)) {
      const specifier = match[1] ?? match[2];
      if (specifier.startsWith(".")) visit(resolve(dirname(file), specifier.replace(/\.js$/, ".ts")));
      else if (!specifier.startsWith("node:")) external.add(`${specifier} (from ${file.slice(file.indexOf("src/"))})`);
    }
  };
  visit(start);
  assert.ok(seen.size > 5, "the walk followed the root's imports");
  assert.deepEqual([...external], []);
});
