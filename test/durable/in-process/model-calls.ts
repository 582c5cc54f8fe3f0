// A durable run's model calls (src/durable/model-calls.ts), seen from the run: a model whose stream
// stays open after its last event (as a connection not closed yet) does not hold the run, and a
// failed model call replayed after a recovery gives the failure it recorded (its kind, message,
// status and provider). Real PostgreSQL; DBOS launched once (shared.ts).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { type DurableAgent, durableAgent, type JournalEncoder } from "../../../src/durable/index.js";
import { Agent, AgentLoopError, defineTool, type LoopEvent, type Model, type ModelEvent } from "../../../src/index.js";
import { shared } from "./shared.js";


/** A model that answers with one call of `echo`, then text, and keeps each stream open after its `finish` until it is closed or aborted. */
const lingering: Model = {
  provider: "test",
  modelId: "lingering",
  async *stream(request): AsyncGenerator<ModelEvent> {
    const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
    if (!request.messages.some((message) => message.role === "tool")) {
      yield { type: "tool-call-start", id: "l1", name: "echo" };
      yield { type: "tool-call-end", id: "l1", name: "echo", arguments: "{}" };
      yield { type: "finish", reason: { unified: "tool-calls" }, usage };
    } else {
      yield { type: "text-start", id: "t" };
      yield { type: "text-delta", id: "t", delta: "Echoed." };
      yield { type: "text-end", id: "t" };
      yield { type: "finish", reason: { unified: "stop" }, usage };
    }
    // Open until the reader lets go (its `return()`) or the request is aborted.
    await new Promise<void>((resolve) => request.signal?.addEventListener("abort", () => resolve()));
  },
};
const echo = defineTool({ name: "echo", description: "echo", parameters: { type: "object" }, execute: () => "echoed" });
const lingeringAgent = new Agent({ name: "model-calls-lingering", model: lingering, tools: [echo] });

// A model that fails with a provider's error; a journal whose leg end waits for the test once (the
// run is cancelled there: its failed model call is recorded, the run not finished).
const failing: Model = {
  provider: "failing",
  modelId: "rate-limited",
  async *stream(): AsyncGenerator<ModelEvent> {
    yield { type: "error", error: new AgentLoopError("rate_limit", "slow down", { status: 429, provider: "failing" }) };
  },
};
let ending: { reached: () => void; gate: Promise<void> } | undefined;
const journal = (): JournalEncoder => ({
  start: () => ["start"],
  event: () => undefined,
  end: async (result) => {
    const hold = ending;
    ending = undefined;
    if (hold) {
      hold.reached();
      await hold.gate;
    }
    return [`end:${result.state}:${result.error?.kind}`];
  },
});
const errors: Array<{ agentLoopError: boolean; kind: string; message: string; status?: number; provider?: string }> = [];
const recorder = {
  onEvent: (event: LoopEvent) => {
    if (event.type === "error") {
      const error = event.error as AgentLoopError;
      errors.push({ agentLoopError: error instanceof AgentLoopError, kind: error.kind, message: error.message, status: error.status, provider: error.provider });
    }
  },
};
const options = { ...shared, journal };
const lingeringDurable = durableAgent(lingeringAgent, options);
const failingDurable: DurableAgent = durableAgent(new Agent({ name: "model-calls-failing", model: failing, observers: [recorder] }), options);



test("a model whose stream stays open after its finish: the durable run completes as the plain run does", { timeout: 60_000 }, async () => {
  const plain = await lingeringAgent.run("echo");
  assert.equal(plain.text, "Echoed.");
  const run = await lingeringDurable.run("echo");
  const result = await run.result();
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, plain.text);
  assert.equal(result.toolCalls, 1);
});

test("a failed model call replayed after a recovery is the failure recorded: kind, message, status and provider", { timeout: 60_000 }, async () => {
  errors.length = 0;
  const runId = `run_failed_replay_${randomUUID().slice(0, 8)}`;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => {
    ending = { reached: resolve, gate: new Promise<void>((open) => (release = open)) };
  });
  const run = await failingDurable.run("hi", { runId, journal: "j" });
  run.result().catch(() => undefined);
  await reached;
  // The model call's record is written as the loop goes on: cancelled once it is there.
  while (!((await failingDurable.show(runId))?.steps ?? []).some((step) => step.name === "model")) await new Promise((resolve) => setTimeout(resolve, 20));
  await failingDurable.cancel(runId);
  release();
  await assert.rejects(run.result(), /has been cancelled/);
  await failingDurable.resume(runId);
  const result = await failingDurable.retrieve(runId).result();
  assert.equal(result.state, "FAILED");
  assert.deepEqual(result.error, { kind: "rate_limit", message: "slow down" });
  const live = { agentLoopError: true, kind: "rate_limit", message: "slow down", status: 429, provider: "failing" };
  assert.deepEqual(errors, [live, live], "the live failure, then the replayed one");
});
