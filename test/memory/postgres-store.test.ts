import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pg from "pg";
import { AgentLoopError } from "../../src/errors.js";
import { defaultWriteLanes, openPostgresStore } from "../../src/memory/postgres.js";
import { memoryStoreConformance } from "./conformance.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "./postgres-server.js";

after(dropSchemas);

memoryStoreConformance("postgres", async (limits) => openPostgresStore({ ...limits, url: postgresUrl(), schema: uniqueSchema("conf"), poolSize: 4 }));

describe("postgres store: replicas", () => {
  it("two store instances appending 2 x 200 events to one session lose and reorder nothing", async () => {
    const schema = uniqueSchema("replicas");
    // Opened together: the migration itself must be safe when replicas start at the same time.
    const [first, second] = await Promise.all([
      openPostgresStore({ url: postgresUrl(), schema, poolSize: 4 }),
      openPostgresStore({ url: postgresUrl(), schema, poolSize: 4 }),
    ]);
    try {
      const writer = async (store: typeof first, name: string) => {
        const results: number[] = [];
        // Four concurrent writers per replica, 50 appends each.
        await Promise.all(
          Array.from({ length: 4 }, async (_, lane) => {
            for (let index = 0; index < 50; index++) {
              const [event] = await store.append("shared", [{ event_type: "x", content: { replica: name, lane, index } }]);
              results.push(event.seq);
            }
          }),
        );
        return results;
      };
      const [seqsA, seqsB] = await Promise.all([writer(first, "a"), writer(second, "b")]);
      const events = await first.events("shared", { limit: 1000 });
      assert.equal(events.length, 400);
      assert.deepEqual(
        events.map((event) => event.seq),
        Array.from({ length: 400 }, (_, index) => index + 1),
      );
      assert.deepEqual(
        [...seqsA, ...seqsB].sort((a, b) => a - b),
        Array.from({ length: 400 }, (_, index) => index + 1),
        "each append got its own seq",
      );
      // Each writer lane's events appear in the order it wrote them.
      for (const replica of ["a", "b"]) {
        for (let lane = 0; lane < 4; lane++) {
          const indexes = events
            .map((event) => event.content as { replica: string; lane: number; index: number })
            .filter((content) => content.replica === replica && content.lane === lane)
            .map((content) => content.index);
          assert.deepEqual(
            indexes,
            Array.from({ length: 50 }, (_, index) => index),
          );
        }
      }
      assert.deepEqual(await second.events("shared", { limit: 1000 }), events, "both replicas read the same log");
      assert.equal((await second.getSession("shared"))?.last_seq, 400);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});

describe("postgres store: session locks across replicas", () => {
  it("a release made right after an append (not awaited) hands the session over only once that append is committed", async () => {
    const schema = uniqueSchema("locks");
    const [first, second] = await Promise.all([openPostgresStore({ url: postgresUrl(), schema, poolSize: 2 }), openPostgresStore({ url: postgresUrl(), schema, poolSize: 2 })]);
    try {
      const release = await first.lockSession("s");
      const taken = second.lockSession("s").then(async (releaseSecond) => {
        const seen = (await second.events("s")).map((event) => event.content);
        await releaseSecond();
        return seen;
      });
      const appended = first.append("s", Array.from({ length: 50 }, (_, index) => ({ event_type: "x", content: index })));
      const released = release();
      await Promise.all([appended, released]);
      assert.deepEqual(await taken, Array.from({ length: 50 }, (_, index) => index));
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it("lets one replica at a time hold a session; a waiter gets it on release or stops when aborted", async () => {
    const schema = uniqueSchema("locks");
    const [first, second] = await Promise.all([openPostgresStore({ url: postgresUrl(), schema, poolSize: 2 }), openPostgresStore({ url: postgresUrl(), schema, poolSize: 2 })]);
    try {
      const release = await first.lockSession("s");
      // Another session is free meanwhile.
      await (await second.lockSession("other"))();
      const impatient = new AbortController();
      const gaveUp = second.lockSession("s", impatient.signal);
      impatient.abort();
      await assert.rejects(gaveUp, (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "aborted");
      let acquired = false;
      const waiting = second.lockSession("s").then((releaseSecond) => {
        acquired = true;
        return releaseSecond;
      });
      // Still held by the first replica after several polls.
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(acquired, false);
      await release();
      await (await waiting)();
      assert.equal(acquired, true);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });
});

describe("postgres store: errors", () => {
  it("sessions beyond maxSessions are evicted after the appends, in one eviction for many groups; reads and close see the limit kept", async () => {
    const schema = uniqueSchema("evict");
    const store = await openPostgresStore({ url: postgresUrl(), schema, poolSize: 4, maxSessions: 3 });
    try {
      // One group (and one new session) after the other, faster than evictions may start.
      for (let index = 0; index < 8; index++) await store.append(`s${index}`, [{ event_type: "x", content: index }]);
      assert.deepEqual(
        (await store.listSessions()).map((session) => session.session_id),
        ["s5", "s6", "s7"],
      );
      await store.append("s8", [{ event_type: "x", content: 8 }]);
      await store.append("s9", [{ event_type: "x", content: 9 }]);
      assert.deepEqual(await store.events("s6"), [], "evicted before the read");
    } finally {
      await store.close();
    }
    const reopened = await openPostgresStore({ url: postgresUrl(), schema, poolSize: 2 });
    try {
      assert.deepEqual(
        (await reopened.listSessions()).map((session) => session.session_id),
        ["s7", "s8", "s9"],
      );
    } finally {
      await reopened.close();
    }
  });

  it("below maxSessions, new sessions cost one count of the sessions, not one per 100 ms; over it, the next new session evicts", async () => {
    const pool = new pg.Pool({ connectionString: postgresUrl(), max: 2 });
    let counts = 0;
    const query = pool.query.bind(pool) as (text: unknown, params?: unknown) => Promise<unknown>;
    pool.query = ((text: unknown, params?: unknown) => {
      const sql = typeof text === "string" ? text : (text as { text?: unknown } | null)?.text;
      if (typeof sql === "string" && /SELECT count\(\*\) AS count FROM "\w+"\.agentloop_sessions/.test(sql)) counts++;
      return query(text, params);
    }) as typeof pool.query;
    const store = await openPostgresStore({ pool, schema: uniqueSchema("recount"), maxSessions: 50 });
    try {
      // Slower than the old 100 ms gap between evictions: each new session would have counted.
      for (let index = 0; index < 5; index++) {
        await store.append(`s${index}`, [{ event_type: "x", content: index }]);
        await store.listSessions();
        await new Promise((resolve) => setTimeout(resolve, 110));
      }
      assert.equal(counts, 1, "the first new session counts; the next four are known to be below the limit (a count every 5 at most)");
      for (let index = 5; index < 60; index++) await store.append(`s${index}`, [{ event_type: "x", content: index }]);
      assert.deepEqual(
        (await store.listSessions()).map((session) => session.session_id),
        Array.from({ length: 50 }, (_, index) => `s${index + 10}`),
      );
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it("rejects a missing or malformed URL with a configuration error", async () => {
    await assert.rejects(openPostgresStore({}), /needs a connection URL/);
    await assert.rejects(openPostgresStore({ url: "mysql://x" }), /must start with postgres:\/\//);
    await assert.rejects(openPostgresStore({ url: postgresUrl(), schema: "bad-name; drop" }), /plain SQL identifier/);
  });

  it("reports an unreachable server as a network error without the password", async () => {
    await assert.rejects(openPostgresStore({ url: "postgres://user:secret@127.0.0.1:1/db" }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "network");
      assert.match(error.message, /cannot reach PostgreSQL at 127\.0\.0\.1:1\/db/);
      assert.doesNotMatch(error.message, /secret/);
      return true;
    });
  });

  it("refuses a bad pool size, and names a malformed URL by its host and database only", async () => {
    for (const poolSize of [0, 1.5, -1]) {
      await assert.rejects(openPostgresStore({ url: postgresUrl(), poolSize }), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "configuration" && /poolSize must be a positive integer/.test(error.message));
    }
    await assert.rejects(openPostgresStore({ url: "" }), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "configuration" && /needs a connection URL/.test(error.message));
    await assert.rejects(openPostgresStore({ url: "mysql://user:secret@db.example:3306/app" }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "configuration");
      assert.match(error.message, /must start with postgres:\/\/ or postgresql:\/\/, got db\.example:3306\/app$/);
      return true;
    });
    await assert.rejects(openPostgresStore({ url: "not a url" }), /got \(unparsable URL\)$/);
    await assert.rejects(openPostgresStore({ url: "mysql://db.example/app" }), /got db\.example\/app$/);
    const store = await openPostgresStore({ url: postgresUrl().replace(/^postgres:/, "postgresql:"), schema: uniqueSchema("scheme"), poolSize: 1 });
    assert.equal((await store.append("s", [{ event_type: "x" }]))[0].seq, 1, "postgresql:// works, on one connection");
    await store.close();
  });

  it("reports an unknown role as an authentication error, without the password", async () => {
    const url = new URL(postgresUrl());
    url.username = "agentloop_no_such_role";
    url.password = "secret";
    await assert.rejects(openPostgresStore({ url: url.toString() }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "authentication");
      assert.match(error.message, /refused the credentials/);
      assert.doesNotMatch(error.message, /secret/);
      return true;
    });
  });

  it("a store on a pool it was given leaves the pool open when it closes", async () => {
    const pool = new pg.Pool({ connectionString: postgresUrl(), max: 2 });
    try {
      const store = await openPostgresStore({ pool, schema: uniqueSchema("pool") });
      assert.equal((await store.append("s", [{ event_type: "x" }]))[0].seq, 1);
      await store.close();
      assert.deepEqual((await pool.query("SELECT 1 AS one")).rows, [{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });

  it("writes through one lane to a server on this machine, four to one elsewhere", () => {
    for (const local of ["postgres://u@localhost/db", "postgres://127.0.0.1:5432/db", "postgres://[::1]/db", "postgres:///db?host=/var/run/postgresql", "postgres://db.example/db?host=/tmp", "localhost", "/tmp", "::1", "127.0.0.2"]) {
      assert.equal(defaultWriteLanes(local), 1, local);
    }
    for (const remote of ["postgres://db.example/db", "postgres://10.0.0.5/db", "db.example", "postgres://localhost.example/db"]) assert.equal(defaultWriteLanes(remote), 4, remote);
    assert.equal(defaultWriteLanes(undefined), 4);
  });

  it("reports a missing database as a configuration error", async () => {
    const missing = new URL(postgresUrl());
    missing.pathname = "/agentloop_no_such_database";
    await assert.rejects(openPostgresStore({ url: missing.toString() }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "configuration");
      assert.match(error.message, /agentloop_no_such_database/);
      return true;
    });
  });
});
