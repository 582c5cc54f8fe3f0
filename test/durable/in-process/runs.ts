// Durable runs in this process, what handle.test.ts leaves out: a journaled run's events and its
// encoder's `begin`, a reader following a journaled run that is cancelled, a run that stops for
// approvals twice (each wait durable, the session's memory given the resumed legs), and a run
// cancelled while its tool runs (the tool's signal aborts). Real PostgreSQL; DBOS
// launched once (shared.ts), each test's runs its own (the file runs again in one process).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { DBOS } from "@dbos-inc/dbos-sdk";
import pg from "pg";
import { type DurableAgent, durableAgent, INTERRUPTED, type JournalEncoder, type JournalEntry } from "../../../src/durable/index.js";
import { Agent, defineTool, type LoopEvent, type Model, type ModelEvent, ScriptedModel } from "../../../src/index.js";
import { InMemoryStore, sessionMemory } from "../../../src/memory/index.js";
import { postgresUrl } from "../../memory/postgres-server.js";
import { schema, shared } from "./shared.js";

const calls = (...list: Array<[string, string, Record<string, unknown>]>) => JSON.stringify({ tool_calls: list.map(([id, name, args]) => ({ id, name, arguments: args })) });

/** What the encoders of this file saw, by run id: `begin`, each leg's start, and the results it ended. */
const seen = new Map<string, string[]>();
const journal = (spec: unknown, runId: string): JournalEncoder => {
  const log = seen.get(runId) ?? [];
  seen.set(runId, log);
  return {
    begin: async () => {
      log.push("begin");
    },
    start: () => {
      log.push("start");
      return [`start:${String(spec)}`];
    },
    event: (event: LoopEvent) => (event.type === "tool-start" ? `call:${event.name}` : undefined),
    end: async (result) => [`end:${result.state}`],
  };
};
const options = { ...shared, journal };

const executed: string[] = [];
const approve = (name: string) =>
  defineTool<{ n: number }>({
    name,
    description: name,
    parameters: { type: "object", properties: { n: { type: "number" } } },
    needsApproval: true,
    execute: ({ n }) => {
      executed.push(`${name} ${n}`);
      return `${name} ${n} done`;
    },
  });
// Two waves in a row that need approval: each stops the run, each is decided.
const twice = new ScriptedModel([calls(["a1", "first", { n: 1 }]), calls(["b1", "second", { n: 2 }]), "Both done."]);
const store = new InMemoryStore();
const twoWaits = durableAgent(new Agent({ name: "runs-two-waits", model: twice, tools: [approve("first"), approve("second")], memory: sessionMemory(store) }), options);

// A tool that waits for its run's signal (as a tool should): a cancelled run aborts it.
const aborted: string[] = [];
let toolStarted: (() => void) | undefined;
const waits = defineTool({
  name: "waits",
  description: "waits until aborted",
  parameters: { type: "object" },
  execute: async (_args, context) => {
    // A tool runs only on a recorded response: the model call that asked for it is in DBOS's table
    // of step outputs by now (read from the table: DBOS's API may not be called inside a step).
    recordedModelCalls.push(await recordedSteps(context.idempotencyKey.split(":")[0]!, "model"));
    return new Promise<string>((_resolve, reject) => {
      toolStarted?.();
      context.signal.addEventListener("abort", () => {
        aborted.push(context.toolCallId);
        reject(new Error("stopped"));
      });
    });
  },
});
const recordedModelCalls: number[] = [];
async function recordedSteps(runId: string, name: string): Promise<number> {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".operation_outputs WHERE workflow_uuid = $1 AND function_name = $2`, [runId, name]);
    return rows[0]!.n;
  } finally {
    await client.end();
  }
}
const waiter = durableAgent(new Agent({ name: "runs-waiter", model: new ScriptedModel([calls(["w1", "waits", {}]), "never"]), tools: [waits] }), options);
// Two waves in a row that need approval, neither decided: each expires.
const expiring = durableAgent(
  new Agent({ name: "runs-expiring", model: new ScriptedModel([calls(["x1", "first", { n: 1 }]), calls(["x2", "second", { n: 2 }]), "Nothing done."]), tools: [approve("first"), approve("second")], approvalTimeoutMs: 200 }),
  options,
);

// A toolset (as an MCP server's tools are): its tools are durable too, and a change of its tools is seen.
let toolsVersion = 1;
const lookup = (version: number) => defineTool({ name: "lookup", description: "looks up", parameters: { type: "object" }, execute: () => `looked up v${version}` });
const toolset = {
  name: "catalog",
  get toolsVersion() {
    return toolsVersion;
  },
  get loadedTools() {
    return [lookup(toolsVersion)];
  },
};
const cataloguer = durableAgent(new Agent({ name: "runs-toolset", model: new ScriptedModel([calls(["l1", "lookup", {}]), "Looked."]), tools: [toolset] }), options);

// A model call that streams until its request's signal aborts (as an HTTP adapter's does).
const modelAborted: string[] = [];
let modelStarted: (() => void) | undefined;
const slowModel: Model = {
  provider: "test",
  modelId: "slow",
  async *stream(request): AsyncGenerator<ModelEvent> {
    yield { type: "response-start", model: "slow" };
    yield { type: "text-start", id: "t" };
    yield { type: "text-delta", id: "t", delta: "thinking" };
    modelStarted?.();
    await new Promise<void>((resolve) => request.signal?.addEventListener("abort", () => resolve()));
    modelAborted.push("aborted");
    throw new Error("the request was aborted");
  },
};
const slow = durableAgent(new Agent({ name: "runs-slow-model", model: slowModel }), options);

const echo = defineTool({ name: "echo", description: "echo", parameters: { type: "object" }, execute: () => "echoed" });
const idempotentEcho = defineTool({ name: "echo", description: "echo", parameters: { type: "object" }, idempotent: true, execute: () => "echoed" });
const idempotentEchoer = durableAgent(new Agent({ name: "runs-idempotent", model: new ScriptedModel([calls(["i1", "echo", {}]), "Echoed."]), tools: [idempotentEcho] }), options);
/** The event types the echoer's observer saw, by run id (its runs' events, recovered or live). */
const observed = new Map<string, string[]>();
const observer = {
  onEvent: (event: LoopEvent) => {
    observed.set(event.runId, [...(observed.get(event.runId) ?? []), event.type]);
  },
};
const echoer = durableAgent(new Agent({ name: "runs-echoer", model: new ScriptedModel([calls(["e1", "echo", {}]), "Echoed."]), tools: [echo], observers: [observer] }), options);



async function collect(entries: AsyncIterable<JournalEntry>): Promise<string[]> {
  const items: string[] = [];
  for await (const { item } of entries) items.push(item);
  return items;
}

/** Polls what a run waits at until it waits on `callId`. */
async function waitingOn(durable: DurableAgent, runId: string, callId: string) {
  for (let attempt = 0; attempt < 600; attempt++) {
    const wait = await durable.approvalWait(runId);
    if (wait?.result.checkpoint?.pending.some((call) => call.toolCallId === callId)) return wait;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`run ${runId} never waited on ${callId}`);
}

test("a journaled run passes its events to onEvent; its encoder begins once, before the first leg starts", { timeout: 60_000 }, async () => {
  const runId = `run_events_${randomUUID().slice(0, 8)}`;
  const events: string[] = [];
  const run = await echoer.run("echo", { runId, journal: "j", onEvent: (event) => events.push(event.type) });
  assert.equal((await run.result()).text, "Echoed.");
  assert.ok(events.includes("tool-start") && events.includes("text-delta") && events.at(-1) === "run-end", events.join(" "));
  assert.deepEqual(seen.get(runId), ["begin", "start"]);
  assert.deepEqual(await collect(echoer.readJournal(runId)), ["start:j", "call:echo", "end:COMPLETED"]);
  assert.deepEqual(observed.get(runId), events, "the observer saw what onEvent saw");
  // Without onEvent: the same run, no error event (a listener that is not there is not called).
  const quiet = await echoer.run("echo", { runId: `${runId}_quiet`, journal: "j" });
  assert.equal((await quiet.result()).text, "Echoed.");
  assert.deepEqual(observed.get(`${runId}_quiet`), events);
});

test("a run's journal: a run id just returned by run() is readable at once, queued or not", { timeout: 60_000 }, async () => {
  // Queued (a partition key): read before the run starts, to its end.
  const queued = await echoer.run("echo", { runId: `run_queued_journal_${randomUUID().slice(0, 8)}`, journal: "q", partitionKey: `key_${randomUUID().slice(0, 8)}` });
  assert.deepEqual(await collect(echoer.readJournal(queued.runId)), ["start:q", "call:echo", "end:COMPLETED"]);
  const direct = await echoer.run("echo", { journal: "d" });
  assert.deepEqual(await collect(echoer.readJournal(direct.runId)), ["start:d", "call:echo", "end:COMPLETED"]);
});

test("a run without a journal spec on an agent with a journal keeps none: it runs as a plain durable run", { timeout: 60_000 }, async () => {
  const runId = `run_nojournal_${randomUUID().slice(0, 8)}`;
  const run = await echoer.run("echo", { runId });
  assert.equal((await run.result()).text, "Echoed.");
  assert.equal(seen.get(runId), undefined, "no encoder made");
});

test("a run that stops for approvals twice waits durably each time; the session's memory holds both resumed legs", { timeout: 60_000 }, async () => {
  executed.length = 0;
  for (const journaled of [false, true]) {
    const runId = `run_twice_${journaled ? "j" : "p"}_${randomUUID().slice(0, 8)}`;
    const sessionId = `sess_${randomUUID().slice(0, 8)}`;
    const run = await twoWaits.run("do both", { runId, sessionId, ...(journaled ? { journal: "legs" } : {}) });
    const first = await waitingOn(twoWaits, runId, "a1");
    if (!journaled) {
      // No approvalTimeoutMs: the wait lasts (7 days by default), it has not expired a second later.
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
    // The journaled run's decisions name their wait (as the server sends them): each is its own message.
    const named = (wait: typeof first) => (journaled ? { checkpointId: wait.result.checkpoint!.id } : {});
    await twoWaits.decide(runId, { a1: { approve: true } }, named(first));
    const second = await waitingOn(twoWaits, runId, "b1");
    await twoWaits.decide(runId, { b1: { approve: true } }, named(second));
    const result = await run.result();
    assert.deepEqual(await twoWaits.expiredApprovals(runId), [], "decided: nothing expired");
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "Both done.");
    // The session's history, as the next run of the session reads it: both calls and the answer.
    const history = await twoWaits.agent.config.memory!.loadHistory(sessionId);
    const text = JSON.stringify(history);
    assert.match(text, /first 1 done/);
    assert.match(text, /second 2 done/);
    assert.match(text, /Both done\./);
    if (journaled) {
      assert.deepEqual(await collect(twoWaits.readJournal(runId)), ["start:legs", "end:INTERRUPTED", "start:legs", "call:first", "end:INTERRUPTED", "start:legs", "call:second", "end:COMPLETED"]);
    }
  }
  assert.deepEqual(executed, ["first 1", "second 2", "first 1", "second 2"]);
});

test("a journaled run cancelled while its tool runs: a reader following it live ends, as does one reading it later", { timeout: 60_000 }, async () => {
  const runId = `run_cancel_reader_${randomUUID().slice(0, 8)}`;
  const started = new Promise<void>((resolve) => {
    toolStarted = resolve;
  });
  const run = await waiter.run("wait", { runId, journal: "cancelled" });
  run.result().catch(() => undefined);
  await started;
  const reader = collect(waiter.readJournal(runId));
  // The items before the tool call are written to the database before its step (a reader in
  // another process gets them while the tool runs): the write is one of the run's recorded steps.
  // (Two writes: the leg's start before the model call, the call's item before the tool's step.)
  const written = async () => ((await waiter.show(runId))?.steps ?? []).filter((step) => step.name === "DBOS.writeStream").length >= 2;
  for (const deadline = Date.now() + 10_000; !(await written()) && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
  await waiter.cancel(runId);
  const live = await reader;
  const later = await collect(waiter.readJournal(runId));
  // The live reader has what the execution here made up to its end (the leg's end included); the
  // database has what was written before the cancel stopped the run's writes: a prefix of it, the
  // items before the tool call at least.
  assert.deepEqual(later.slice(0, 2), ["start:cancelled", "call:waits"]);
  assert.deepEqual(live, ["start:cancelled", "call:waits", "end:ABORTED"]);
  assert.deepEqual(later, live.slice(0, later.length));
});

test("a run cancelled while its tool runs: the tool's signal aborts and the run ends cancelled", { timeout: 60_000 }, async () => {
  aborted.length = 0;
  const runId = `run_cancel_tool_${randomUUID().slice(0, 8)}`;
  const started = new Promise<void>((resolve) => {
    toolStarted = resolve;
  });
  recordedModelCalls.length = 0;
  const run = await waiter.run("wait", { runId });
  await started;
  assert.deepEqual(recordedModelCalls, [1], "the model call was recorded before the tool ran");
  const running = await waiter.show(runId);
  assert.equal(running?.status, "PENDING");
  assert.equal(running?.pendingApprovals, undefined, "a running run waits on no approval");
  await waiter.cancel(runId);
  await assert.rejects(run.result(), new RegExp(`${runId} has been cancelled`));
  assert.deepEqual(aborted, ["w1"]);
  assert.equal((await waiter.show(runId))?.status, "CANCELLED");
});

// A cancelled run resumed in this process is the recovery of the crash tests (durable.test.ts) run
// without a crash: DBOS executes the run again from the start, the recorded steps give their results.
const sideEffects: string[] = [];
let inFlight: (() => void) | undefined;
const effect = (name: string, idempotent: boolean, hangOnce: boolean) =>
  defineTool<{ n: number }>({
    name,
    description: name,
    parameters: { type: "object", properties: { n: { type: "number" } } },
    idempotent,
    execute: async ({ n }, context) => {
      sideEffects.push(`${name} ${n} ${context.idempotencyKey}`);
      // The first execution never ends (as a process killed while it runs): the test cancels the run.
      if (hangOnce && sideEffects.filter((line) => line.startsWith(`${name} `)).length === 1) {
        inFlight?.();
        await new Promise(() => undefined);
      }
      return `${name} ${n} ok`;
    },
  });
const resumedScript = [calls(["r1", "record", { n: 1 }]), calls(["r2", "charge", { n: 2 }], ["r3", "fetch", { n: 3 }]), "Resumed."];
const resumable = durableAgent(
  new Agent({ name: "runs-resumable", model: new ScriptedModel(resumedScript), tools: [effect("record", false, false), effect("charge", false, true), effect("fetch", true, true)] }),
  options,
);

/**
 * Resumes a cancelled run whose execution here hangs in its tools for good (as a process that died
 * while they ran): `resume` here refuses it, naming the calls that still run (it waits for them, up to
 * `waitMs`); another process's `resume` (DBOS's resume: no execution of the run there) starts it again,
 * the hung calls' results never recorded.
 */
async function resumeElsewhere(durable: DurableAgent, runId: string, running: string): Promise<void> {
  await assert.rejects(durable.resume(runId, { waitMs: 50 }), (error: Error) => error.message.includes(`(still running: ${running}, which`));
  await DBOS.resumeWorkflow(runId);
}

// A call that begins after its approval: its start marker is a step of its own.
const send = defineTool<{ n: number }>({
  name: "send",
  description: "sends",
  parameters: { type: "object", properties: { n: { type: "number" } } },
  needsApproval: true,
  execute: async ({ n }, context) => {
    sideEffects.push(`send ${n} ${context.idempotencyKey}`);
    inFlight?.();
    await new Promise(() => undefined);
    return "sent";
  },
});
const gated = durableAgent(new Agent({ name: "runs-gated", model: new ScriptedModel([calls(["s1", "send", { n: 1 }]), "Gave up."]), tools: [send] }), options);
// The same with a session's memory: a recovered execution replays the first leg and resumes again
// (a new checkpoint: the session's log, which records each resume, refuses none of it).
const gatedStore = new InMemoryStore();
const gatedWithMemory = durableAgent(
  new Agent({ name: "runs-gated-memory", model: new ScriptedModel([calls(["s1", "send", { n: 1 }]), "Gave up."]), tools: [send], memory: sessionMemory(gatedStore) }),
  options,
);

test("an approved call in flight when its run is cancelled, the run resumed: the decision is not asked again, the call is not run again", { timeout: 60_000 }, async () => {
  sideEffects.length = 0;
  const runId = `run_gated_${randomUUID().slice(0, 8)}`;
  const running = new Promise<void>((resolve) => {
    inFlight = resolve;
  });
  const run = await gated.run("send", { runId });
  run.result().catch(() => undefined);
  await waitingOn(gated, runId, "s1");
  await gated.decide(runId, { s1: { approve: true } });
  await running;
  await gated.cancel(runId);
  await assert.rejects(run.result(), /has been cancelled/);
  await resumeElsewhere(gated, runId, 'tool "send" (call s1)');
  const result = await gated.retrieve(runId).result();
  assert.equal(result.text, "Gave up.");
  assert.deepEqual(sideEffects, [`send 1 ${runId}:s1`]);
  assert.deepEqual(
    result.newMessages.flatMap((message) => (message.role === "tool" ? [message.content] : [])),
    ["Interrupted: the process stopped while this tool ran; it was not retried"],
  );
});

test("with a session's memory, an approved call in flight when its run is cancelled, the run resumed: the run completes, its resume not refused by the session's log, the call not run again", { timeout: 60_000 }, async () => {
  sideEffects.length = 0;
  const runId = `run_gated_memory_${randomUUID().slice(0, 8)}`;
  const sessionId = `sess_${randomUUID().slice(0, 8)}`;
  const running = new Promise<void>((resolve) => {
    inFlight = resolve;
  });
  const run = await gatedWithMemory.run("send", { runId, sessionId });
  run.result().catch(() => undefined);
  await waitingOn(gatedWithMemory, runId, "s1");
  await gatedWithMemory.decide(runId, { s1: { approve: true } });
  await running;
  await gatedWithMemory.cancel(runId);
  await assert.rejects(run.result(), /has been cancelled/);
  await resumeElsewhere(gatedWithMemory, runId, 'tool "send" (call s1)');
  const result = await gatedWithMemory.retrieve(runId).result();
  assert.deepEqual([result.state, result.text, result.error], ["COMPLETED", "Gave up.", undefined]);
  assert.deepEqual(sideEffects, [`send 1 ${runId}:s1`]);
  // The session's history as its next run reads it: the call once, with a result, and the answer last.
  // (Each event stored once: in-process/replay.ts.)
  const history = await gatedWithMemory.agent.config.memory!.loadHistory(sessionId);
  const callIds = history.flatMap((message) => (message.role === "assistant" && Array.isArray(message.content) ? message.content.flatMap((part) => (part.type === "tool-call" ? [part.id] : [])) : []));
  assert.deepEqual(
    callIds,
    ["s1"],
    JSON.stringify(history),
  );
  assert.equal(history.filter((message) => message.role === "tool").length, 1);
  assert.equal(JSON.stringify(history.at(-1)?.content), JSON.stringify([{ type: "text", text: "Gave up." }]));
  const decided = (await gatedStore.events(sessionId)).filter((event) => event.event_type === "approval_decided");
  assert.ok(decided.length >= 1, "the resume is recorded");
});

test("a run cancelled with tools in flight and resumed: recorded tools are not run again, a non-idempotent call in flight gets the Interrupted result, an idempotent one runs again", { timeout: 60_000 }, async () => {
  sideEffects.length = 0;
  const runId = `run_resumed_${randomUUID().slice(0, 8)}`;
  let started = 0;
  const bothInFlight = new Promise<void>((resolve) => {
    inFlight = () => {
      if (++started === 2) resolve();
    };
  });
  const events: string[] = [];
  const run = await resumable.run("go", { runId, onEvent: (event) => events.push(event.type) });
  run.result().catch(() => undefined);
  await bothInFlight;
  await resumable.cancel(runId);
  await assert.rejects(run.result(), /has been cancelled/);
  await resumeElsewhere(resumable, runId, 'tool "charge" (call r2), tool "fetch" (call r3)');
  const result = await resumable.retrieve(runId).result();
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, "Resumed.");
  const key = (id: string) => `${runId}:${id}`;
  assert.deepEqual(sideEffects.sort(), [`charge 2 ${key("r2")}`, `fetch 3 ${key("r3")}`, `fetch 3 ${key("r3")}`, `record 1 ${key("r1")}`]);
  const results = result.newMessages.flatMap((message) => (message.role === "tool" ? [[message.toolCallId, message.content, message.isError === true]] : []));
  assert.deepEqual(results, [
    ["r1", "record 1 ok", false],
    ["r2", "Interrupted: the process stopped while this tool ran; it was not retried", true],
    ["r3", "fetch 3 ok", false],
  ]);
  assert.equal(result.toolCalls, 3);
  assert.equal(INTERRUPTED, results[1]?.[1]);
  // `onEvent` was the cancelled call's: the resumed execution's events go to the observers, not to it.
  assert.equal(events.filter((type) => type === "run-start").length, 1, events.join(" "));
});

test("show lists a run's steps: a tool call's start marker goes with the model call that asked for it, or is a step of its own when the call begins after an approval", { timeout: 60_000 }, async () => {
  // agentloop's steps (DBOS's own, named "DBOS.<call>", left out).
  const names = async (durable: DurableAgent, runId: string) => ((await durable.show(runId))?.steps ?? []).map((step) => step.name).filter((name) => !name.startsWith("DBOS."));
  const echoed = await echoer.run("echo", { runId: `run_steps_${randomUUID().slice(0, 8)}` });
  await echoed.result();
  assert.deepEqual(await names(echoer, echoed.runId), ["model", "tool:echo", "model"]);
  // An idempotent tool's call is one step, named as the others.
  const idempotent = await idempotentEchoer.run("echo");
  assert.equal((await idempotent.result()).text, "Echoed.");
  assert.deepEqual(await names(idempotentEchoer, idempotent.runId), ["model", "tool:echo", "model"]);
  const runId = `run_steps_wait_${randomUUID().slice(0, 8)}`;
  const run = await twoWaits.run("do both", { runId, sessionId: `sess_${randomUUID().slice(0, 8)}` });
  await waitingOn(twoWaits, runId, "a1");
  await twoWaits.decide(runId, { a1: { approve: true } });
  await waitingOn(twoWaits, runId, "b1");
  await twoWaits.decide(runId, { b1: { approve: false } });
  assert.equal((await run.result()).text, "Both done.");
  assert.deepEqual(await names(twoWaits, runId), ["history", "model", "checkpoint-id", "tool-started:first", "tool:first", "model", "checkpoint-id", "model"]);
});

test("two approval waits of one run that expire: each call is rejected as expired, expiredApprovals names both waits", { timeout: 60_000 }, async () => {
  executed.length = 0;
  const runId = `run_expire_twice_${randomUUID().slice(0, 8)}`;
  const run = await expiring.run("do both", { runId });
  const result = await run.result();
  assert.equal(result.text, "Nothing done.");
  const rejections = result.newMessages.flatMap((message) => (message.role === "tool" ? [message.content] : []));
  assert.deepEqual(rejections, ["Rejected: approval expired", "Rejected: approval expired"]);
  assert.deepEqual(executed, []);
  const expired = await expiring.expiredApprovals(runId);
  assert.equal(expired.length, 2);
  assert.notEqual(expired[0], expired[1]);
});

test("a toolset's tools in a durable run are checkpointed steps; a new version of its tools is used by the next run", { timeout: 60_000 }, async () => {
  toolsVersion = 1;
  const first = await cataloguer.run("look", { runId: `run_toolset_${randomUUID().slice(0, 8)}` });
  const result = await first.result();
  assert.equal(result.text, "Looked.");
  assert.match(JSON.stringify(result.newMessages), /looked up v1/);
  assert.deepEqual(((await cataloguer.show(first.runId))?.steps ?? []).map((step) => step.name), ["model", "tool:lookup", "model"]);
  toolsVersion = 2;
  const second = await (await cataloguer.run("look")).result();
  assert.match(JSON.stringify(second.newMessages), /looked up v2/);
  toolsVersion = 2;
  const third = await (await cataloguer.run("look")).result();
  assert.match(JSON.stringify(third.newMessages), /looked up v2/);
});

test("a run cancelled during a model call: the call's request is aborted and the run ends cancelled", { timeout: 60_000 }, async () => {
  modelAborted.length = 0;
  const started = new Promise<void>((resolve) => {
    modelStarted = resolve;
  });
  const deltas: string[] = [];
  const run = await slow.run("think", { onEvent: (event) => event.type === "text-delta" && deltas.push(event.delta) });
  await started;
  await slow.cancel(run.runId);
  await assert.rejects(run.result(), /has been cancelled/);
  assert.deepEqual(modelAborted, ["aborted"]);
  assert.deepEqual(deltas, ["thinking"], "the live events came as they were streamed");
  assert.equal((await slow.show(run.runId))?.status, "CANCELLED");
});

// A model that streams a delta, then holds its answer until the test lets it go (one gate per call).
const heldCalls: Array<{ release: () => void }> = [];
const heldWaiters: Array<() => void> = [];
const heldModel: Model = {
  provider: "test",
  modelId: "held",
  async *stream(): AsyncGenerator<ModelEvent> {
    yield { type: "response-start", model: "held" };
    yield { type: "text-start", id: "t" };
    yield { type: "text-delta", id: "t", delta: "live" };
    await new Promise<void>((release) => {
      heldCalls.push({ release });
      for (const wake of heldWaiters.splice(0)) wake();
    });
    yield { type: "text-end", id: "t" };
    yield { type: "finish", reason: { unified: "stop", raw: "stop" } };
  },
};
/** Resolves once `count` model calls of `heldModel` hold their answer. */
async function held(count: number): Promise<void> {
  while (heldCalls.length < count) await new Promise<void>((resolve) => heldWaiters.push(resolve));
}
const deltas = (_spec: unknown, _runId: string): JournalEncoder => ({
  start: () => ["start"],
  event: (event: LoopEvent) => (event.type === "text-delta" ? `delta:${event.delta}` : undefined),
  end: async (result) => [`end:${result.state}`],
});
const live = durableAgent(new Agent({ name: "runs-live-journal", model: heldModel }), { ...shared, journal: deltas });

/** Reads a run's journal, noting each entry; `saw(item)` resolves when the item came. */
function follow(durable: DurableAgent, runId: string) {
  const entries: JournalEntry[] = [];
  const waiting = new Map<string, () => void>();
  const done = (async () => {
    for await (const entry of durable.readJournal(runId)) {
      entries.push(entry);
      waiting.get(entry.item)?.();
    }
  })();
  const saw = (item: string) => (entries.some((entry) => entry.item === item) ? Promise.resolve() : new Promise<void>((resolve) => waiting.set(item, resolve)));
  return { entries, done, saw };
}

test("readers attached to a queued run before it starts here follow it live: the items of a model call still streaming reach each of them, once, at their positions", { timeout: 60_000 }, async () => {
  heldCalls.length = 0;
  const key = `live-${randomUUID().slice(0, 8)}`;
  const first = `run_live_first_${randomUUID().slice(0, 8)}`;
  const queued = `run_live_queued_${randomUUID().slice(0, 8)}`;
  // The key's first run holds its model call: the second waits on the queue behind it.
  const firstRun = await live.run("go", { runId: first, partitionKey: key, journal: "j" });
  await held(1);
  const queuedRun = await live.run("go", { runId: queued, partitionKey: key, journal: "j" });
  assert.equal((await live.show(queued))?.status, "ENQUEUED");
  const readers = [follow(live, queued), follow(live, queued)];
  heldCalls[0]!.release();
  assert.equal((await firstRun.result()).state, "COMPLETED");
  // The queued run starts here; its model call holds its answer after streaming "live", which is
  // written to the database only before the run's next step: a reader gets it from this process.
  await held(2);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve("not seen while the model call streams"), 5_000);
  });
  for (const reader of readers) assert.equal(await Promise.race([reader.saw("delta:live").then(() => "seen"), late]), "seen");
  clearTimeout(timer);
  heldCalls[1]!.release();
  assert.equal((await queuedRun.result()).state, "COMPLETED");
  for (const reader of readers) {
    await reader.done;
    assert.deepEqual(reader.entries, [
      { seq: 1, item: "start" },
      { seq: 2, item: "delta:live" },
      { seq: 3, item: "end:COMPLETED" },
    ]);
  }
});

test("reading the journal of a run that does not exist (not started yet, or a wrong id) fails, naming the run, not an empty journal nor a wait", { timeout: 60_000 }, async () => {
  const runId = `run_missing_${randomUUID().slice(0, 8)}`;
  const entries: JournalEntry[] = [];
  await assert.rejects(
    (async () => {
      for await (const entry of live.readJournal(runId)) entries.push(entry);
    })(),
    (error: Error) => {
      assert.equal(error.message, `durable readJournal: no run "${runId}" (a run's journal is readable once run() has returned its id)`);
      return true;
    },
  );
  assert.deepEqual(entries, []);
  await assert.rejects(collect(live.readJournal(runId, { after: 3 })), /^Error: durable readJournal: no run "run_missing_/);
});
