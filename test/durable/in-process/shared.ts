// The one DBOS of test/durable/mutation-in-process.test.ts: every durable agent of its parts
// (test/durable/in-process/*.ts) is created with these options (a part adds its `journal`) before the
// file's one launch, in its own schema, executor id and queue; the schema is dropped after the file.
import { randomUUID } from "node:crypto";
import { after, before } from "node:test";
import pg from "pg";
import { durableAgent } from "../../../src/durable/index.js";
import { Agent, ScriptedModel } from "../../../src/index.js";
import { postgresUrl } from "../../memory/postgres-server.js";

const tag = randomUUID().slice(0, 8);
export const schema = `dbos_in_process_${tag}`;
export const queueName = `in_process_queue_${tag}`;
export const executorId = `in-process-${tag}`;
export const shared = { databaseUrl: postgresUrl(), schema, executorId, logLevel: "error" as const, queue: { name: queueName, pollingIntervalMs: 20 } };

// Launches DBOS for every agent created before (all of them: the parts are imported before the hooks run).
const launcher = durableAgent(new Agent({ name: "in-process-launcher", model: new ScriptedModel(["unused"]) }), shared);

before(async () => {
  await launcher.launch();
});

after(async () => {
  await launcher.shutdown();
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});
