// Approvals in a durable run: the run stops at the approval, the workflow waits for a DBOS message,
// `decide` (from any process on the same database) resumes it. Real PostgreSQL, its own schema. Each
// test runs with the scripted model, with the Chat Completions adapter on a loopback
// OpenAI-compatible server, and with a model whose stream cleanup is asynchronous (models.ts).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import pg from "pg";
import { type DurableAgent, durableAgent } from "../../src/durable/index.js";
import { Agent, defineTool, type LoopEvent, type Model, ScriptedModel } from "../../src/index.js";
import { postgresUrl } from "../memory/postgres-server.js";
import { MODEL_KINDS, planModel, scriptPlan } from "./models.js";

const schema = `dbos_approvals_${randomUUID().slice(0, 8)}`;
const executed: number[] = [];
const transfer = defineTool<{ amount: number }>({
  name: "transfer",
  description: "Moves money",
  parameters: { type: "object", properties: { amount: { type: "number" } }, required: ["amount"] },
  needsApproval: true,
  execute: ({ amount }) => {
    executed.push(amount);
    return `moved ${amount} EUR`;
  },
});
const script = [JSON.stringify({ tool_calls: [{ id: "t1", name: "transfer", arguments: { amount: 500 } }] }), "Done."];

const echo = defineTool<{ text: string }>({
  name: "echo",
  description: "echo",
  parameters: { type: "object", properties: { text: { type: "string" } } },
  execute: ({ text }) => `echo ${text}`,
});
const echoScript = [JSON.stringify({ tool_calls: [{ id: "e1", name: "echo", arguments: { text: "a" } }, { id: "e2", name: "echo", arguments: { text: "b" } }] }), "Both echoed."];

const KINDS = ["scripted", ...MODEL_KINDS] as const;
type Kind = (typeof KINDS)[number];
/** Per model kind: the payer and the echoer, plain and durable. */
const agents = {} as Record<Kind, { durable: DurableAgent; echoAgent: Agent; durableEcho: DurableAgent }>;
const closers: Array<() => Promise<void>> = [];

async function modelOf(kind: Kind, entries: string[]): Promise<Model> {
  if (kind === "scripted") return new ScriptedModel(entries);
  const { model, close } = await planModel(kind, scriptPlan(entries));
  closers.push(close);
  return model;
}

before(async () => {
  // Every durable agent is registered before the launch.
  for (const kind of KINDS) {
    const agent = new Agent({ name: `payer-${kind}`, model: await modelOf(kind, script), tools: [transfer] });
    const echoAgent = new Agent({ name: `echoer-${kind}`, model: await modelOf(kind, echoScript), tools: [echo] });
    agents[kind] = {
      durable: durableAgent(agent, { databaseUrl: postgresUrl(), schema, logLevel: "error" }),
      echoAgent,
      durableEcho: durableAgent(echoAgent, { databaseUrl: postgresUrl(), schema, logLevel: "error" }),
    };
  }
  await agents.scripted.durable.launch();
});

after(async () => {
  await agents.scripted?.durable.shutdown();
  for (const close of closers) await close();
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

async function runUntilRequest(durable: DurableAgent, runId: string) {
  const events: LoopEvent[] = [];
  let requested!: () => void;
  const request = new Promise<void>((resolve) => {
    requested = resolve;
  });
  const run = await durable.run("Pay the invoice", {
    runId,
    onEvent: (event) => {
      events.push(event);
      if (event.type === "approval-request") requested();
    },
  });
  await request;
  return { run, events };
}

// A safety net: a run that hangs fails its test.
const timeout = 60_000;

for (const kind of KINDS) {
  test(`${kind} model: a durable run waits for its approval as a DBOS message; decide() resumes it and the approved call runs once`, { timeout }, async () => {
    const { durable } = agents[kind];
    executed.length = 0;
    const { run } = await runUntilRequest(durable, `run_approve_${randomUUID().slice(0, 8)}`);
    assert.deepEqual(executed, []);
    await durable.decide(run.runId, { t1: { approve: true } });
    const result = await run.result();
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "Done.");
    assert.deepEqual(executed, [500]);
    assert.equal(result.runId, run.runId);
  });

  test(`${kind} model: a rejected call gets its Rejected result and is never run`, { timeout }, async () => {
    const { durable } = agents[kind];
    executed.length = 0;
    const { run } = await runUntilRequest(durable, `run_reject_${randomUUID().slice(0, 8)}`);
    await durable.decide(run.runId, { t1: { approve: false, reason: "too much" } });
    const result = await run.result();
    assert.equal(result.state, "COMPLETED");
    assert.match(JSON.stringify(result.newMessages), /Rejected: too much/);
    assert.deepEqual(executed, []);
  });

  test(`${kind} model: a durable run emits the same events as the same run without durability (timestamps and durations aside)`, { timeout }, async () => {
    const { echoAgent, durableEcho } = agents[kind];
    // The calls of one wave run concurrently: their tool-end events may come in either order, so each
    // run of consecutive tool-end events is compared in call-id order.
    const inCallOrder = (events: LoopEvent[]) => {
      const out = [...events];
      for (let start = 0; start < out.length; start++) {
        let end = start;
        while (end < out.length && out[end].type === "tool-end") end++;
        if (end - start > 1) {
          const ends = out.slice(start, end) as Extract<LoopEvent, { type: "tool-end" }>[];
          out.splice(start, end - start, ...ends.sort((a, b) => a.toolCallId.localeCompare(b.toolCallId)));
        }
        start = Math.max(start, end);
      }
      return out;
    };
    const strip = (events: LoopEvent[]) =>
      JSON.stringify(inCallOrder(events), (key, value) => (key === "timestamp" || key === "durationMs" || key === "runId" ? undefined : value));
    const plainEvents: LoopEvent[] = [];
    const plain = await echoAgent.run("echo a and b", { onEvent: (event) => plainEvents.push(event) });
    const durableEvents: LoopEvent[] = [];
    const run = await durableEcho.run("echo a and b", { onEvent: (event) => durableEvents.push(event) });
    const result = await run.result();
    assert.equal(result.text, plain.text);
    assert.ok(plainEvents.some((event) => event.type === "text-delta"));
    assert.equal(strip(durableEvents), strip(plainEvents));
  });
}
