// The one DBOS of test/durable/mutation-in-process.test.ts: every durable agent of its parts
// (test/durable/in-process/*.ts) is created with these options (a part adds its `journal`) before the
// file's one launch, in its own schema, executor id and queue; the schema is dropped after the file.
// The launch is made while this file holds the schema's migration lock (src/durable/launch.ts): it
// must wait for it, as a replica starting beside another does.
import assert from "node:assert/strict";
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
// The queue is polled every 250 ms (it was 20): each poll is a transaction of four statements, made
// whether a run waits or not; at 20 ms the polls were a quarter of this file's CPU and PostgreSQL's
// (bench/FINDINGS.md, session 25). A queued run waits up to one interval more; the waits here are seconds.
export const shared = { databaseUrl: postgresUrl(), schema, executorId, logLevel: "error" as const, queue: { name: queueName, pollingIntervalMs: 250 } };

// Launches DBOS for every agent created before (all of them: the parts are imported before the hooks run).
const launcher = durableAgent(new Agent({ name: "in-process-launcher", model: new ScriptedModel(["unused"]) }), shared);

/** Whether another session (the launch's) tried this schema's migration lock twice: it polls, waiting. */
async function triedTwice(client: pg.Client, seen: Map<number, Set<string>>): Promise<boolean> {
  const { rows } = await client.query<{ pid: number; started: string }>(
    "SELECT pid, query_start::text AS started FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE 'SELECT pg_try_advisory_lock(hashtext($1))%'",
  );
  for (const { pid, started } of rows) seen.set(pid, (seen.get(pid) ?? new Set<string>()).add(started));
  return [...seen.values()].some((starts) => starts.size >= 2);
}

before(async () => {
  // The launch waits while another process (a replica starting at the same time) holds this
  // schema's migration lock: it tries again until the lock is free, then launches.
  const holder = new pg.Client({ connectionString: postgresUrl() });
  await holder.connect();
  try {
    await holder.query("SELECT pg_advisory_lock(hashtext($1))", [`agentloop.dbos.migrate.${schema}`]);
    let settled = false;
    const launching = launcher.launch().finally(() => {
      settled = true;
    });
    launching.catch(() => undefined);
    const seen = new Map<number, Set<string>>();
    while (!settled && !(await triedTwice(holder, seen))) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(settled, false, "the launch went on while another session held the migration lock");
    await holder.query("SELECT pg_advisory_unlock(hashtext($1))", [`agentloop.dbos.migrate.${schema}`]);
    await launching;
  } finally {
    await holder.end();
  }
});

after(async () => {
  await launcher.shutdown();
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});
