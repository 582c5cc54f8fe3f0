// The PostgreSQL store's own connections lost while it holds them (src/memory/postgres.ts, found by
// mutation testing, docs/mutation.md): the server ends the connection that holds the session locks,
// or a write lane's, and the store goes on with new ones from the pool. Through a pool the test
// gives the store (`openPostgresStore({ pool })`), so it can tell which connection is which.
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, describe, it } from "node:test";
import pg from "pg";
import { AgentLoopError } from "../../src/errors.js";
import { openPostgresStore } from "../../src/memory/postgres.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "./postgres-server.js";

const admin = new pg.Client({ connectionString: postgresUrl() });
const connected = admin.connect();
after(async () => {
  await connected;
  await admin.end();
  await dropSchemas();
});

/** A pool of 4 that remembers its connections (each with its server process id). */
function recordingPool(): { pool: pg.Pool; clients: pg.Client[] } {
  const pool = new pg.Pool({ connectionString: postgresUrl(), max: 4, connectionTimeoutMillis: 5_000 });
  pool.on("error", () => {});
  const clients: pg.Client[] = [];
  pool.on("connect", (client) => clients.push(client));
  return { pool, clients };
}

/** Ends the test's pool, once the closed store gave back every connection it took (else the pool's end would wait for them for ever). */
async function endPool(pool: pg.Pool): Promise<void> {
  const kept = pool.totalCount - pool.idleCount;
  if (kept === 0) return pool.end();
  void pool.end();
  assert.fail(`the closed store still holds ${kept} of the pool's connections`);
}

/** What a write lane's connection runs last: an append's group statement, or the count of sessions that may follow it. */
const laneStatements = (schema: string) => [`%upserted AS (INSERT INTO "${schema}"%`, `SELECT count(*) FROM "${schema}".agentloop_sessions`];

/**
 * Ends, from the server, the pool's connection whose last statement matched one of `patterns`
 * (LIKE, pg_stat_activity), and resolves once `heard` (by default the connection itself) has reported it.
 */
async function endConnection(clients: pg.Client[], patterns: string[], heard?: pg.Pool): Promise<void> {
  await connected;
  const pids = clients.map((client) => (client as unknown as { processID: number }).processID);
  const { rows } = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE pid = ANY($1::int[]) AND query LIKE ANY($2::text[])", [pids, patterns]);
  assert.equal(rows.length, 1, `one connection ran ${patterns.join(" or ")}`);
  // Listened to after the store's own listener (added when the store took the connection): once this fires, the store has heard.
  const lost = once(heard ?? clients[pids.indexOf(rows[0].pid)], "error");
  await admin.query("SELECT pg_terminate_backend($1)", [rows[0].pid]);
  await lost;
}

describe("postgres store: its own connections lost", { timeout: 20_000 }, () => {
  it("the connection holding the session locks ends: the server frees its sessions, and the store locks again on a new connection", async () => {
    const { pool, clients } = recordingPool();
    const schema = uniqueSchema("lostlock");
    const store = await openPostgresStore({ pool, schema });
    const other = await openPostgresStore({ url: postgresUrl(), schema, poolSize: 2 });
    try {
      const release = await store.lockSession("s");
      await endConnection(clients, ["%pg_try_advisory_lock%"]);
      // What that connection held went with it: another replica takes the session.
      await (await other.lockSession("s"))()
      // This store's next lock takes a new connection (not the lost one, whose statements would fail).
      const releaseAgain = await store.lockSession("t")
      // A lock that holds: the other replica waits for it until it gives up.
      await assert.rejects(other.lockSession("t", AbortSignal.timeout(150)), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "aborted");
      await releaseAgain()
      await release()
    } finally {
      await Promise.all([store.close(), other.close()]);
      await endPool(pool);
    }
  });

  it("a write lane's connection ends, again and again: each time the next append takes a new one and the lost one leaves the pool", async () => {
    const { pool, clients } = recordingPool();
    const schema = uniqueSchema("lostlane");
    const store = await openPostgresStore({ pool, schema });
    try {
      await store.append("s", [{ event_type: "x", content: 0 }]);
      // More losses than the pool has connections: a lost one kept would leave none for the store.
      for (let round = 1; round <= 4; round++) {
        await endConnection(clients, laneStatements(schema));
        await store.append("s", [{ event_type: "x", content: round }]);
      }
      assert.deepEqual(
        (await store.events("s")).map((event) => event.content),
        [0, 1, 2, 3, 4],
      );
      assert.ok(pool.totalCount <= 4);
    } finally {
      await store.close();
      await endPool(pool);
    }
  });

  it("a write lane's connection the closed store gave back to the pool, lost there, is the pool's alone (the store does not release it again)", async () => {
    const { pool, clients } = recordingPool();
    const schema = uniqueSchema("givenback");
    const store = await openPostgresStore({ pool, schema });
    await store.append("s", [{ event_type: "x", content: 1 }]);
    await store.close();
    // Idle in the pool now: the pool hears its loss (and drops it); released once more, pg-pool would throw, uncaught.
    await endConnection(clients, laneStatements(schema), pool);
    assert.deepEqual((await pool.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
    await endPool(pool);
  });

  it("a store closed while it holds a session lock, on a pool it was given: its lock connection is dropped, not kept idle in the pool, so the lock goes with it", async () => {
    const { pool } = recordingPool();
    const schema = uniqueSchema("closedlock");
    const store = await openPostgresStore({ pool, schema });
    const other = await openPostgresStore({ url: postgresUrl(), schema, poolSize: 2 });
    try {
      await store.lockSession("s");
      await store.close();
      await (await other.lockSession("s", AbortSignal.timeout(5_000)))();
    } finally {
      await Promise.all([store.close(), other.close()]);
      await endPool(pool);
    }
  });
});
