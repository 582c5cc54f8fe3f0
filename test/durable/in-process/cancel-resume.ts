// A run cancelled and resumed at once (src/durable/agent.ts `resume`, cancellation.ts `stopHere`):
// DBOS notices a cancel by polling about once a second, and a resume puts the run back to ENQUEUED, so
// a resume within that second left the cancelled execution running beside the resumed one (its tool
// still running, its results and ending stored beside the new ones, side effects done twice). Now the
// cancel stops the execution here at once, and `resume` waits for its end before the run goes on.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, test } from "node:test";
import { durableAgent } from "../../../src/durable/index.js";
import { Agent, defineTool, ScriptedModel } from "../../../src/index.js";
import { InMemoryStore, sessionMemory } from "../../../src/memory/index.js";
import { openaiChat } from "../../../src/providers/openai/index.js";
import { fixtureLines, replay, startServer } from "../../providers/fixture-server.js";
import { shared } from "./shared.js";

let running = 0;
let mostAtOnce = 0;
let invocations = 0;
let firstEnded = false;
let firstStarted: (() => void) | undefined;
// The first call waits until its signal aborts (as a tool should); later calls answer at once.
const charge = defineTool({
  name: "charge",
  description: "charges a card once",
  parameters: { type: "object" },
  execute: async (_args, context) => {
    invocations++;
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    try {
      if (invocations > 1) return "charged";
      firstStarted?.();
      await new Promise<void>((_resolve, reject) => {
        context.signal.addEventListener("abort", () => reject(new Error("stopped")), { once: true });
      });
      return "unreachable";
    } finally {
      running--;
      if (invocations === 1) firstEnded = true;
    }
  },
});
const resumable = durableAgent(
  new Agent({ name: "cancel-resume-at-once", model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "c1", name: "charge", arguments: {} }] }), "done"]), tools: [charge] }),
  shared,
);

test("a run cancelled and resumed at once: the cancelled execution has stopped when resume returns, one execution at a time, and the resumed run completes", { timeout: 60_000 }, async () => {
  const started = new Promise<void>((resolve) => {
    firstStarted = resolve;
  });
  const runId = `run_cancel_resume_${randomUUID().slice(0, 8)}`;
  const run = await resumable.run("charge me", { runId });
  run.result().catch(() => undefined);
  await started;
  await resumable.cancel(runId);
  await resumable.resume(runId);
  assert.equal(firstEnded, true, "the cancelled execution's tool was still running when resume returned");
  const result = await resumable.retrieve(runId).result();
  assert.equal(result.state, "COMPLETED", JSON.stringify(result));
  assert.equal(result.text, "done");
  assert.equal(mostAtOnce, 1, "two executions ran the tool at once");
  assert.ok(invocations <= 2, `the tool ran ${invocations} times`);
});

// The same against a provider on loopback replaying recorded Groq streams (a `weather` call, then an
// answer): the recorded model call is not asked again after the resume, the answer is the recorded one.
const provider = await startServer([replay("openai-chat", "groq-tool-call"), replay("openai-chat", "groq-text")]);
after(() => provider.close());
let weatherCalls = 0;
let weatherRunning = 0;
let weatherAtOnce = 0;
let weatherStarted: (() => void) | undefined;
const weather = defineTool({
  name: "weather",
  description: "Weather at a location",
  parameters: { type: "object", properties: { location: { type: "string" } } },
  execute: async (_args, context) => {
    weatherCalls++;
    weatherRunning++;
    weatherAtOnce = Math.max(weatherAtOnce, weatherRunning);
    try {
      if (weatherCalls > 1) return "sunny, 21°C";
      weatherStarted?.();
      await new Promise<void>((_resolve, reject) => {
        context.signal.addEventListener("abort", () => reject(new Error("stopped")), { once: true });
      });
      return "unreachable";
    } finally {
      weatherRunning--;
    }
  },
});
const overHttp = durableAgent(new Agent({ name: "cancel-resume-http", model: openaiChat("llama-3.1-8b", { baseURL: `${provider.url}/v1`, apiKey: "test-key", priceAs: false }), tools: [weather] }), shared);

test("over a loopback provider: a run cancelled and resumed at once completes with the recorded answer, the model asked once per step, the tool never twice at once", { timeout: 60_000 }, async () => {
  const started = new Promise<void>((resolve) => {
    weatherStarted = resolve;
  });
  const runId = `run_cancel_resume_http_${randomUUID().slice(0, 8)}`;
  const run = await overHttp.run("What is the weather in San Francisco?", { runId });
  run.result().catch(() => undefined);
  await started;
  await overHttp.cancel(runId);
  await overHttp.resume(runId);
  assert.equal(weatherRunning, 0, "the cancelled execution's tool was still running when resume returned");
  const result = await overHttp.retrieve(runId).result();
  assert.equal(result.state, "COMPLETED", JSON.stringify(result));
  const recorded = fixtureLines("openai-chat", "groq-text")
    .map((line) => JSON.parse(line).choices?.[0]?.delta?.content ?? "")
    .join("");
  assert.equal(result.text, recorded);
  assert.equal(provider.requests.length, 2, "the recorded tool call was not asked again");
  assert.equal(weatherAtOnce, 1);
});

// The same with a session's memory (src/durable/memory.ts: an execution run again does not store what
// an earlier one stored): over the loopback provider, the resumed run's log holds the user's message,
// the recorded call and the recorded answer once each. Before, the replayed first leg was stored again.
const remembering = await startServer([replay("openai-chat", "groq-tool-call"), replay("openai-chat", "groq-text")]);
after(() => remembering.close());
const rememberedStore = new InMemoryStore();
let rememberedStarted: (() => void) | undefined;
let rememberedCalls = 0;
const rememberedWeather = defineTool({
  name: "weather",
  description: "Weather at a location",
  parameters: { type: "object", properties: { location: { type: "string" } } },
  execute: async (_args, context) => {
    if (++rememberedCalls > 1) return "sunny, 21°C";
    rememberedStarted?.();
    return new Promise<string>((_resolve, reject) => {
      context.signal.addEventListener("abort", () => reject(new Error("stopped")), { once: true });
    });
  },
});
const overHttpWithMemory = durableAgent(
  new Agent({
    name: "cancel-resume-http-memory",
    model: openaiChat("llama-3.1-8b", { baseURL: `${remembering.url}/v1`, apiKey: "test-key", priceAs: false }),
    tools: [rememberedWeather],
    memory: sessionMemory(rememberedStore),
  }),
  shared,
);

test("over a loopback provider with a session's memory: a run cancelled in its tool and resumed stores the user's message, the call and the answer once each", { timeout: 60_000 }, async () => {
  const started = new Promise<void>((resolve) => {
    rememberedStarted = resolve;
  });
  const runId = `run_cancel_resume_memory_${randomUUID().slice(0, 8)}`;
  const sessionId = `sess_${randomUUID().slice(0, 8)}`;
  const run = await overHttpWithMemory.run("What is the weather in San Francisco?", { runId, sessionId });
  run.result().catch(() => undefined);
  await started;
  await overHttpWithMemory.cancel(runId);
  await overHttpWithMemory.resume(runId);
  const result = await overHttpWithMemory.retrieve(runId).result();
  assert.equal(result.state, "COMPLETED", JSON.stringify(result));
  const recorded = fixtureLines("openai-chat", "groq-text")
    .map((line) => JSON.parse(line).choices?.[0]?.delta?.content ?? "")
    .join("");
  assert.equal(result.text, recorded);
  assert.equal(remembering.requests.length, 2, "the recorded tool call was not asked again");
  const events = await rememberedStore.events(sessionId, { limit: 1000 });
  const count = (type: string) => events.filter((event) => event.event_type === type).length;
  assert.deepEqual(
    { user_message: count("user_message"), tool_call: count("tool_call"), agent_response: count("agent_response") },
    { user_message: 1, tool_call: 1, agent_response: 1 },
    JSON.stringify(events.map((event) => event.event_type)),
  );
  const history = await overHttpWithMemory.agent.config.memory!.loadHistory(sessionId);
  assert.deepEqual(
    history.filter((message) => message.role === "user").map((message) => message.content),
    ["What is the weather in San Francisco?"],
  );
});
