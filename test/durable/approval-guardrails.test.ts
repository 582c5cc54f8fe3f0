// A durable run's approval resumes through the same wave gate as any resume: every call of the
// stopped wave passes the guardrails again, so a denied call never runs. Real PostgreSQL, its own schema.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import pg from "pg";
import { type DurableAgent, durableAgent } from "../../src/durable/index.js";
import { Agent, type LoopEvent, ScriptedModel } from "../../src/index.js";
import { postgresUrl } from "../memory/postgres-server.js";
import { recordingTools } from "../server/helpers.js";

const schema = `dbos_guarded_${randomUUID().slice(0, 8)}`;
const ran: string[] = [];
const tool = recordingTools(ran);
const denied = new Set(["wipe"]);
const wave = ["pay", "refund", "wipe", "look"].map((name) => ({ id: `c_${name}`, name, arguments: {} }));
const agent = new Agent({
  name: "shop",
  model: new ScriptedModel([JSON.stringify({ tool_calls: wave }), "Settled."]),
  tools: [tool("pay", true), tool("refund", true), tool("wipe"), tool("look")],
  guardrails: { tool: ({ toolName }) => (denied.has(toolName) ? { allow: false, reason: `${toolName} is denied` } : { allow: true }) },
});
let durable: DurableAgent;

before(async () => {
  durable = durableAgent(agent, { databaseUrl: postgresUrl(), schema, logLevel: "error" });
  await durable.launch();
});

after(async () => {
  await durable.shutdown();
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

test("a durable run's approval: the guardrails hold for every call of the wave, a call denied since the request never runs", async () => {
  // This test's state its own (it may run again in one process): the policy as it starts.
  ran.length = 0;
  denied.delete("refund");
  let requested!: () => void;
  const request = new Promise<void>((resolve) => {
    requested = resolve;
  });
  const results: Array<[string, unknown]> = [];
  const onEvent = (event: LoopEvent) => {
    if (event.type === "approval-request") requested();
    if (event.type === "tool-end") results.push([event.toolCallId, event.output]);
  };
  const run = await durable.run("settle", { runId: `run_guarded_${randomUUID().slice(0, 8)}`, onEvent });
  await request;
  assert.deepEqual(ran, []);
  denied.add("refund"); // the policy changed while the approvals waited
  await durable.decide(run.runId, { c_pay: { approve: true }, c_refund: { approve: true } });
  const result = await run.result();
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(ran.sort(), ["look", "pay"]);
  // tool-end events come as the calls end; in the model's order:
  results.sort((a, b) => wave.findIndex((call) => call.id === a[0]) - wave.findIndex((call) => call.id === b[0]));
  assert.deepEqual(results, [
    ["c_pay", "pay done"],
    ["c_refund", "Tool denied by guardrail: refund is denied"],
    ["c_wipe", "Tool denied by guardrail: wipe is denied"],
    ["c_look", "look done"],
  ]);
});
