// Durable mode through `AgentServer.fetch` (the Hono door, without listening): the same stream as
// the node:http door, the run id in the header, the JSON answer, and the reattach route.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, test } from "node:test";
import pg from "pg";
import { ScriptedModel } from "../../src/index.js";
import { createAgentServer } from "../../src/server/index.js";
import { postgresUrl } from "../memory/postgres-server.js";
import { readEvents } from "./serve-helpers.js";

const tag = randomUUID().slice(0, 8);
const schemas = [`t_durable_fetch_${tag}`, `dbos_fetch_${tag}`];

after(async () => {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

test("AgentServer.fetch in durable mode: streamed and JSON answers, the run id, the reattach route", async () => {
  // One script across the runs (not restarted per run).
  const model = new ScriptedModel(["Streamed answer.", "JSON answer."], { continueAcrossRuns: true });
  const server = await createAgentServer({
    env: {
      AGENT_NAME: "fetcher",
      MEMORY_TYPE: "postgres",
      MEMORY_POSTGRES_URL: postgresUrl(),
      MEMORY_POSTGRES_SCHEMA: schemas[0],
      DURABLE: "true",
      DURABLE_SCHEMA: schemas[1],
      DURABLE_EXECUTOR_ID: `fetch-${tag}`,
    },
    build: { model },
    log: () => undefined,
  });
  try {
    assert.equal((await server.ready()).status, "ready");
    const post = (body: object) => server.fetch(new Request("http://agent/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
    const streamed = await post({ messages: [{ role: "user", content: "hi" }], stream: true, session_id: `s-${tag}` });
    const runId = streamed.headers.get("x-agentloop-run-id")!;
    assert.match(runId, /^run_/);
    const { events, complete } = await readEvents(streamed);
    assert.ok(complete);
    assert.ok(events[0]!.startsWith(`{"id":"chatcmpl-${runId}"`));
    const whole = await readEvents(await server.fetch(new Request(`http://agent/v1/runs/${runId}/events?after=0`)));
    assert.deepEqual(whole.events, events);

    const json = await post({ messages: [{ role: "user", content: "again" }], session_id: `s-${tag}` });
    assert.equal(json.status, 200);
    assert.match(json.headers.get("x-agentloop-run-id") ?? "", /^run_/);
    const body = (await json.json()) as { id: string; choices: Array<{ message: { content: string }; finish_reason: string }> };
    assert.equal(body.id, `chatcmpl-${json.headers.get("x-agentloop-run-id")}`);
    assert.deepEqual(body.choices[0], { index: 0, message: { role: "assistant", content: "JSON answer." }, finish_reason: "stop" });

    const unknown = await server.fetch(new Request("http://agent/v1/runs/run_unknown/events"));
    assert.equal(unknown.status, 404);
    const badId = await server.fetch(new Request("http://agent/v1/runs/bad%20id"));
    assert.equal(badId.status, 400);
  } finally {
    await server.close({ graceMs: 0 });
  }
});
