// Group commit in the SQL store (embedded PGlite and PostgreSQL): appends that arrive while a
// write transaction runs are written together in the next one, each keeping its own outcome.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { type AddressInfo, createServer, connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PGlite } from "@electric-sql/pglite";
import { AgentLoopError } from "../../src/errors.js";
import { type SqlDatabase, SqlMemoryStore, type SqlStoreOptions } from "../../src/memory/sql-store.js";
import type { MemoryEvent, MemoryStore } from "../../src/memory/index.js";
import { openPostgresStore } from "../../src/memory/postgres.js";
import { freshEmbeddedDirectory } from "./embedded-template.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "./postgres-server.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-group-commit-"));
let database: PGlite;
let schemas = 0;

before(async () => {
  database = await PGlite.create(await freshEmbeddedDirectory(join(root, "db")));
});
after(async () => {
  await database.close();
  rmSync(root, { recursive: true, force: true });
  await dropSchemas();
});

/** The embedded database behind a `SqlDatabase` that counts the statements writing events (each its own transaction). */
function countingDatabase(db: PGlite): SqlDatabase & { transactions: number } {
  const counting = {
    transactions: 0,
    query: async (text: string, params?: unknown[]) => {
      if (/INSERT INTO "\w+"\.agentloop_events/.test(text)) counting.transactions++;
      return (await db.query<Record<string, unknown>>(text, params)).rows;
    },
    transaction<T>(fn: Parameters<SqlDatabase["transaction"]>[0]): Promise<T> {
      return db.transaction((tx) => fn({ query: async (text, params) => (await tx.query<Record<string, unknown>>(text, params)).rows })) as Promise<T>;
    },
    close: async () => {},
  };
  return counting;
}

interface Opened {
  store: MemoryStore;
  /** Write transactions run so far (embedded only). */
  transactions?: () => number;
}

type Opener = (options?: SqlStoreOptions) => Promise<Opened>;

const openers: Array<[string, Opener]> = [
  [
    "embedded (PGlite)",
    async (options = {}) => {
      const counting = countingDatabase(database);
      const store = await SqlMemoryStore.open("embedded", counting, { schema: `group_${schemas++}`, ...options });
      return { store, transactions: () => counting.transactions };
    },
  ],
  ["postgres (4 lanes)", async (options = {}) => ({ store: await openPostgresStore({ url: postgresUrl(), schema: uniqueSchema("group"), poolSize: 4, ...options }) })],
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

    it("a failing append in a group fails alone; the others are written and use no seq of it", async () => {
      const { store, transactions } = await open();
      try {
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

describe("group commit: postgres unreachable", () => {
  it("a group fails as a whole at once, without retrying each member, when the connection is lost", async () => {
    const target = new URL(postgresUrl());
    let refuse = false;
    let attempts = 0;
    const sockets = new Set<Socket>();
    // A TCP proxy to the server that can cut every connection and refuse new ones.
    const proxy = createServer((client) => {
      client.on("error", () => {});
      if (refuse) {
        attempts++;
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
    const store = await openPostgresStore({ url: viaProxy.toString(), schema: uniqueSchema("down"), poolSize: 2, groupCommit: { lanes: 1 } });
    try {
      refuse = true;
      for (const socket of sockets) socket.destroy();
      const results = await Promise.allSettled(Array.from({ length: 10 }, (_, index) => store.append(`d${index}`, [{ event_type: "x" }])));
      for (const result of results) {
        assert.equal(result.status, "rejected");
        assert.ok(AgentLoopError.isInstance((result as PromiseRejectedResult).reason));
      }
      assert.ok(attempts <= 2, `${attempts} connection attempts for one group of 10 appends`);
    } finally {
      await store.close();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});

describe("group commit: options", () => {
  it("groupCommit: false writes one transaction per append", async () => {
    const counting = countingDatabase(database);
    const store = await SqlMemoryStore.open("embedded", counting, { schema: `group_${schemas++}`, groupCommit: false });
    try {
      const before = counting.transactions;
      const stored = await Promise.all(Array.from({ length: 5 }, (_, index) => store.append(`s${index % 2}`, [{ event_type: "x", content: index }])));
      assert.equal(counting.transactions - before, 5);
      assert.deepEqual(
        stored.map(([event]) => event.seq),
        [1, 1, 2, 2, 3],
      );
    } finally {
      await store.close();
    }
  });

  it("rejects a lane count that is not a positive integer", async () => {
    for (const lanes of [0, 1.5]) {
      await assert.rejects(SqlMemoryStore.open("embedded", countingDatabase(database), { groupCommit: { lanes } }), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error));
        assert.equal(error.kind, "configuration");
        assert.match(error.message, new RegExp(`groupCommit.lanes must be a positive integer, got ${lanes}`));
        return true;
      });
    }
  });
});
