// The PostgreSQL store's own rules (src/memory/sql-store.ts) as a user sees them: through
// `SqlMemoryStore.open` (exported by `agentloop/memory/postgres`) on a database of the test's own
// that runs every statement on the real test server and records what the store asks of it (which
// statements, on which write lane, when it closes or unlocks), or fails one statement the way a
// driver does; and through `openPostgresStore` and the tables themselves.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import pg from "pg";
import { AgentLoopError } from "../../src/errors.js";
import { openPostgresStore, SqlMemoryStore } from "../../src/memory/postgres.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "./postgres-server.js";

type Database = Parameters<typeof SqlMemoryStore.open>[1];
type TextRow = Array<string | null>;

const pool = new pg.Pool({ connectionString: postgresUrl(), max: 8 });
pool.on("error", () => {});

after(async () => {
  await pool.end();
  await dropSchemas();
});

/** Rows as text columns, as `SqlDatabase.statement` answers. */
const asText = { getTypeParser: () => (value: string) => value };

interface Call {
  text: string;
  lane: number | undefined;
  /** How many events the statement writes (its first parameter's appends). */
  events: number;
  /** The sessions of those appends, in order. */
  sessions: string[];
}

/**
 * A database on the test server that records each statement the store runs (`calls`), can hold
 * group writes until released (`holdNext`), fail the next statements (`failures`), and records when it is
 * closed and when a session lock it gave is released.
 */
function recordingDatabase(options: { withLock?: boolean; withDescribe?: boolean } = {}) {
  const calls: Call[] = [];
  const failures: unknown[] = [];
  const log: string[] = [];
  /** Gates for the next group writes, one each. */
  const holds: Array<Promise<void>> = [];
  /** Gates for the answers of the next counts of the sessions (the count runs, its answer waits). */
  const countAnswers: Array<Promise<void>> = [];
  let inFlight = 0;
  const database: Database = {
    async statement(text: string, values: ReadonlyArray<string | null>, lane?: number): Promise<TextRow[]> {
      let events = 0;
      const sessions: string[] = [];
      if (/INSERT INTO .*agentloop_events/s.test(text)) {
        for (const [session, appended] of JSON.parse(values[0] ?? "[]") as Array<[string, unknown[]]>) {
          events += appended.length;
          sessions.push(session);
        }
      }
      calls.push({ text, lane, events, sessions });
      inFlight++;
      try {
        if (events > 0 && holds.length > 0) await holds.shift();
        if (failures.length > 0) throw failures.shift();
        const result = await pool.query({ text, values: [...values], rowMode: "array", types: asText });
        if (/^SELECT count\(\*\) FROM/.test(text) && countAnswers.length > 0) await countAnswers.shift();
        return result.rows as TextRow[];
      } finally {
        inFlight--;
      }
    },
    query: async (text: string, params?: unknown[]) => (await pool.query(text, params)).rows,
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const result = await fn({ query: async (text, params) => (await client.query(text, params)).rows });
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK");
        throw error;
      } finally {
        client.release();
      }
    },
    async close() {
      log.push(`close with ${inFlight} statement(s) running`);
    },
  };
  if (options.withLock) {
    database.lock = async (key: string) => {
      log.push(`lock ${key}`);
      return async () => {
        log.push(`unlock ${key}`);
      };
    };
  }
  if (options.withDescribe) database.describeError = (error) => new AgentLoopError("network", `described: ${String((error as Error)?.message)}`, { cause: error });
  return {
    database,
    calls,
    failures,
    log,
    /** Holds the next group write (after those already held) until the returned function is called. */
    holdNext(): () => void {
      let open!: () => void;
      holds.push(
        new Promise<void>((resolve) => {
          open = resolve;
        }),
      );
      return () => open();
    },
    /** Holds the answer of the next count of the sessions (made once it ran) until the returned function is called. */
    holdNextCountAnswer(): () => void {
      let open!: () => void;
      countAnswers.push(
        new Promise<void>((resolve) => {
          open = resolve;
        }),
      );
      return () => open();
    },
    running: () => inFlight,
    /** The group writes (statements inserting events) so far. */
    writes: () => calls.filter((call) => call.events > 0),
  };
}

/** An error as a driver reports it, with a code. */
function driverError(message: string, code?: unknown): Error {
  return Object.assign(new Error(message), code === undefined ? {} : { code });
}

/** Resolves once `condition` holds (checked after each turn of the event loop). */
async function until(condition: () => boolean): Promise<void> {
  for (let turn = 0; !condition(); turn++) {
    if (turn > 100_000) throw new Error("condition never held");
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const x = (content: unknown) => ({ event_type: "x", content });

describe("SqlMemoryStore on a database of one's own", () => {
  it("opens with the default of one write lane when no groupCommit is given, and says its appends keep their order; groupCommit: false says they may not", async () => {
    const recording = recordingDatabase();
    const store = await SqlMemoryStore.open("custom", recording.database, { schema: uniqueSchema("own") });
    assert.equal(store.appendsInOrder, true);
    await Promise.all(["a", "b", "c"].map((session) => store.append(session, [x(session)])));
    assert.deepEqual(
      recording.writes().map((call) => call.lane),
      [0],
      "one group on lane 0",
    );
    await store.close();
    const single = await SqlMemoryStore.open("custom", recordingDatabase().database, { schema: uniqueSchema("own"), groupCommit: false });
    assert.equal(single.appendsInOrder, false);
    await single.close();
  });

  it("spreads sessions over its write lanes, each session always on the same one", async () => {
    const recording = recordingDatabase();
    const store = await SqlMemoryStore.open("custom", recording.database, { schema: uniqueSchema("lanes"), groupCommit: { lanes: 4 } });
    try {
      const sessions = Array.from({ length: 12 }, (_, index) => `session-${index}`);
      for (let round = 0; round < 2; round++) {
        await Promise.all(sessions.map((session) => store.append(session, [x(round)])));
      }
      const lanesOf = new Map<string, Set<number | undefined>>();
      for (const call of recording.writes()) for (const session of call.sessions) lanesOf.set(session, (lanesOf.get(session) ?? new Set()).add(call.lane));
      for (const session of sessions) assert.equal(lanesOf.get(session)?.size, 1, `${session}: lanes ${[...(lanesOf.get(session) ?? [])]}`);
      const used = new Set(recording.writes().map((call) => call.lane));
      assert.ok(used.size > 1, `12 sessions on ${used.size} lane(s)`);
      assert.ok([...used].every((lane) => lane !== undefined && lane >= 0 && lane < 4));
      for (const session of sessions) assert.deepEqual((await store.events(session)).map((event) => event.content), [0, 1]);
    } finally {
      await store.close();
    }
  });

  it("a group stops growing at 2,000 events: three appends of 1,000 made at once are written as 2,000 then 1,000", async () => {
    const recording = recordingDatabase();
    const store = await SqlMemoryStore.open("custom", recording.database, { schema: uniqueSchema("big"), maxEventsPerSession: 5000 });
    try {
      const thousand = (label: string) => Array.from({ length: 1000 }, (_, index) => x(`${label}${index}`));
      const stored = await Promise.all([store.append("a", thousand("a")), store.append("b", thousand("b")), store.append("a", thousand("c"))]);
      assert.deepEqual(
        recording.writes().map((call) => call.events),
        [2000, 1000],
      );
      assert.deepEqual(
        stored.map((events) => [events[0].seq, events.at(-1)!.seq]),
        [
          [1, 1000],
          [1, 1000],
          [1001, 2000],
        ],
      );
    } finally {
      await store.close();
    }
  });
});

/** Three appends to three sessions made at once (one group on one lane): how each settled. */
async function groupOfThree(store: SqlMemoryStore, label: string): Promise<Array<PromiseSettledResult<unknown>>> {
  return Promise.allSettled(["a", "b", "c"].map((session) => store.append(`${label}-${session}`, [x(session)])));
}

const statuses = (results: Array<PromiseSettledResult<unknown>>) => results.map((result) => result.status);

describe("SqlMemoryStore: a failed group", () => {
  it("fails as a whole, none retried, when the database itself failed (SQLSTATE classes 08, 28, 3D, 53, 57, 58, or no SQLSTATE at all)", async () => {
    const recording = recordingDatabase();
    const store = await SqlMemoryStore.open("custom", recording.database, { schema: uniqueSchema("down") });
    try {
      for (const code of ["08006", "28000", "3D000", "53300", "57P01", "58030", "ECONNRESET", "ECONNREFUSED", 22012, undefined]) {
        const before = recording.writes().length;
        const failure = driverError(`down ${String(code)}`, code);
        recording.failures.push(failure);
        const results = await groupOfThree(store, `down${String(code)}`);
        assert.deepEqual(statuses(results), ["rejected", "rejected", "rejected"], String(code));
        for (const result of results) {
          const reason = (result as PromiseRejectedResult).reason;
          assert.ok(AgentLoopError.isInstance(reason), String(reason));
          assert.equal(reason.cause, failure);
        }
        assert.equal(recording.writes().length - before, 1, `code ${String(code)}: one write, no member retried`);
        assert.deepEqual(await store.events(`down${String(code)}-a`), []);
      }
    } finally {
      await store.close();
    }
  });

  it("after a statement's own error (bad data, a constraint), each member is written again alone; a lone append is not retried", async () => {
    const recording = recordingDatabase();
    const store = await SqlMemoryStore.open("custom", recording.database, { schema: uniqueSchema("retry") });
    try {
      recording.failures.push(driverError("invalid datetime", "22007"));
      assert.deepEqual(statuses(await groupOfThree(store, "retry")), ["fulfilled", "fulfilled", "fulfilled"]);
      assert.equal(recording.writes().length, 4, "the group, then each of its three members");
      for (const session of ["a", "b", "c"]) assert.deepEqual((await store.events(`retry-${session}`)).map((event) => event.content), [session]);

      // One append alone that fails on its data: rejected, not written again.
      recording.failures.push(driverError("duplicate key", "23505"));
      await assert.rejects(store.append("lone", [x(1)]), /duplicate key/);
      assert.equal(recording.writes().length, 5);

      // A member written again alone that meets the database failing: it and the members after it fail, untried.
      const lost = driverError("terminating connection due to administrator command", "57P01");
      recording.failures.push(driverError("invalid datetime", "22007"), lost);
      const results = await groupOfThree(store, "lost");
      assert.deepEqual(statuses(results), ["rejected", "rejected", "rejected"]);
      for (const result of results) assert.equal((result as PromiseRejectedResult).reason.cause, lost);
      assert.equal(recording.writes().length, 7, "the group and its first member only");
    } finally {
      await store.close();
    }
  });

  it("an AgentLoopError the database throws as is (no cause) fails the group as a whole", async () => {
    const recording = recordingDatabase();
    const store = await SqlMemoryStore.open("custom", recording.database, { schema: uniqueSchema("ownerror") });
    try {
      const failure = new AgentLoopError("rate_limit", "the database is busy");
      recording.failures.push(failure);
      const results = await groupOfThree(store, "busy");
      assert.deepEqual(
        results.map((result) => (result as PromiseRejectedResult).reason),
        [failure, failure, failure],
      );
      assert.equal(recording.writes().length, 1);
    } finally {
      await store.close();
    }
  });

  it("a driver error becomes an unknown AgentLoopError naming the store's kind and keeping the error as its cause, unless the database describes its errors", async () => {
    const plain = recordingDatabase();
    const store = await SqlMemoryStore.open("custom", plain.database, { schema: uniqueSchema("errors"), groupCommit: false });
    try {
      const failure = driverError("disk full");
      plain.failures.push(failure);
      await assert.rejects(store.append("s", [x(1)]), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error));
        assert.equal(error.kind, "unknown");
        assert.equal(error.message, "memory (custom): disk full");
        assert.equal(error.cause, failure);
        return true;
      });
      for (const [thrown, message] of [
        ["a bare string", "memory (custom): a bare string"],
        [undefined, "memory (custom): undefined"],
      ] as const) {
        plain.failures.push(thrown);
        await assert.rejects(store.append("s", [x(1)]), (error: unknown) => AgentLoopError.isInstance(error) && error.message === message);
      }
    } finally {
      await store.close();
    }
    const describing = recordingDatabase({ withDescribe: true });
    const described = await SqlMemoryStore.open("custom", describing.database, { schema: uniqueSchema("errors") });
    try {
      describing.failures.push(driverError("reset"));
      await assert.rejects(described.append("s", [x(1)]), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "network" && error.message === "described: reset");
    } finally {
      await described.close();
    }
  });
});

describe("SqlMemoryStore: locks, close", () => {
  it("a database without locks gives a release at once", async () => {
    const store = await SqlMemoryStore.open("custom", recordingDatabase().database, { schema: uniqueSchema("nolock") });
    try {
      const release = await store.lockSession("s");
      await release();
    } finally {
      await store.close();
    }
  });

  it("without group commit, a release waits for every append made before it, not only the last one", async () => {
    const recording = recordingDatabase({ withLock: true });
    const store = await SqlMemoryStore.open("custom", recording.database, { schema: uniqueSchema("release"), groupCommit: false });
    try {
      const release = await store.lockSession("s");
      const open = recording.holdNext();
      const first = store.append("s", [x(1)]).then(() => recording.log.push("first written"));
      await until(() => recording.running() === 1);
      await store.append("s", [x(2)]);
      const released = release();
      for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
      open();
      await Promise.all([first, released]);
      assert.deepEqual(recording.log.slice(-2), ["first written", `unlock agentloop.session.${recording.log[0].split(".")[2]}.s`]);
    } finally {
      await store.close();
    }
  });

  it("with group commit, a release waits for the session's append still queued when an earlier one of it was written", async () => {
    const recording = recordingDatabase({ withLock: true });
    const store = await SqlMemoryStore.open("custom", recording.database, { schema: uniqueSchema("release") });
    try {
      const release = await store.lockSession("s");
      const openFirst = recording.holdNext();
      const first = store.append("s", [x(1)]);
      await until(() => recording.running() === 1);
      const second = store.append("s", [x(2)]).then(() => recording.log.push("second written"));
      const openSecond = recording.holdNext();
      openFirst();
      await first;
      const released = release();
      for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
      openSecond();
      await Promise.all([second, released]);
      assert.match(recording.log.at(-2)!, /^second written$/);
      assert.match(recording.log.at(-1)!, /^unlock /);
    } finally {
      await store.close();
    }
  });

  it("close waits for the group being written before it closes the database", async () => {
    const recording = recordingDatabase();
    const store = await SqlMemoryStore.open("custom", recording.database, { schema: uniqueSchema("close") });
    const open = recording.holdNext();
    const written = store.append("s", [x(1)]);
    await until(() => recording.running() === 1);
    const closed = store.close();
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    open();
    await Promise.all([written, closed]);
    assert.deepEqual(recording.log, ["close with 0 statement(s) running"]);
  });
});

describe("SqlMemoryStore: sessions beyond maxSessions", () => {
  it("counts the sessions when new ones may pass the limit or every tenth of it made here, never for appends to known sessions", async () => {
    const recording = recordingDatabase();
    const schema = uniqueSchema("count");
    // maxSessions 30: a count every 3 sessions made here.
    const store = await SqlMemoryStore.open("custom", recording.database, { schema, maxSessions: 30 });
    const counts = () => recording.calls.filter((call) => /^SELECT count\(\*\) FROM/.test(call.text)).length;
    const steps: Array<[string, number]> = [];
    const step = async (label: string, appends: Array<Promise<unknown>>) => {
      await Promise.all(appends);
      await store.listSessions();
      steps.push([label, counts()]);
    };
    try {
      await step("s1+s2", [store.append("s1", [x(1)]), store.append("s2", [x(1)])]);
      for (let round = 0; round < 3; round++) await step("s1", [store.append("s1", [x(round)])]);
      for (let round = 0; round < 3; round++) await step("s1+s2 again", [store.append("s1", [x(round)]), store.append("s2", [x(round)])]);
      for (let index = 1; index <= 6; index++) await step(`n${index}`, [store.append(`n${index}`, [x(index)])]);
      // 8 sessions, counted. Another replica makes 18 more: the table has 26.
      await pool.query(
        `INSERT INTO "${schema}".agentloop_sessions (session_id, created_at, updated_at, activity, last_seq)
         SELECT 'r' || g, now(), now(), nextval('"${schema}".agentloop_session_activity'), 0 FROM generate_series(1, 18) g`,
      );
      for (let index = 1; index <= 5; index++) await step(`m${index}`, [store.append(`m${index}`, [x(index)])]);
      assert.deepEqual(steps, [
        ["s1+s2", 1],
        ["s1", 1],
        ["s1", 1],
        ["s1", 1],
        ["s1+s2 again", 1],
        ["s1+s2 again", 1],
        ["s1+s2 again", 1],
        ["n1", 1],
        ["n2", 1],
        ["n3", 2],
        ["n4", 2],
        ["n5", 2],
        ["n6", 3],
        ["m1", 3],
        ["m2", 3],
        // 26 + 3: 29 counted.
        ["m3", 4],
        // 29 + 1 is not past 30.
        ["m4", 4],
        // 29 + 2 is: counted, 31 evicted down to 30.
        ["m5", 5],
      ]);
      assert.equal((await store.listSessions()).length, 30);
    } finally {
      await store.close();
    }
  });

  it("a session made while an eviction runs, after its count, is evicted by the next one, before the next read", async () => {
    const recording = recordingDatabase();
    const store = await SqlMemoryStore.open("custom", recording.database, { schema: uniqueSchema("during"), maxSessions: 1 });
    try {
      const answer = recording.holdNextCountAnswer();
      await store.append("a", [x("a")]);
      const counted = () => recording.calls.filter((call) => /^SELECT count\(\*\) FROM/.test(call.text)).length;
      await until(() => counted() === 1);
      await store.append("b", [x("b")]);
      answer();
      assert.deepEqual(
        (await store.listSessions()).map((session) => session.session_id),
        ["b"],
      );
    } finally {
      await store.close();
    }
  });

  it("a store whose first groups write only sessions it finds made does not count them", async () => {
    const schema = uniqueSchema("known");
    const maker = await SqlMemoryStore.open("custom", recordingDatabase().database, { schema, maxSessions: 30 });
    await Promise.all([maker.append("k1", [x(1)]), maker.append("k2", [x(1)])]);
    await maker.close();
    const recording = recordingDatabase();
    const store = await SqlMemoryStore.open("custom", recording.database, { schema, maxSessions: 30 });
    try {
      await store.append("k1", [x(2)]);
      await Promise.all([store.append("k1", [x(3)]), store.append("k2", [x(2)])]);
      await store.listSessions();
      assert.equal(recording.calls.filter((call) => /^SELECT count\(\*\) FROM/.test(call.text)).length, 0);
    } finally {
      await store.close();
    }
  });

  it("a group's sessions take their places in update order by their last appends", async () => {
    const store = await SqlMemoryStore.open("custom", recordingDatabase().database, { schema: uniqueSchema("order") });
    try {
      // One group: a, b, then a again: b was updated before a.
      await Promise.all([store.append("a", [x(1)]), store.append("b", [x(1)]), store.append("a", [x(2)])]);
      assert.deepEqual(
        (await store.listSessions()).map((session) => session.session_id),
        ["b", "a"],
      );
      await Promise.all([store.append("b", [x(2)]), store.append("c", [x(1)]), store.append("a", [x(3)]), store.append("c", [x(2)])]);
      assert.deepEqual(
        (await store.listSessions()).map((session) => session.session_id),
        ["b", "a", "c"],
      );
    } finally {
      await store.close();
    }
  });

  it("evicts a little after the appends that made new sessions, with no read to wait for it", async () => {
    const schema = uniqueSchema("later");
    const store = await openPostgresStore({ url: postgresUrl(), schema, poolSize: 4, maxSessions: 2 });
    try {
      for (const session of ["a", "b", "c", "d"]) await store.append(session, [x(session)]);
      const sessionsInTable = async () => Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".agentloop_sessions`)).rows[0].n);
      const deadline = Date.now() + 5000;
      while ((await sessionsInTable()) > 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(await sessionsInTable(), 2);
    } finally {
      await store.close();
    }
  });
});

describe("openPostgresStore: its tables", () => {
  it("refuses a schema that is not a string holding a plain SQL identifier", async () => {
    await assert.rejects(openPostgresStore({ pool, schema: ["agents"] as unknown as string }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "configuration");
      assert.equal(error.message, 'memory: schema must be a plain SQL identifier (letters, digits, _), got ["agents"]');
      return true;
    });
  });

  it("creates the sessions' index by update order and the events' by time", async () => {
    const schema = uniqueSchema("indexes");
    const store = await openPostgresStore({ pool, schema });
    await store.close();
    const { rows } = await pool.query("SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname", [schema]);
    const definitions = rows.map((row) => String(row.indexdef).replace(`"${schema}".`, "").replace(`${schema}.`, ""));
    assert.ok(definitions.some((definition) => /agentloop_sessions_activity ON agentloop_sessions USING btree \(activity\)/.test(definition)), definitions.join("\n"));
    assert.ok(definitions.some((definition) => /agentloop_events_timestamp ON agentloop_events USING btree \("?timestamp"?\)/.test(definition)), definitions.join("\n"));
  });

  it("retention: expired rows are deleted by prune() and by the first append of a store, then at most once a minute; reads never show them", async () => {
    const schema = uniqueSchema("prune");
    const hour = 3_600_000;
    const old = new Date(Date.now() - 2 * hour).toISOString();
    const rowsIn = async (table: string) => Number((await pool.query(`SELECT count(*) AS n FROM "${schema}".${table}`)).rows[0].n);
    const first = await openPostgresStore({ pool, schema, retentionMs: hour });
    const second = await openPostgresStore({ pool, schema, retentionMs: hour });
    try {
      // The first append prunes (nothing yet), then writes an event already expired.
      await first.append("s", [{ event_type: "x", content: 1, timestamp: old }]);
      assert.equal(await rowsIn("agentloop_events"), 1);
      // Within the minute: no prune before the second.
      await first.append("s", [{ event_type: "x", content: 2, timestamp: old }]);
      assert.equal(await rowsIn("agentloop_events"), 2);
      assert.deepEqual(await first.events("s"), []);
      // Another store's first append prunes them.
      await second.append("t", [x(3)]);
      assert.equal(await rowsIn("agentloop_events"), 1);
      // prune(): expired events, and sessions idle past the retention.
      await first.append("s", [{ event_type: "x", content: 4, timestamp: old }]);
      await pool.query(`UPDATE "${schema}".agentloop_sessions SET updated_at = $1 WHERE session_id = 't'`, [old]);
      await first.prune();
      assert.equal(await rowsIn("agentloop_events"), 0);
      assert.deepEqual((await pool.query(`SELECT session_id FROM "${schema}".agentloop_sessions`)).rows, [{ session_id: "s" }]);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
