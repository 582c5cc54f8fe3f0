// The durable API's contract without a crash: bad input, the idempotency key of every run, the runnable example.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { durableAgent } from "../../src/durable/index.js";
import { Agent, defineTool, ScriptedModel } from "../../src/index.js";
import { postgresUrl } from "../memory/postgres-server.js";
import { tsChild } from "../ts-child.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

test("durableAgent rejects what it cannot use, naming the problem", async () => {
  const agent = new Agent({ model: new ScriptedModel(["hi"]) });
  assert.throws(() => durableAgent({} as Agent, { databaseUrl: "postgres://x/y" }), /first argument must be an Agent/);
  assert.throws(() => durableAgent(agent, { databaseUrl: "" }), /databaseUrl must be a postgres:\/\/ URL, got ""/);
  assert.throws(() => durableAgent(agent, { databaseUrl: "mysql://x/y" }), /databaseUrl must be a postgres:\/\/ URL/);
  const durable = durableAgent(new Agent({ name: "not-launched", model: new ScriptedModel(["hi"]) }), { databaseUrl: "postgres://x/y" });
  await assert.rejects(durable.run("hi"), /call launch\(\) first/);
  assert.throws(() => agent.run("hi", { runId: "" }), /options.runId must be a non-empty string/);
});

test("every tool call gets context.idempotencyKey = <runId>:<toolCallId>, and options.runId names the run", async () => {
  const keys: string[] = [];
  const tool = defineTool({
    name: "pay",
    description: "pays",
    parameters: { type: "object", properties: {} },
    execute: (_args, context) => {
      keys.push(context.idempotencyKey);
      return "paid";
    },
  });
  const model = new ScriptedModel([JSON.stringify({ tool_calls: [{ name: "pay", arguments: {} }] }), "done"]);
  const result = await new Agent({ model, tools: [tool] }).run("pay", { runId: "run_order_42" });
  assert.equal(result.runId, "run_order_42");
  const call = result.messages.find((message) => message.role === "tool");
  assert.deepEqual(keys, [`run_order_42:${call?.role === "tool" ? call.toolCallId : ""}`]);
});

test("README's durable example is examples/durable/charge.ts, and it runs against PostgreSQL", async () => {
  const readme = readFileSync(`${root}README.md`, "utf8");
  assert.match(readme, /### Durable runs[\s\S]*examples\/durable\/charge\.ts/);
  const url = postgresUrl();
  const schema = `dbos_example_${randomUUID().slice(0, 8)}`;
  try {
    const run = spawnSync(process.execPath, await tsChild(`${root}examples/durable/charge.ts`), {
      cwd: root,
      encoding: "utf8",
      env: { ...process.env, DATABASE_URL: url, DBOS_SCHEMA: schema, RUN_ID: "run_example", NODE_NO_WARNINGS: "1", DEBUG_MOCK_RESPONSES: "" },
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /^charged 1299 cents \(key run_example:call_\S+\)\nshipped book\nCOMPLETED Charged and shipped\.\n$/);
  } finally {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
});
