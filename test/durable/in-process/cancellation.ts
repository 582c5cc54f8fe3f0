// A durable run's cancellation reaching its loop (src/durable/cancellation.ts), seen from the run's
// own events: a cancel during a tool aborts the loop (the tool's signal, the run-end's reason), a
// cancel between two steps stops the loop at its next step, and a step that fails for another
// reason (the session's history not loading) is that failure, as in the plain run, not a cancel.
// Real PostgreSQL; DBOS launched once (shared.ts), each test's runs its own.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { DBOS } from "@dbos-inc/dbos-sdk";
import { durableAgent } from "../../../src/durable/index.js";
import { Agent, AgentLoopError, defineTool, type LoopEvent, ScriptedModel } from "../../../src/index.js";
import type { SessionMemory } from "../../../src/loop/types.js";
import { shared } from "./shared.js";

const options = shared;
const callOnce = (name: string) => JSON.stringify({ tool_calls: [{ id: "c1", name, arguments: {} }] });

// A tool that ends when the test lets it, whatever its signal says (as a tool that ignores it does).
let release: (() => void) | undefined;
let toolStarted: (() => void) | undefined;
const stubborn = defineTool({
  name: "stubborn",
  description: "ends when released",
  parameters: { type: "object" },
  execute: async () => {
    await new Promise<void>((resolve) => {
      release = resolve;
      toolStarted?.();
    });
    return "finished anyway";
  },
});
let modelCalls = 0;
const counted = new ScriptedModel([callOnce("stubborn"), "never said"]);
const stubbornAgent = durableAgent(
  new Agent({
    name: "cancel-stubborn",
    model: {
      provider: counted.provider,
      modelId: counted.modelId,
      stream: (request) => {
        modelCalls++;
        return counted.stream(request);
      },
    },
    tools: [stubborn],
  }),
  options,
);

// A tool that waits for its signal (as a tool should).
let signalled: unknown;
const listening = defineTool({
  name: "listening",
  description: "waits until aborted",
  parameters: { type: "object" },
  execute: (_args, context) =>
    new Promise<string>((_resolve, reject) => {
      toolStarted?.();
      context.signal.addEventListener("abort", () => {
        signalled = context.signal.reason;
        reject(new Error("stopped"));
      });
    }),
});
const listener = durableAgent(new Agent({ name: "cancel-listening", model: new ScriptedModel([callOnce("listening"), "never said"]), tools: [listening] }), options);

// A session memory whose history does not load (its database is down).
const brokenMemory: SessionMemory = {
  loadHistory: async () => {
    throw new Error("history store unreachable");
  },
  onEvent: () => undefined,
};
const forgetful = new Agent({ name: "cancel-forgetful", model: new ScriptedModel(["hello"]), memory: brokenMemory });
const forgetfulDurable = durableAgent(forgetful, options);



// A run that ends at once (nothing of it executing here when it is cancelled).
const quick = durableAgent(new Agent({ name: "cancel-finished", model: new ScriptedModel(["done"]) }), options);

const listenerElsewhere = durableAgent(new Agent({ name: "cancel-listening-elsewhere", model: new ScriptedModel([callOnce("listening"), "never said"]), tools: [listening] }), options);

/** Starts a run of `durable` with an onEvent that resolves `ended` with the run's run-end event. */
async function observed(durable: typeof listener, runId: string) {
  const events: LoopEvent[] = [];
  let ended!: (event: Extract<LoopEvent, { type: "run-end" }>) => void;
  const end = new Promise<Extract<LoopEvent, { type: "run-end" }>>((resolve) => {
    ended = resolve;
  });
  const started = new Promise<void>((resolve) => {
    toolStarted = resolve;
  });
  const run = await durable.run("go", {
    runId,
    onEvent: (event) => {
      events.push(event);
      if (event.type === "run-end") ended(event);
    },
  });
  run.result().catch(() => undefined);
  return { run, events, end, started };
}

test("a run cancelled while its tool runs: the tool's signal aborts, and the run ends ABORTED, its reason naming the cancel", { timeout: 60_000 }, async () => {
  signalled = undefined;
  const runId = `run_cancel_listening_${randomUUID().slice(0, 8)}`;
  const { run, end, started, events } = await observed(listener, runId);
  await started;
  await listener.cancel(runId);
  // At once, by the time cancel returns (not at DBOS's next poll of the run, about a second later).
  assert.ok(signalled instanceof AgentLoopError, "the tool's signal had not aborted when cancel returned");
  const runEnd = await end;
  assert.equal(runEnd.state, "ABORTED");
  assert.equal(runEnd.reason, `aborted: run ${runId} was cancelled`);
  // The tool's signal says why: an AgentLoopError of kind "aborted" naming the run.
  assert.ok(signalled instanceof AgentLoopError, String(signalled));
  assert.equal(signalled.kind, "aborted");
  assert.equal(signalled.message, `run ${runId} was cancelled`);
  assert.equal(
    events.filter((event) => event.type === "error").length,
    0,
    "a cancel is no error",
  );
  await assert.rejects(run.result(), /has been cancelled/);
});

test("a run cancelled between two steps (its tool ignores the signal and ends just after the cancel) stops at its next step: ABORTED, the model not called again", { timeout: 60_000 }, async () => {
  const runId = `run_cancel_between_${randomUUID().slice(0, 8)}`;
  modelCalls = 0;
  const { run, end, started, events } = await observed(stubbornAgent, runId);
  await started;
  await stubbornAgent.cancel(runId);
  // Released at once: the tool's step ends before DBOS's cancel watch (a poll a second) sees the cancel.
  release?.();
  const runEnd = await end;
  assert.equal(runEnd.state, "ABORTED", JSON.stringify(runEnd.reason));
  assert.equal(runEnd.reason, `aborted: run ${runId} was cancelled`);
  assert.equal(modelCalls, 1, "the step after the cancel did not call the model");
  assert.deepEqual(
    events.filter((event) => event.type === "error"),
    [],
  );
  await assert.rejects(run.result(), /has been cancelled/);
  assert.equal((await stubbornAgent.show(runId))?.status, "CANCELLED");
});

test("a run cancelled from another process (DBOS's cancel, not this process's `cancel`) between two steps: its next step's refusal stops the loop, ABORTED, the model not called again", { timeout: 60_000 }, async () => {
  const runId = `run_cancel_elsewhere_${randomUUID().slice(0, 8)}`;
  modelCalls = 0;
  const { run, end, started, events } = await observed(stubbornAgent, runId);
  await started;
  // What another process's `cancel` does here: the run's status only (its loop is not in that process).
  await DBOS.cancelWorkflow(runId);
  release?.();
  const runEnd = await end;
  assert.equal(runEnd.state, "ABORTED", JSON.stringify(runEnd.reason));
  assert.equal(runEnd.reason, `aborted: run ${runId} was cancelled`);
  assert.equal(modelCalls, 1, "the step after the cancel did not call the model");
  assert.deepEqual(
    events.filter((event) => event.type === "error"),
    [],
  );
  await assert.rejects(run.result(), /has been cancelled/);
});

test("a run cancelled from another process while its tool runs: DBOS's step cancel reaches the tool's signal, the run ends ABORTED", { timeout: 60_000 }, async () => {
  signalled = undefined;
  const runId = `run_cancel_listening_elsewhere_${randomUUID().slice(0, 8)}`;
  const { run, end, started } = await observed(listenerElsewhere, runId);
  await started;
  // What another process's `cancel` does here: the run's status only; DBOS's step watch (a poll) tells the step.
  await DBOS.cancelWorkflow(runId);
  const runEnd = await end;
  assert.equal(runEnd.state, "ABORTED");
  assert.equal(runEnd.reason, `aborted: run ${runId} was cancelled`);
  assert.ok(signalled instanceof AgentLoopError, String(signalled));
  await assert.rejects(run.result(), /has been cancelled/);
});

test("cancelling a run that is not executing here (it has ended) answers, and leaves the run as it was", { timeout: 60_000 }, async () => {
  const run = await quick.run("hi");
  const result = await run.result();
  assert.deepEqual([result.state, result.text], ["COMPLETED", "done"]);
  await quick.cancel(run.runId);
  assert.equal((await quick.show(run.runId))?.status, "SUCCESS");
  assert.equal((await quick.retrieve(run.runId).result()).text, "done");
});

test("a durable run whose session history fails to load ends as the plain run does (an error, not a cancel)", { timeout: 60_000 }, async () => {
  const plain = await forgetful.run("hi", { sessionId: "s1" });
  const run = await forgetfulDurable.run("hi", { sessionId: "s1" });
  const durable = await run.result();
  assert.equal(plain.state, "FAILED");
  assert.equal(durable.state, plain.state);
  assert.equal(durable.reason, plain.reason);
  assert.deepEqual(durable.error, { kind: plain.error?.kind, message: plain.error?.message });
  assert.match(durable.error?.message ?? "", /history store unreachable/);
  // show lists the failed step with its error.
  const steps = (await forgetfulDurable.show(run.runId))?.steps ?? [];
  assert.deepEqual(
    steps.filter((step) => !step.name.startsWith("DBOS.")).map((step) => [step.name, step.error]),
    [["history", "history store unreachable"]],
  );
});
