// examples/durable/charge.ts killed exactly as its header says: kill -9 while it waits in `ship`, run
// again with the same RUN_ID. The run goes on from `ship`, and `charge` (done before the crash) is not
// called again: one charge, one idempotency key. Real PostgreSQL, real child processes.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { postgresUrl } from "../memory/postgres-server.js";
import { tsChild } from "../ts-child.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const schema = `dbos_example_crash_${randomUUID().slice(0, 8)}`;

after(async () => {
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

/** Starts the example; resolves with its process and a promise of its stdout at exit. */
async function example(env: Record<string, string>) {
  const child = spawn(process.execPath, await tsChild(`${root}examples/durable/charge.ts`), {
    cwd: root,
    env: { ...process.env, DATABASE_URL: postgresUrl(), DBOS_SCHEMA: schema, NODE_NO_WARNINGS: "1", DEBUG_MOCK_RESPONSES: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<string>((resolve, reject) =>
    child.once("exit", (code, signal) => (code === 0 || signal === "SIGKILL" ? resolve(stdout) : reject(new Error(`example exited ${code}: ${stderr}`)))),
  );
  return { child, exited, stdout: () => stdout };
}

/**
 * Resolves once the run's `ship` call is running: the model call that asked for it is recorded, and
 * `ship` has no result yet. Rejects if the example ends first (it failed: no waiting forever).
 */
async function waitingInShip(runId: string, exited: Promise<string>): Promise<void> {
  let ended: unknown;
  exited.then(
    (stdout) => (ended ??= new Error(`the example ended before it waited in ship: ${stdout}`)),
    (error: unknown) => (ended ??= error),
  );
  const client = new pg.Client({ connectionString: postgresUrl() });
  await client.connect();
  try {
    for (;;) {
      if (ended) throw ended;
      const { rows } = await client
        .query<{ name: string }>(`SELECT function_name AS name FROM "${schema}".operation_outputs WHERE workflow_uuid = $1`, [runId])
        .catch(() => ({ rows: [] as Array<{ name: string }> })); // the schema is not there yet
      const names = rows.map((row) => row.name);
      if (names.filter((name) => name === "model").length === 2 && names.includes("tool:charge") && !names.includes("tool:ship")) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await client.end();
  }
}

test("examples/durable/charge.ts killed with kill -9 while it waits in ship, run again with the same RUN_ID: it charges once and ships", { timeout: 120_000 }, async () => {
  const runId = `run_crash_${randomUUID().slice(0, 8)}`;
  const first = await example({ RUN_ID: runId, SHIP_DELAY_MS: "600000" });
  await waitingInShip(runId, first.exited);
  first.child.kill("SIGKILL");
  const before = await first.exited;
  const charged = /^charged 1299 cents \(key (\S+)\)$/m.exec(before)?.[1];
  assert.ok(charged, `the first process charged before the crash: ${before}`);
  assert.doesNotMatch(before, /shipped|COMPLETED/);

  const second = await (await example({ RUN_ID: runId, SHIP_DELAY_MS: "0" })).exited;
  // The recovered run replays the charge's recorded result (its event again, the same key), ships, answers.
  assert.equal(second, `charged 1299 cents (key ${charged})\nshipped book\nCOMPLETED Charged and shipped.\n`);
  const keys = new Set([...`${before}${second}`.matchAll(/charged 1299 cents \(key (\S+)\)/g)].map((match) => match[1]));
  assert.deepEqual([...keys], [charged], "one charge: no second idempotency key");
});
