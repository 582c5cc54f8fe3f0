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

// A tool that ignores its signal (it ends when the test lets it): the aborted loop ends its execution
// at once, but the tool's call goes on. `resume` waits for that call too (up to `waitMs`, 10 s by
// default), and when it has not ended by then refuses, naming the run and the call still running.
// Before, `resume` returned at once (the execution had ended without its call), and the resumed
// execution ran beside the call of the cancelled one.
let deafRunning = 0;
let deafAtOnce = 0;
let deafEnds: string[] = [];
let deafStarted: (() => void) | undefined;
let releaseDeaf: (() => void) | undefined;
const deaf = defineTool({
  name: "deaf",
  description: "ends when released, whatever its signal says",
  parameters: { type: "object" },
  execute: async (_args, context) => {
    deafRunning++;
    deafAtOnce = Math.max(deafAtOnce, deafRunning);
    try {
      if (context.signal.aborted || deafEnds.length > 0) return "done at once";
      await new Promise<void>((resolve) => {
        releaseDeaf = resolve;
        deafStarted?.();
      });
      return "done late";
    } finally {
      deafRunning--;
      deafEnds.push("tool ended");
    }
  },
});
const deafAgent = durableAgent(new Agent({ name: "cancel-resume-deaf", model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "d1", name: "deaf", arguments: {} }] }), "over"]), tools: [deaf] }), shared);

async function deafRun(label: string) {
  deafRunning = 0;
  deafAtOnce = 0;
  deafEnds = [];
  const started = new Promise<void>((resolve) => {
    deafStarted = resolve;
  });
  const runId = `run_cancel_resume_${label}_${randomUUID().slice(0, 8)}`;
  const run = await deafAgent.run("go", { runId });
  run.result().catch(() => undefined);
  await started;
  return runId;
}

test("a run cancelled while its tool ignores the signal: resume waits for that call to end before the run goes on, one execution at a time", { timeout: 60_000 }, async () => {
  const runId = await deafRun("deaf");
  await deafAgent.cancel(runId);
  const resuming = deafAgent.resume(runId).then(() => deafEnds.push("resume returned"));
  // The call goes on past the cancel; released a moment later, it ends before resume returns.
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.deepEqual(deafEnds, [], "resume returned while the cancelled execution's call still ran");
  releaseDeaf!();
  await resuming;
  assert.deepEqual(deafEnds.slice(0, 2), ["tool ended", "resume returned"]);
  const result = await deafAgent.retrieve(runId).result();
  assert.equal(result.state, "COMPLETED", JSON.stringify(result));
  assert.equal(result.text, "over");
  assert.equal(deafAtOnce, 1, "two executions ran the tool at once");
});

test("a run cancelled while its tool ignores the signal past resume's wait: resume refuses, naming the run and the call still running; once the call ended, resume goes on", { timeout: 60_000 }, async () => {
  const runId = await deafRun("deaf_late");
  await deafAgent.cancel(runId);
  await assert.rejects(
    deafAgent.resume(runId, { waitMs: 200 }),
    (error: Error) => {
      assert.equal(
        error.message,
        `durable resume: run "${runId}" is still stopping: its cancelled execution in this process did not end within 0.2 s (still running: tool "deaf" (call d1), which ignores its signal); try again once it has ended`,
      );
      return true;
    },
  );
  assert.equal(deafRunning, 1, "the call still runs");
  assert.equal((await deafAgent.show(runId))?.status, "CANCELLED", "the run stays cancelled");
  releaseDeaf!();
  await deafAgent.resume(runId);
  const result = await deafAgent.retrieve(runId).result();
  assert.equal(result.state, "COMPLETED", JSON.stringify(result));
  assert.equal(deafAtOnce, 1, "two executions ran the tool at once");
});

test("resume's wait must be a non-negative number of milliseconds", async () => {
  await assert.rejects(deafAgent.resume("any", { waitMs: -1 }), /^TypeError: durable resume: waitMs must be a non-negative number of milliseconds, got -1$/);
});

// `resume` of a run that is not cancelled but waits for approvals in this process: it is cancelled as
// `cancel` cancels it (its wait woken at once) and its execution awaited. Before, only DBOS's cancel was
// sent: the wait learned it at DBOS's next poll of it (every 10 s), and resume refused the run past its wait.
let approvedSends = 0;
const approvedSend = defineTool({
  name: "send",
  description: "sends once approved",
  parameters: { type: "object" },
  needsApproval: true,
  execute: async () => {
    approvedSends++;
    return "sent";
  },
});
const waitingAgent = durableAgent(new Agent({ name: "cancel-resume-waiting", model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "w1", name: "send", arguments: {} }] }), "sent it"]), tools: [approvedSend] }), shared);

async function waitsOn(runId: string): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    if ((await waitingAgent.approvalWait(runId))?.result.checkpoint?.pending.some((call) => call.toolCallId === "w1")) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`run ${runId} never waited on w1`);
}

test("resume of a run waiting for approvals here (not cancelled first): its wait stops at once, the run waits again in its resumed execution, and a decision completes it", { timeout: 60_000 }, async () => {
  approvedSends = 0;
  const runId = `run_resume_waiting_${randomUUID().slice(0, 8)}`;
  const run = await waitingAgent.run("send it", { runId });
  run.result().catch(() => undefined);
  await waitsOn(runId);
  await waitingAgent.resume(runId, { waitMs: 2_500 });
  await waitsOn(runId);
  await waitingAgent.decide(runId, { w1: { approve: true } });
  const result = await waitingAgent.retrieve(runId).result();
  assert.deepEqual([result.state, result.text], ["COMPLETED", "sent it"]);
  assert.equal(approvedSends, 1);
});
