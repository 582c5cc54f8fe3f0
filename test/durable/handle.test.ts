// The durable agent's handle in this process, on real PostgreSQL (its own DBOS schema): the launch rules, and what list/show/approvalWait/expiredApprovals/
// exists/decide/recover tell a user about runs waiting for approvals, expired, queued and finished.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import pg from "pg";
import { APPROVAL_EXPIRED, type DurableAgent, durableAgent, durableModel, durableTool, type JournalEncoder, type JournalEntry } from "../../src/durable/index.js";
import { AgentLoopError } from "../../src/errors.js";
import { Agent, defineTool, type LoopEvent, type Model, type ModelEvent, ScriptedModel } from "../../src/index.js";
import { postgresUrl } from "../memory/postgres-server.js";

const schema = `dbos_handle_${randomUUID().slice(0, 8)}`;
const queueName = `handle_queue_${randomUUID().slice(0, 8)}`;
const paid: number[] = [];
const pay = defineTool<{ amount: number }>({
  name: "pay",
  description: "Pays an amount",
  parameters: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
  needsApproval: true,
  execute: ({ amount }) => {
    paid.push(amount);
    return `paid ${amount}`;
  },
});
const twoPayments = JSON.stringify({
  tool_calls: [
    { id: "p1", name: "pay", arguments: { amount: 1 } },
    { id: "p2", name: "pay", arguments: { amount: 2 } },
  ],
});
/** A journal of a run's legs: its spec at each start, the tools it calls, its state and text at each end. */
const journal = (spec: unknown): JournalEncoder => ({
  start: () => [`start:${String(spec)}`],
  event: (event: LoopEvent) => (event.type === "tool-start" ? `call:${event.name}` : undefined),
  end: async (result) => [`end:${result.state}:${result.text}`],
});
const options = { databaseUrl: postgresUrl(), schema, logLevel: "error" as const, journal };
// Every durable agent is registered before the launch (DBOS registers workflows before it starts).
const payer = durableAgent(new Agent({ name: "handle-payer", model: new ScriptedModel([twoPayments, "Paid."]), tools: [pay] }), {
  ...options,
  queue: { name: queueName, pollingIntervalMs: 20 },
});
const expiring = durableAgent(
  new Agent({ name: "handle-expiring", model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "x1", name: "pay", arguments: { amount: 9 } }] }), "Gave up."]), tools: [pay], approvalTimeoutMs: 300 }),
  options,
);
const greeter = durableAgent(new Agent({ name: "handle-greeter", model: new ScriptedModel(["hello"]) }), options);
const echo = defineTool<{ text: string }>({
  name: "echo",
  description: "echo",
  parameters: { type: "object", properties: { text: { type: "string" } } },
  execute: ({ text }) => `echo ${text}`,
});
const echoer = durableAgent(new Agent({ name: "handle-echoer", model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "e1", name: "echo", arguments: { text: "a" } }] }), "Echoed."]), tools: [echo] }), options);
// Tools whose outputs a step stores as JSON: an exception (its name and message), nothing, a Date.
const odd = [
  defineTool({ name: "thrower", description: "throws", parameters: { type: "object" }, execute: () => { throw new RangeError("out of range"); } }),
  defineTool({ name: "nothing", description: "returns nothing", parameters: { type: "object" }, execute: () => undefined as never }),
  defineTool({ name: "dated", description: "returns a date", parameters: { type: "object" }, execute: () => ({ at: new Date(0), n: 1 }) as never }),
  defineTool({ name: "stringly", description: "throws a string", parameters: { type: "object" }, execute: () => { throw "plain failure"; } }),
];
const oddScript = [JSON.stringify({ tool_calls: odd.map((tool, index) => ({ id: `o${index}`, name: tool.name, arguments: {} })) }), "Handled."];
const oddAgent = new Agent({ name: "handle-odd", model: new ScriptedModel(oddScript), tools: odd });
const oddDurable = durableAgent(oddAgent, options);
/** A model that fails: before its first event (a provider error), or mid-stream with a thrown error. */
function failingModel(kind: "provider" | "thrown"): Model {
  return {
    provider: "failing",
    modelId: kind,
    async *stream(): AsyncGenerator<ModelEvent> {
      if (kind === "provider") {
        yield { type: "error", error: new AgentLoopError("rate_limit", "slow down", { status: 429, provider: "failing" }) };
        return;
      }
      yield { type: "response-start", model: kind };
      throw new Error("connection reset");
    },
  };
}
const failingProvider = durableAgent(new Agent({ name: "handle-failing-provider", model: failingModel("provider") }), options);
const failingThrown = durableAgent(new Agent({ name: "handle-failing-thrown", model: failingModel("thrown") }), options);
const elsewhere = durableAgent(new Agent({ name: "handle-elsewhere", model: new ScriptedModel(["hi"]) }), { databaseUrl: postgresUrl().replace(/^postgres:/, "postgresql:"), schema });

/** Warnings this process printed (DBOS's pool must not make pg warn about queued queries). */
const warnings: string[] = [];
process.on("warning", (warning) => warnings.push(`${warning.name}: ${warning.message}`));

after(async () => {
  await payer.shutdown();
  await payer.shutdown();
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

async function collect(entries: AsyncIterable<JournalEntry>): Promise<Array<[number, string]>> {
  const items: Array<[number, string]> = [];
  for await (const { seq, item } of entries) items.push([seq, item]);
  return items;
}

/** Polls what a run waits at until it waits (the wait is announced after the approval-request event). */
async function waiting(durable: DurableAgent, runId: string) {
  for (let attempt = 0; attempt < 600; attempt++) {
    const wait = await durable.approvalWait(runId);
    if (wait) return wait;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`run ${runId} never waited for approvals`);
}

// Launched once for the file, so that each test passes alone (the mutation runs select single tests).
before(async () => {
  await Promise.all([payer.launch(), greeter.launch()]);
});

test("launch(): again for the same database is the same launch; another database in this process is refused", async () => {
  await Promise.all([expiring.launch(), greeter.launch()]);
  await assert.rejects(elsewhere.launch(), /durableAgent: DBOS is already launched in this process with another database/);
});

test("a run waiting for approvals: approvalWait, show and list tell what it waits on; a decision for another wait is not taken; a call left undecided is rejected", { timeout: 60_000 }, async () => {
  paid.length = 0;
  const runId = `run_wait_${randomUUID().slice(0, 8)}`;
  const sessionId = `sess_${randomUUID().slice(0, 8)}`;
  const run = await payer.run("pay both", { runId, sessionId });
  const wait = await waiting(payer, runId);
  assert.equal(wait.resumeAt, 0);
  assert.equal(wait.result.state, "INTERRUPTED");
  const checkpointId = wait.result.checkpoint?.id;
  assert.ok(checkpointId);
  assert.deepEqual(await payer.expiredApprovals(runId), []);

  const shown = await payer.show(runId);
  assert.equal(shown?.runId, runId);
  assert.equal(shown?.status, "PENDING");
  assert.equal(shown?.sessionId, sessionId);
  assert.equal(shown?.input, "pay both");
  assert.equal(typeof shown?.executorId, "string");
  assert.equal(shown?.queue, undefined);
  assert.ok(!Number.isNaN(Date.parse(shown?.createdAt ?? "")));
  assert.deepEqual(shown?.pendingApprovals, [
    { toolCallId: "p1", tool: "pay", arguments: { amount: 1 } },
    { toolCallId: "p2", tool: "pay", arguments: { amount: 2 } },
  ]);
  // Its steps in order: the model call, the wait's checkpoint id, then DBOS's own (the events announcing the wait).
  const steps = shown?.steps?.map((step) => step.name) ?? [];
  assert.deepEqual(steps.slice(0, 3), ["model", "checkpoint-id", "DBOS.setEvent"]);
  assert.ok(shown?.steps?.every((step) => Number.isInteger(step.id) && step.error === undefined));
  assert.equal(shown?.result, undefined, "no result while it waits");
  assert.deepEqual(
    (await payer.list({ sessionId })).map((info) => [info.runId, info.status]),
    [[runId, "PENDING"]],
  );
  assert.ok((await payer.list({ status: "PENDING" })).some((info) => info.runId === runId));
  assert.ok(!(await payer.list({ status: "SUCCESS" })).some((info) => info.runId === runId));
  assert.equal(await payer.exists(runId), true);

  // A decision naming another wait of the run is left alone: this one approves both, and is not taken.
  await payer.decide(runId, { p1: { approve: true }, p2: { approve: true } }, { checkpointId: "ckpt_other" });
  await payer.decide(runId, { p1: { approve: true } }, { checkpointId });
  const result = await run.result();
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.text, "Paid.");
  assert.deepEqual(paid, [1]);
  assert.match(JSON.stringify(result.newMessages), /Rejected: no decision given/);

  const done = await payer.show(runId);
  assert.equal(done?.status, "SUCCESS");
  assert.deepEqual(done?.result, { state: "COMPLETED", reason: result.reason, text: "Paid." });
  assert.equal(done?.pendingApprovals, undefined);
  assert.ok(done?.updatedAt && !Number.isNaN(Date.parse(done.updatedAt)));
  assert.equal(await payer.approvalWait(runId), undefined, "it waits no more");
  assert.equal((await payer.retrieve(runId).result()).text, "Paid.");
  assert.equal((await payer.list({ sessionId, status: "SUCCESS" }))[0]?.runId, runId);
});

test("an approval not decided within approvalTimeoutMs expires: the call is rejected, and expiredApprovals names the wait", { timeout: 60_000 }, async () => {
  paid.length = 0;
  const runId = `run_expire_${randomUUID().slice(0, 8)}`;
  const run = await expiring.run("pay", { runId });
  const wait = await waiting(expiring, runId);
  const result = await run.result();
  assert.equal(result.text, "Gave up.");
  assert.match(JSON.stringify(result.newMessages), /Rejected: approval expired/);
  assert.equal(APPROVAL_EXPIRED, "approval expired");
  assert.deepEqual(paid, []);
  assert.deepEqual(await expiring.expiredApprovals(runId), [wait.result.checkpoint?.id]);
});

test("decide refuses decisions that are not an object; exists, show and recover answer for unknown runs and executors", async () => {
  for (const decisions of [null, "approve"]) {
    await assert.rejects(payer.decide("run_x", decisions as never), (error: unknown) => error instanceof TypeError && /durable decide: decisions must be an object keyed by tool call id/.test(error.message));
  }
  assert.equal(await payer.exists(`run_unknown_${randomUUID()}`), false);
  assert.equal(await payer.show(`run_unknown_${randomUUID()}`), undefined);
  assert.deepEqual(await payer.recover([]), []);
  assert.deepEqual(await payer.recover([`executor_${randomUUID()}`]), []);
  assert.deepEqual(await payer.expiredApprovals(`run_unknown_${randomUUID()}`), []);
  assert.equal(await payer.approvalWait(`run_unknown_${randomUUID()}`), undefined);
});

test("runs are the agent's own: another agent's run does not exist for it; list is most recent first, with a limit; a run id used again is that run", { timeout: 60_000 }, async () => {
  const first = await greeter.run("hi", { runId: `run_greet_${randomUUID().slice(0, 8)}` });
  assert.equal((await first.result()).text, "hello");
  const second = await greeter.run("hi again", { sessionId: "greet-session" });
  assert.match(second.runId, /^run_[0-9a-f-]{36}$/);
  assert.equal((await second.result()).text, "hello");
  assert.equal(await greeter.exists(first.runId), true);
  assert.equal(await payer.exists(first.runId), false, "a run of another agent");
  assert.equal(await payer.show(first.runId), undefined, "not shown by another agent");
  assert.deepEqual(
    (await greeter.list({ limit: 1 })).map((info) => info.runId),
    [second.runId],
  );
  // The two most recent (the runs of an earlier run of this test in the same process come after them).
  const listed = (await greeter.list()).slice(0, 2);
  assert.deepEqual(
    listed.map((info) => info.runId),
    [second.runId, first.runId],
  );
  assert.equal(listed[0]?.sessionId, "greet-session");
  assert.equal(listed[1]?.sessionId, undefined);
  assert.deepEqual(listed[0]?.result, { state: "COMPLETED", reason: listed[0]?.result?.reason, text: "hello" });
  const count = (await greeter.list()).length;
  const again = await greeter.run("something else", { runId: first.runId });
  assert.equal((await again.result()).text, "hello");
  assert.equal((await greeter.list()).length, count, "no third run");
  assert.deepEqual(
    (await greeter.list({ limit: 1 })).map((info) => info.runId),
    [second.runId],
  );
  assert.equal((await greeter.show(first.runId))?.input, "hi");
  // A session's runs with a limit: the most recent of that session.
  const third = await greeter.run("and again", { sessionId: "greet-session" });
  assert.equal((await third.result()).text, "hello");
  assert.deepEqual(
    (await greeter.list({ sessionId: "greet-session", limit: 1 })).map((info) => info.runId),
    [third.runId],
  );
  assert.deepEqual(
    (await greeter.list({ sessionId: "greet-session" })).slice(0, 2).map((info) => info.runId),
    [third.runId, second.runId],
  );
});

test("a run with a partition key goes through the queue, and show names it", { timeout: 60_000 }, async () => {
  paid.length = 0;
  const runId = `run_queued_${randomUUID().slice(0, 8)}`;
  const run = await payer.run("pay both", { runId, partitionKey: "customer-1" });
  await waiting(payer, runId);
  assert.equal((await payer.show(runId))?.queue, queueName);
  await payer.decide(runId, { p1: { approve: true }, p2: { approve: false, reason: "no" } });
  assert.equal((await run.result()).text, "Paid.");
  assert.deepEqual(paid, [1]);
  assert.equal((await payer.list({ limit: 10 })).find((info) => info.runId === runId)?.queue, queueName);
});

test("a run's journal: a reader attached as the run starts reads it live to its end; later readers read it from the database after any position", { timeout: 60_000 }, async () => {
  const runId = `run_journal_${randomUUID().slice(0, 8)}`;
  const run = await echoer.run("echo a", { runId, journal: "spec-1" });
  const early = collect(echoer.readJournal(runId));
  assert.equal((await run.result()).text, "Echoed.");
  const expected: Array<[number, string]> = [
    [1, "start:spec-1"],
    [2, "call:echo"],
    [3, "end:COMPLETED:Echoed."],
  ];
  assert.deepEqual(await early, expected);
  assert.deepEqual(await collect(echoer.readJournal(runId)), expected);
  assert.deepEqual(await collect(echoer.readJournal(runId, { after: 1 })), expected.slice(1));
  assert.deepEqual(await collect(echoer.readJournal(runId, { after: 3 })), []);
});

test("a journaled run that waits for approvals ends its leg's items, tells where the next leg starts, and goes on in the same journal", { timeout: 60_000 }, async () => {
  paid.length = 0;
  const runId = `run_journal_wait_${randomUUID().slice(0, 8)}`;
  const run = await payer.run("pay both", { runId, journal: "legs" });
  const wait = await waiting(payer, runId);
  assert.equal(wait.resumeAt, 2, "after the first leg's start and end");
  const reader = collect(payer.readJournal(runId, { after: 1 }));
  await payer.decide(runId, { p1: { approve: true }, p2: { approve: true } });
  assert.equal((await run.result()).text, "Paid.");
  assert.deepEqual(paid.sort(), [1, 2]);
  const all = await collect(payer.readJournal(runId));
  assert.deepEqual(all, [
    [1, "start:legs"],
    [2, "end:INTERRUPTED:"],
    [3, "start:legs"],
    [4, "call:pay"],
    [5, "call:pay"],
    [6, "end:COMPLETED:Paid."],
  ]);
  assert.deepEqual(await reader, all.slice(1));
});

test("a durable run's tool results are the plain run's: a thrown error (its name and message), no output, a non-JSON value", { timeout: 60_000 }, async () => {
  const plain = await oddAgent.run("go");
  const durable = await (await oddDurable.run("go")).result();
  assert.equal(durable.text, "Handled.");
  const results = (messages: typeof plain.newMessages) => messages.flatMap((message) => (message.role === "tool" ? [[message.toolName, message.content, message.isError === true]] : []));
  assert.deepEqual(results(durable.newMessages), results(plain.newMessages));
  assert.match(JSON.stringify(results(durable.newMessages)), /RangeError|out of range/);
});

test("a durable run whose model fails ends as the plain run does, its error's kind and message kept", { timeout: 60_000 }, async () => {
  for (const durable of [failingProvider, failingThrown]) {
    const plain = await durable.agent.run("hi");
    const result = await (await durable.run("hi")).result();
    assert.equal(result.state, plain.state);
    assert.equal(result.reason, plain.reason);
    assert.deepEqual(result.error, { kind: plain.error?.kind, message: plain.error?.message });
  }
});

test("outside a workflow, a durable model and tool are the model and tool themselves", async () => {
  const scripted = new ScriptedModel(["plain answer"]);
  const model = durableModel(scripted);
  assert.equal(model.provider, scripted.provider);
  assert.equal(model.modelId, scripted.modelId);
  assert.equal(model.forRun, undefined, "no forRun when the model has none");
  const perRun = durableModel({ ...failingModel("provider"), forRun: () => new ScriptedModel(["per run"]) });
  assert.equal(typeof perRun.forRun, "function");
  assert.equal((perRun.forRun!() as Model & { durable?: boolean }).durable, true);
  assert.equal((await new Agent({ model }).run("hi")).text, "plain answer");
  const tool = durableTool(odd[2]);
  assert.equal(tool.name, "dated");
  assert.equal(tool.description, "returns a date");
  const output = await tool.execute({} as never, { toolCallId: "c", idempotencyKey: "k", signal: new AbortController().signal } as never);
  assert.ok((output as { at: unknown }).at instanceof Date, "run as is: no JSON copy outside a workflow");
});

test("a run cancelled while it waits for approvals stops (its result says so); resumed, it waits again and a decision completes it", { timeout: 60_000 }, async () => {
  paid.length = 0;
  const runId = `run_cancel_${randomUUID().slice(0, 8)}`;
  const run = await payer.run("pay both", { runId });
  await waiting(payer, runId);
  const cancelledAt = Date.now();
  await payer.cancel(runId);
  const cancelled = await payer.show(runId);
  assert.equal(cancelled?.status, "CANCELLED");
  assert.equal(cancelled?.pendingApprovals, undefined, "a cancelled run waits on no decision");
  await assert.rejects(run.result(), new RegExp(`${runId} has been cancelled`));
  await payer.resume(runId);
  assert.notEqual((await payer.show(runId))?.status, "CANCELLED");
  await payer.decide(runId, { p1: { approve: true }, p2: { approve: true } });
  const result = await payer.retrieve(runId).result();
  // The cancelled execution's wait for decisions stopped at the cancel, so the resumed run started at
  // once (not when DBOS next polled that wait: 10 s).
  assert.ok(Date.now() - cancelledAt < 5_000, `resumed and decided ${Date.now() - cancelledAt} ms after the cancel`);
  assert.equal(result.text, "Paid.");
  assert.deepEqual(paid.sort(), [1, 2]);
  assert.equal((await payer.show(runId))?.status, "SUCCESS");
});

test("nothing above made the pg driver warn (DBOS's session settings go in the connection's options)", () => {
  assert.deepEqual(
    warnings.filter((warning) => /DeprecationWarning/.test(warning)),
    [],
  );
});
