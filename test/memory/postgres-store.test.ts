import assert from "node:assert/strict";
import { type AddressInfo, createServer, Socket } from "node:net";
import { after, describe, it } from "node:test";
import pg from "pg";
import { AgentLoopError } from "../../src/errors.js";
import { InMemoryStore } from "../../src/memory/index.js";
import { defaultWriteLanes, openPostgresStore } from "../../src/memory/postgres.js";
import { memoryStoreConformance } from "./conformance.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "./postgres-server.js";

after(dropSchemas);

memoryStoreConformance("postgres", async (limits) => openPostgresStore({ ...limits, url: postgresUrl(), schema: uniqueSchema("conf"), poolSize: 4 }));

class Point {
  constructor(
    readonly x: number,
    readonly y: number,
  ) {}
}

describe("postgres store: what an append keeps", () => {
  it("keeps and returns every kind of content and metadata exactly as the in-process store does (what JSON makes of it, NUL and lone surrogates replaced)", async () => {
    const contents: unknown[] = [
      "plain text",
      "",
      42.5,
      -0,
      false,
      null,
      undefined,
      { run_id: "run_1", turn: 3, tags: ["a", "b"], nested: { ok: true, list: [1, { deep: "x" }] } },
      { kept: 1, dropped: undefined, fn: () => 1 },
      [1, undefined, () => 1, "x"],
      { nan: Number.NaN, inf: Number.POSITIVE_INFINITY },
      { at: new Date("2026-11-21T10:00:00Z"), point: new Point(1, 2), map: new Map([["k", 1]]) },
      { custom: { toJSON: () => ({ replaced: true }) } },
      { b: 1, 2: "two", a: 3, 1: "one" },
      JSON.parse('{"__proto__": {"polluted": true}, "safe": 1}'),
      Array.from({ length: 40 }).reduce<unknown>((inner) => ({ inner }), "bottom"),
      { text: "grüße 👋 \u2028 \u0001 tab\t quote\" backslash\\" },
      "a\u0000b",
      { "k\u0000": "v\u0000", pair: "\ud83d\ude00", lone: ["\ud800", "x\udfff"] },
      { literal: "\\u0000 stays text", alsoLiteral: "\\ud800 too" },
    ];
    const metadatas: unknown[] = [undefined, null, {}, { run_id: "r", nested: { n: 1 } }, new Map([["k", 1]]), Object.assign(Object.create(null), { bare: true }), { toJSON: () => ({ from: "toJSON" }) }, { "m\u0000": "\udc00" }];
    const given = [
      ...contents.map((content) => ({ event_type: "probe", content, metadata: { value: content } })),
      ...metadatas.map((metadata) => ({ event_type: "meta\u0000", content: 1, metadata: metadata as Record<string, unknown> })),
    ];
    const store = await openPostgresStore({ url: postgresUrl(), schema: uniqueSchema("kept"), poolSize: 4 });
    const reference = new InMemoryStore();
    try {
      const without = (events: Array<{ event_type: string; content: unknown; metadata: unknown; seq: number }>) =>
        events.map(({ event_type, content, metadata, seq }) => ({ event_type, content, metadata, seq }));
      const expected = without(await reference.append("s", given));
      // One append, then each event in an append of its own (one group, and groups of one).
      assert.deepEqual(without(await store.append("s", given)), expected);
      assert.deepEqual(without(await store.events("s")), expected);
      const oneByOne = await Promise.all(given.map((event) => store.append("t", [event])));
      assert.deepEqual(
        without(oneByOne.flat()),
        expected.map((event) => ({ ...event })),
      );
      assert.equal(({} as Record<string, unknown>).polluted, undefined, "no prototype was polluted");
    } finally {
      await store.close();
      await reference.close();
    }
  });

  it("refuses what the other stores refuse, with their errors, and writes nothing of that append", async () => {
    const store = await openPostgresStore({ url: postgresUrl(), schema: uniqueSchema("refused"), poolSize: 4 });
    try {
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;
      await assert.rejects(store.append("s", [{ event_type: "x", content: 1 }, { event_type: "x", content: cyclic }]), /content is not JSON-serializable/);
      await assert.rejects(store.append("s", [{ event_type: "x", content: { big: 10n } }]), /content is not JSON-serializable/);
      await assert.rejects(store.append("s", [{ event_type: "x", metadata: { big: 10n } }]), /metadata is not JSON-serializable/);
      for (const metadata of [[1], new Date(0), { toJSON: () => "text" }, "text"]) {
        await assert.rejects(store.append("s", [{ event_type: "x", metadata: metadata as never }]), /metadata must be an object/);
      }
      await assert.rejects(store.append("s", [{ event_type: "" }]), /event_type must be a non-empty string/);
      await assert.rejects(store.append("s", [{ event_type: "x", timestamp: "not a time" }]), /invalid event timestamp/);
      assert.deepEqual(await store.events("s"), []);
    } finally {
      await store.close();
    }
  });

  it("keeps what the caller gave at the call: objects changed right after it change nothing stored", async () => {
    const store = await openPostgresStore({ url: postgresUrl(), schema: uniqueSchema("copied"), poolSize: 4 });
    try {
      const content = { list: [1, 2], text: "before" };
      const metadata = { run_id: "r1", nested: { n: 1 } };
      // Not awaited: the group is written in a later turn of the event loop.
      const appended = store.append("s", [{ event_type: "x", content, metadata }]);
      content.list.push(3);
      content.text = "after";
      metadata.nested.n = 2;
      const [returned] = await appended;
      const [read] = await store.events("s");
      for (const event of [returned, read]) {
        assert.deepEqual(event.content, { list: [1, 2], text: "before" });
        assert.deepEqual(event.metadata, { run_id: "r1", nested: { n: 1 } });
      }
      assert.notEqual(returned.content, content, "a copy, not the caller's object");
    } finally {
      await store.close();
    }
  });
});

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

describe("postgres store: appends whose events the caller does not read", () => {
  for (const groupCommit of [undefined, false] as const) {
    it(`resolves with no events (none parsed back), beside appends in the same group that get theirs${groupCommit === false ? ", without group commit" : ""}`, async () => {
      const store = await openPostgresStore({ url: postgresUrl(), schema: uniqueSchema("quiet"), poolSize: 4, ...(groupCommit === false ? { groupCommit } : {}) });
      try {
        const appends = [
          () => store.append("s", [{ event_type: "user_message", content: "a" }]),
          () => store.append("s", [{ event_type: "tool_call", content: { n: 1 } }, { event_type: "tool_result", content: "r" }], { returnEvents: false }),
          () => store.append("s", [{ event_type: "agent_response", content: "b" }], { returnEvents: true }),
        ];
        // Made in one turn, one group with group commit; without it, one after the other (appends in flight together have no order there).
        const [before, quiet, after] = groupCommit === false ? [await appends[0](), await appends[1](), await appends[2]()] : await Promise.all(appends.map((append) => append()));
        assert.deepEqual(quiet, []);
        const events = await store.events("s");
        assert.deepEqual(
          events.map((event) => [event.seq, event.content]),
          [
            [1, "a"],
            [2, { n: 1 }],
            [3, "r"],
            [4, "b"],
          ],
        );
        assert.deepEqual([...before, ...after], [events[0], events[3]]);
      } finally {
        await store.close();
      }
    });
  }
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
    // Counted on every connection the store takes (a statement as text, or as an object).
    pool.on("connect", (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      client.query = ((...args: unknown[]) => {
        const sql = typeof args[0] === "string" ? args[0] : (args[0] as { text?: unknown } | null)?.text;
        if (typeof sql === "string" && /SELECT count\(\*\)( AS count)? FROM "\w+"\.agentloop_sessions/.test(sql)) counts++;
        return query(...args);
      }) as typeof client.query;
    });
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

  it("reports a host name that does not resolve as a network error, naming the host without the password", async () => {
    // `.invalid` never resolves (RFC 2606): getaddrinfo fails at once with ENOTFOUND.
    await assert.rejects(openPostgresStore({ url: "postgres://user:secret@agentloop-no-such-host.invalid:5433/app" }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "network");
      assert.match(error.message, /^memory: cannot reach PostgreSQL at agentloop-no-such-host\.invalid:5433\/app: .*ENOTFOUND/);
      assert.doesNotMatch(error.message, /secret/);
      return true;
    });
  });

  it("reports a password refused (28P01) as an authentication error, a connection reset as a network error, and a connection that never answers as a timeout", async () => {
    // A server on loopback that answers every startup with PostgreSQL's error for a wrong password,
    // or, for the second test, never answers: what a real server gives with password authentication
    // (the test server trusts every local connection) and what a stalled one does.
    const sockets = new Set<Socket>();
    let answer: "refuse" | "reset" | "silent" = "refuse";
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.once("data", () => {
        if (answer === "silent") return;
        if (answer === "reset") return void socket.resetAndDestroy();
        const fields = Buffer.from('SFATAL\0C28P01\0Mpassword authentication failed for user "ada"\0\0');
        const header = Buffer.alloc(5);
        header.write("E");
        header.writeInt32BE(4 + fields.length, 1);
        socket.end(Buffer.concat([header, fields]));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      await assert.rejects(openPostgresStore({ url: `postgres://ada:secret@127.0.0.1:${port}/app` }), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error));
        assert.equal(error.kind, "authentication");
        assert.equal((error.cause as { code?: string }).code, "28P01");
        assert.match(error.message, new RegExp(`^memory: PostgreSQL at 127\\.0\\.0\\.1:${port}/app refused the credentials: password authentication failed`));
        assert.doesNotMatch(error.message, /secret/);
        return true;
      });
      answer = "reset";
      await assert.rejects(openPostgresStore({ url: `postgres://ada:secret@127.0.0.1:${port}/app` }), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error));
        assert.equal(error.kind, "network", "a connection reset (ECONNRESET) is the network's");
        assert.match(error.message, new RegExp(`^memory: cannot reach PostgreSQL at 127\\.0\\.0\\.1:${port}/app: .*ECONNRESET`));
        return true;
      });
      answer = "silent";
      const pool = new pg.Pool({ connectionString: `postgres://ada:secret@127.0.0.1:${port}/app`, connectionTimeoutMillis: 100 });
      try {
        await assert.rejects(openPostgresStore({ pool }), (error: unknown) => {
          assert.ok(AgentLoopError.isInstance(error));
          assert.equal(error.kind, "timeout");
          assert.ok(error.cause instanceof Error, "the driver's error is its cause");
          assert.match(error.message, /^memory: PostgreSQL at the given pool: .*timeout/i);
          return true;
        });
      } finally {
        await pool.end();
      }
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("names each way the network fails as a network error, with the driver's error as its cause; any other failure is unknown", async () => {
    // A pool whose connections fail as Node reports each failure (these need a real network to
    // happen: a route, a DNS server, a host that drops packets).
    const failingWith = (code: string) =>
      new pg.Pool({
        stream: () => {
          const socket = new Socket();
          socket.connect = (() => {
            process.nextTick(() => socket.destroy(Object.assign(new Error(`connect ${code} db.example:5432`), { code })));
            return socket;
          }) as never;
          return socket;
        },
      });
    for (const code of ["ECONNREFUSED", "ENOTFOUND", "ETIMEDOUT", "ECONNRESET", "EHOSTUNREACH", "EAI_AGAIN", "EACCES"]) {
      const pool = failingWith(code);
      try {
        await assert.rejects(openPostgresStore({ pool }), (error: unknown) => {
          assert.ok(AgentLoopError.isInstance(error));
          assert.equal((error.cause as { code?: string }).code, code);
          if (code === "EACCES") {
            assert.equal(error.kind, "unknown");
            assert.equal(error.message, "memory (postgres): connect EACCES db.example:5432");
          } else {
            assert.equal(error.kind, "network", code);
            assert.equal(error.message, `memory: cannot reach PostgreSQL at the given pool: connect ${code} db.example:5432`);
          }
          return true;
        });
      } finally {
        await pool.end();
      }
    }
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
    for (const remote of ["postgres://db.example/db", "postgres://10.0.0.5/db", "db.example", "postgres://localhost.example/db", "postgres://10.0.127.1/db", "127a.example", "1270.example"]) assert.equal(defaultWriteLanes(remote), 4, remote);
    assert.equal(defaultWriteLanes(undefined), 4);
  });

  it("reports a missing database as a configuration error", async () => {
    const missing = new URL(postgresUrl());
    missing.pathname = "/agentloop_no_such_database";
    await assert.rejects(openPostgresStore({ url: missing.toString() }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "configuration");
      assert.match(error.message, /agentloop_no_such_database/);
      assert.equal((error.cause as { code?: string }).code, "3D000");
      return true;
    });
  });
});
