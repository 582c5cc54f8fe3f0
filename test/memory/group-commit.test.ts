// Group commit in the embedded (SQLite) and PostgreSQL stores: appends that arrive while a write
// transaction runs (or in the same turn of the event loop) are written together in the next one.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { type AddressInfo, createServer, connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import pg from "pg";
import { AgentLoopError } from "../../src/errors.js";
import { openEmbeddedStore } from "../../src/memory/embedded.js";
import type { MemoryEvent, MemoryStore } from "../../src/memory/index.js";
import { defaultWriteLanes, openPostgresStore } from "../../src/memory/postgres.js";
import type { SqlStoreOptions } from "../../src/memory/sql-store.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "./postgres-server.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-group-commit-"));
let files = 0;
const pools: pg.Pool[] = [];

after(async () => {
  rmSync(root, { recursive: true, force: true });
  await Promise.all(pools.map((pool) => pool.end()));
  await dropSchemas();
});

/** A pool to the test server that counts the statements writing events (each its own transaction), on every connection it opens. */
function countingPool(size: number): pg.Pool & { transactions: number } {
  const pool = Object.assign(new pg.Pool({ connectionString: postgresUrl(), max: size }), { transactions: 0 });
  pools.push(pool);
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = ((...args: unknown[]) => {
      // A statement as text, or as an object (a config, or a statement the store writes itself).
      const sql = typeof args[0] === "string" ? args[0] : (args[0] as { text?: unknown } | null)?.text;
      if (typeof sql === "string" && /INSERT INTO "\w+"\.agentloop_events/.test(sql)) pool.transactions++;
      return query(...args);
    }) as typeof client.query;
  });
  return pool;
}

interface Opened {
  store: MemoryStore;
  /** Write transactions run so far (PostgreSQL only). */
  transactions?: () => number;
  /** Whether one append of a group can fail alone (PostgreSQL rejects a far-future timestamp; SQLite stores it). */
  statementErrors: boolean;
}

type Opener = (options?: SqlStoreOptions) => Promise<Opened>;

const openers: Array<[string, Opener]> = [
  ["embedded (SQLite)", async (options = {}) => ({ store: await openEmbeddedStore({ ...options, path: join(root, `${files++}.db`), groupCommit: true }), statementErrors: false })],
  [
    "postgres (4 lanes)",
    async (options = {}) => {
      const pool = countingPool(4);
      // Four lanes, as for a remote server (the test server is local: one by default).
      const store = await openPostgresStore({ pool, schema: uniqueSchema("group"), groupCommit: { lanes: 4 }, ...options });
      return { store, transactions: () => pool.transactions, statementErrors: true };
    },
  ],
];

const seqs = (events: MemoryEvent[]) => events.map((event) => event.seq);
const range = (length: number) => Array.from({ length }, (_, index) => index + 1);

for (const [name, open] of openers) {
  describe(`group commit: ${name}`, () => {
    it("many concurrent appends across sessions all land, in order, each with its own seqs, in fewer transactions", async () => {
      const { store, transactions } = await open();
      try {
        const before = transactions?.() ?? 0;
        const returned = new Map<string, MemoryEvent[]>();
        // 30 sessions writing at once, each one append after the other (1 or 2 events each), as runs do.
        const sessions = Array.from({ length: 30 }, async (_, session) => {
          const id = `s${session}`;
          const mine: MemoryEvent[] = [];
          for (let index = 0; index < 8; index++) {
            const events = Array.from({ length: 1 + (index % 2) }, (_, part) => ({ event_type: "x", content: { session, index, part } }));
            mine.push(...(await store.append(id, events)));
          }
          returned.set(id, mine);
        });
        // One more session whose 20 appends are all issued in the same tick: they keep their order.
        const burst = Promise.all(Array.from({ length: 20 }, (_, index) => store.append("burst", [{ event_type: "y", content: index }])));
        const [, burstResults] = await Promise.all([Promise.all(sessions), burst]);
        for (let session = 0; session < 30; session++) {
          const stored = await store.events(`s${session}`);
          assert.deepEqual(seqs(stored), range(12));
          assert.deepEqual(
            stored.map((event) => event.content),
            Array.from({ length: 8 }, (_, index) => Array.from({ length: 1 + (index % 2) }, (_, part) => ({ session, index, part }))).flat(),
          );
          assert.deepEqual(returned.get(`s${session}`), stored, "each append got back exactly the events stored for it");
        }
        assert.deepEqual(
          burstResults.map(([event]) => [event.seq, event.content]),
          Array.from({ length: 20 }, (_, index) => [index + 1, index]),
        );
        assert.equal((await store.getSession("burst"))?.last_seq, 20);
        if (transactions) {
          const used = transactions() - before;
          assert.ok(used < 260 / 4, `260 appends took ${used} transactions`);
        }
      } finally {
        await store.close();
      }
    });

    it("a failing append in a group fails alone; the others are written and use no seq of it", async (context) => {
      const { store, transactions, statementErrors } = await open();
      try {
        if (!statementErrors) return context.skip("no append's data can fail a SQLite statement");
        const before = transactions?.() ?? 0;
        // All issued in one tick: one group. The far-future timestamp passes validation but not PostgreSQL.
        const results = await Promise.allSettled([
          store.append("a", [{ event_type: "x", content: "a1" }]),
          store.append("bad", [
            { event_type: "x", content: "fine" },
            { event_type: "x", content: "doomed", timestamp: "+100000-01-01T00:00:00.000Z" },
          ]),
          store.append("b", [{ event_type: "x", content: "b1" }]),
          store.append("bad", [{ event_type: "x", content: "after" }]),
          store.append("a", [{ event_type: "x", content: "a2" }]),
        ]);
        assert.deepEqual(
          results.map((result) => result.status),
          ["fulfilled", "rejected", "fulfilled", "fulfilled", "fulfilled"],
        );
        const failure = (results[1] as PromiseRejectedResult).reason;
        assert.ok(AgentLoopError.isInstance(failure), String(failure));
        assert.match(failure.message, /\+100000-01-01/);
        const contents = async (session: string) => (await store.events(session)).map((event) => [event.seq, event.content]);
        assert.deepEqual(await contents("a"), [
          [1, "a1"],
          [2, "a2"],
        ]);
        assert.deepEqual(await contents("b"), [[1, "b1"]]);
        assert.deepEqual(await contents("bad"), [[1, "after"]], "none of the failed append's events, and no seq used");
        assert.equal((results[3] as PromiseFulfilledResult<MemoryEvent[]>).value[0].seq, 1);
        // One failed group, then each member on its own.
        if (transactions) assert.equal(transactions() - before, 6);
      } finally {
        await store.close();
      }
    });

    it("a group keeps the limits as if its appends ran one by one: update order, eviction, trimming", async () => {
      // One lane, so the four appends form one group (on PostgreSQL, lanes write at the same time like separate appends).
      const { store } = await open({ maxSessions: 2, maxEventsPerSession: 3, groupCommit: { lanes: 1 } });
      try {
        await Promise.all([
          store.append("x", [{ event_type: "x", content: 1 }]),
          store.append("y", [{ event_type: "x", content: 1 }]),
          store.append("z", [
            { event_type: "x", content: 1 },
            { event_type: "x", content: 2 },
          ]),
          store.append("z", [
            { event_type: "x", content: 3 },
            { event_type: "x", content: 4 },
          ]),
        ]);
        // x, y, z created in that order: x is the least recently updated and is evicted.
        assert.deepEqual(
          (await store.listSessions()).map((session) => [session.session_id, session.event_count, session.last_seq]),
          [
            ["y", 1, 1],
            ["z", 3, 4],
          ],
        );
        assert.deepEqual(
          (await store.events("z")).map((event) => [event.seq, event.content]),
          [
            [2, 2],
            [3, 3],
            [4, 4],
          ],
        );
        assert.deepEqual(
          (await store.latestEvents()).map((event) => [event.session_id, event.content]),
          [
            ["y", 1],
            ["z", 2],
            ["z", 3],
            ["z", 4],
          ],
          "across sessions, events keep the order their appends arrived in",
        );
      } finally {
        await store.close();
      }
    });

    it("close writes every append it accepted before closing", async () => {
      const { store } = await open();
      const pending = Array.from({ length: 10 }, (_, index) => store.append(`c${index % 3}`, [{ event_type: "x", content: index }]));
      await store.close();
      const stored = await Promise.all(pending);
      assert.deepEqual(
        stored.map(([event]) => event.seq),
        [1, 1, 1, 2, 2, 2, 3, 3, 3, 4],
      );
      await assert.rejects(store.append("c0", [{ event_type: "x" }]), /closed/);
    });
  });
}

/** A TCP proxy to the test server that can cut every connection (`cut`) and refuse new ones (`refuse`). */
async function cuttableProxy(): Promise<{ url: string; cut(): void; refuse: boolean; attempts: number; close(): Promise<void> }> {
  const target = new URL(postgresUrl());
  const sockets = new Set<Socket>();
  const state = {
    url: "",
    refuse: false,
    attempts: 0,
    cut: () => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    close: () => new Promise<void>((resolve) => proxy.close(() => resolve())),
  };
  const proxy = createServer((client) => {
    client.on("error", () => {});
    if (state.refuse) {
      state.attempts++;
      client.destroy();
      return;
    }
    const upstream = netConnect(Number(target.port || 5432), target.hostname);
    upstream.on("error", () => {});
    client.pipe(upstream).pipe(client);
    sockets.add(client).add(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const viaProxy = new URL(postgresUrl());
  viaProxy.hostname = "127.0.0.1";
  viaProxy.port = String((proxy.address() as AddressInfo).port);
  state.url = viaProxy.toString();
  return state;
}

describe("group commit: postgres unreachable", () => {
  it("a group fails as a whole at once, without retrying each member, when the connection is lost", async () => {
    const proxy = await cuttableProxy();
    const store = await openPostgresStore({ url: proxy.url, schema: uniqueSchema("down"), poolSize: 2, groupCommit: { lanes: 1 } });
    try {
      proxy.refuse = true;
      proxy.cut();
      const results = await Promise.allSettled(Array.from({ length: 10 }, (_, index) => store.append(`d${index}`, [{ event_type: "x" }])));
      for (const result of results) {
        assert.equal(result.status, "rejected");
        assert.ok(AgentLoopError.isInstance((result as PromiseRejectedResult).reason));
      }
      assert.ok(proxy.attempts <= 2, `${proxy.attempts} connection attempts for one group of 10 appends`);
    } finally {
      await store.close();
      await proxy.close();
    }
  });

  it("a write lane's own connection, once lost, is replaced: the group on it when it went fails at most, the next is written", async () => {
    const proxy = await cuttableProxy();
    // A pool with room for the lane's own connection (the default pool of 10 has it).
    const store = await openPostgresStore({ url: proxy.url, schema: uniqueSchema("lost"), poolSize: 4, groupCommit: { lanes: 1 } });
    try {
      assert.equal((await store.append("s", [{ event_type: "x", content: 1 }]))[0].seq, 1);
      for (const content of [2, 3]) {
        // Cut while idle (content 2: the loss may be seen only by the next group) or with a group on the wire (3).
        if (content === 2) proxy.cut();
        else setImmediate(() => proxy.cut());
        const outcome = await store.append("s", [{ event_type: "x", content }]).then(
          () => "written",
          (error: unknown) => error,
        );
        if (outcome !== "written") assert.ok(AgentLoopError.isInstance(outcome) && outcome.kind === "network" || /Connection terminated/.test(String(outcome)), String(outcome));
        const [next] = await store.append("s", [{ event_type: "x", content: `after ${content}` }]);
        const stored = (await store.events("s")).map((event) => event.content);
        assert.equal(stored.at(-1), `after ${content}`);
        assert.equal(next.seq, stored.length, "gap-free seqs");
        // A commit whose answer was lost with the connection may have happened (docs/memory.md, "Replicas").
        if (outcome === "written") assert.equal(stored.at(-2), content);
      }
    } finally {
      await store.close();
      await proxy.close();
    }
  });
});

describe("group commit: options", () => {
  it("groupCommit: false writes one transaction per append", async () => {
    // One connection: the appends run one after the other, in the order they were made.
    const pool = countingPool(1);
    const store = await openPostgresStore({ pool, schema: uniqueSchema("group"), groupCommit: false });
    try {
      const before = pool.transactions;
      const stored = await Promise.all(Array.from({ length: 5 }, (_, index) => store.append(`s${index % 2}`, [{ event_type: "x", content: index }])));
      assert.equal(pool.transactions - before, 5);
      assert.deepEqual(
        stored.map(([event]) => event.seq),
        [1, 1, 2, 2, 3],
      );
    } finally {
      await store.close();
    }
  });

  it("takes one write lane for a server on this machine, four for one elsewhere", async () => {
    for (const local of ["postgres://u@127.0.0.1:5432/db", "postgresql://localhost/db", "postgres://u@[::1]:5432/db", "postgres:///db", "postgres://u@x/db?host=/var/run/postgresql", "/tmp/sockets"]) {
      assert.equal(defaultWriteLanes(local), 1, local);
    }
    for (const remote of ["postgres://u@db.example.com:5432/db", "postgres://u@10.0.0.5/db", "postgres://u@localhost.example.com/db", undefined]) {
      assert.equal(defaultWriteLanes(remote), 4, String(remote));
    }
    // On the local test server: appends to four sessions at once are one group, one transaction.
    const pool = countingPool(4);
    const store = await openPostgresStore({ pool, schema: uniqueSchema("group") });
    try {
      await store.append("warm", [{ event_type: "x" }]);
      const before = pool.transactions;
      await Promise.all(["a", "b", "c", "d"].map((sessionId) => store.append(sessionId, [{ event_type: "x" }])));
      assert.equal(pool.transactions - before, 1);
    } finally {
      await store.close();
    }
  });

  it("rejects a lane count that is not a positive integer", async () => {
    for (const lanes of [0, 1.5]) {
      await assert.rejects(openPostgresStore({ pool: countingPool(1), schema: uniqueSchema("group"), groupCommit: { lanes } }), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error));
        assert.equal(error.kind, "configuration");
        assert.match(error.message, new RegExp(`groupCommit.lanes must be a positive integer, got ${lanes}`));
        return true;
      });
    }
  });
});
