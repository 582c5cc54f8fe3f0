// `recover` (src/durable/admin.ts) in this process: an executor's unfinished runs put back on the
// queue each ran from (a run started without one on DBOS's own), where this process takes them; each
// then goes on from its checkpoints (a run waiting for approval waits again, and its decision
// completes it, the approved call run once); and the queue's partitions (src/durable/launch.ts
// registers it): one run at a time per key. Real PostgreSQL; DBOS as shared.ts launches it (its executor id and queue).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { type DurableAgent, durableAgent } from "../../../src/durable/index.js";
import { Agent, defineTool, ScriptedModel } from "../../../src/index.js";
import { executorId, queueName, shared } from "./shared.js";

const paid: string[] = [];
const pay = defineTool<{ amount: number }>({
  name: "pay",
  description: "Pays an amount",
  parameters: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
  needsApproval: true,
  execute: ({ amount }, context) => {
    paid.push(`${context.runId} ${amount}`);
    return `paid ${amount}`;
  },
});
const payOnce = JSON.stringify({ tool_calls: [{ id: "p1", name: "pay", arguments: { amount: 5 } }] });
const payer = durableAgent(new Agent({ name: "admin-payer", model: new ScriptedModel([payOnce, "Paid."]), tools: [pay] }), shared);



async function waiting(durable: DurableAgent, runId: string) {
  for (let attempt = 0; attempt < 600; attempt++) {
    const wait = await durable.approvalWait(runId);
    if (wait) return wait;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`run ${runId} never waited for approvals`);
}

test("recover puts an executor's unfinished runs back on the queue each ran from; each waits again, and a decision completes it once", { timeout: 60_000 }, async () => {
  paid.length = 0;
  const plain = `run_recover_plain_${randomUUID().slice(0, 8)}`;
  const queued = `run_recover_queued_${randomUUID().slice(0, 8)}`;
  await payer.run("pay", { runId: plain });
  await payer.run("pay", { runId: queued, partitionKey: "customer-1" });
  await Promise.all([waiting(payer, plain), waiting(payer, queued)]);
  assert.equal((await payer.show(plain))?.queue, undefined);
  assert.equal((await payer.show(queued))?.queue, queueName);

  // A finished run of the executor is not recovered.
  const finished = `run_recover_done_${randomUUID().slice(0, 8)}`;
  await payer.run("pay", { runId: finished });
  await waiting(payer, finished);
  await payer.decide(finished, { p1: { approve: false } });
  await payer.retrieve(finished).result();
  const recovered = await payer.recover([executorId, `gone-${randomUUID().slice(0, 8)}`]);
  assert.ok(!recovered.includes(finished), "a finished run is not recovered");
  assert.deepEqual(recovered.filter((id) => id === plain || id === queued).sort(), [plain, queued].sort());
  assert.equal((await payer.show(queued))?.queue, queueName, "back on its own queue");
  const plainQueue = (await payer.show(plain))?.queue;
  assert.ok(plainQueue !== undefined && plainQueue !== queueName, `a run started without a queue goes to DBOS's own, got ${plainQueue}`);

  for (const runId of [plain, queued]) {
    await waiting(payer, runId);
    await payer.decide(runId, { p1: { approve: true } });
    const result = await payer.retrieve(runId).result();
    assert.equal(result.text, "Paid.");
  }
  assert.deepEqual(paid.sort(), [`${plain} 5`, `${queued} 5`].sort());
});

test("the queue runs one run at a time per partition key: a second run of the key waits on the queue while the first waits for its approval", { timeout: 60_000 }, async () => {
  paid.length = 0;
  const key = `customer-${randomUUID().slice(0, 8)}`;
  const first = `run_partition_1_${randomUUID().slice(0, 8)}`;
  const second = `run_partition_2_${randomUUID().slice(0, 8)}`;
  await payer.run("pay", { runId: first, partitionKey: key });
  await waiting(payer, first);
  await payer.run("pay", { runId: second, partitionKey: key });
  // Another key is not held up by this one.
  const other = `run_partition_other_${randomUUID().slice(0, 8)}`;
  await payer.run("pay", { runId: other, partitionKey: `${key}-other` });
  await waiting(payer, other);
  assert.equal((await payer.show(second))?.status, "ENQUEUED");
  await payer.decide(first, { p1: { approve: true } });
  assert.equal((await payer.retrieve(first).result()).text, "Paid.");
  await waiting(payer, second);
  for (const runId of [second, other]) {
    await payer.decide(runId, { p1: { approve: false } });
    assert.equal((await payer.retrieve(runId).result()).text, "Paid.");
  }
  assert.deepEqual(paid, [`${first} 5`]);
});

test("a run of a partition cancelled and resumed goes back on its queue: it waits behind the key's running run, then runs", { timeout: 60_000 }, async () => {
  paid.length = 0;
  const key = `customer-${randomUUID().slice(0, 8)}`;
  const resumed = `run_resume_queued_${randomUUID().slice(0, 8)}`;
  const running = `run_resume_running_${randomUUID().slice(0, 8)}`;
  await payer.run("pay", { runId: resumed, partitionKey: key });
  await waiting(payer, resumed);
  await payer.cancel(resumed);
  // The key's partition is free: the next run of the key runs (and waits for its approval).
  await payer.run("pay", { runId: running, partitionKey: key });
  await waiting(payer, running);
  await payer.resume(resumed);
  assert.equal((await payer.show(resumed))?.queue, queueName, "back on its own queue, not DBOS's internal one");
  // The queue has dispatched since the resume (a run of another key started after it waits for its
  // approval), and the resumed run still waits behind the key's running run.
  const other = `run_resume_other_${randomUUID().slice(0, 8)}`;
  await payer.run("pay", { runId: other, partitionKey: `${key}-other` });
  await waiting(payer, other);
  assert.equal((await payer.show(resumed))?.status, "ENQUEUED");
  await payer.decide(running, { p1: { approve: true } });
  assert.equal((await payer.retrieve(running).result()).text, "Paid.");
  for (const runId of [resumed, other]) {
    await payer.decide(runId, { p1: { approve: true } });
    assert.equal((await payer.retrieve(runId).result()).text, "Paid.");
  }
  assert.deepEqual(paid.sort(), [`${running} 5`, `${resumed} 5`, `${other} 5`].sort());
});
