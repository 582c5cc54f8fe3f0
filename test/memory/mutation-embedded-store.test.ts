// The embedded store's own rules (src/memory/sqlite/store.ts) that the conformance suite leaves
// open, through its public API.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { openEmbeddedStore } from "../../src/memory/embedded.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-embedded-rules-"));
after(() => rmSync(root, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(root, `store-${files++}.db`);

/** Another connection to the store's file (what a user's `sqlite3` shell would see). */
function otherConnection(path: string): { exec(sql: string): void; prepare(sql: string): { get(): Record<string, unknown> }; close(): void } {
  const Database = createRequire(import.meta.url)("libsql");
  return new Database(path);
}

describe("embedded store: what it says of itself, sessions made again, an aborted lock", () => {
  it("is of kind embedded, its appends kept in call order; closed, it says so by its kind", async () => {
    const store = await openEmbeddedStore({ path: freshFile() });
    assert.equal(store.kind, "embedded");
    assert.equal(store.appendsInOrder, true);
    await store.close();
    await assert.rejects(store.listSessions(), (error: unknown) => AgentLoopError.isInstance(error) && error.message === "memory: the embedded store is closed");
  });

  it("createSession of a session that exists (and has not expired) leaves its place in update order and its time as they were", async () => {
    const store = await openEmbeddedStore({ path: freshFile(), retentionMs: 3_600_000 });
    try {
      const first = await store.createSession("a");
      await store.createSession("b");
      const again = await store.createSession("a");
      assert.equal(again.updated_at, first.updated_at);
      assert.deepEqual(
        (await store.listSessions()).map((session) => session.session_id),
        ["a", "b"],
      );
    } finally {
      await store.close();
    }
  });

  it("lockSession with a signal already aborted rejects without taking the session, even when it is free", async () => {
    const store = await openEmbeddedStore({ path: freshFile() });
    try {
      await assert.rejects(store.lockSession("s", AbortSignal.abort()), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "aborted");
      // Not taken: another wait for it gets it at once.
      const release = await store.lockSession("s", AbortSignal.timeout(2000));
      await release();
    } finally {
      await store.close();
    }
  });
});

describe("embedded store: a write that fails on this thread", () => {
  for (const [label, options] of [
    ["no group commit", { groupCommit: false }],
    ["group commits on the JavaScript thread", { writesOffThread: false }],
    ["group commits off the thread", {}],
  ] as const) {
    it(`${label}: the failure is an unknown AgentLoopError with the driver's error as its cause, the transaction is rolled back, the next write goes through`, async () => {
      const path = freshFile();
      const store = await openEmbeddedStore({ path, ...options });
      const other = otherConnection(path);
      try {
        // A rule of the database's own, as a user may add one.
        other.exec("CREATE TRIGGER refuse_poison BEFORE INSERT ON agentloop_events WHEN NEW.event_type = 'poison' BEGIN SELECT RAISE(ABORT, 'poison refused'); END");
        // The store's first group (its sessions not counted yet: the longer way, which reads first), then one on a session it wrote.
        await assert.rejects(store.append("p", [{ event_type: "poison" }]), /poison refused/);
        await store.append("s", [{ event_type: "x", content: 1 }]);
        await assert.rejects(store.append("s", [{ event_type: "poison" }]), (error: unknown) => {
          assert.ok(AgentLoopError.isInstance(error), String(error));
          assert.equal(error.kind, "unknown");
          assert.equal(error.retryable, false);
          const cause = error.cause as Error;
          assert.match(cause.message, /poison refused/);
          assert.equal(error.message, `memory (embedded): ${cause.message}`);
          return true;
        });
        const [next] = await store.append("s", [{ event_type: "x", content: 2 }]);
        assert.equal(next.seq, 2, "the failed append used no seq");
        assert.deepEqual(
          (await store.events("s")).map((event) => event.content),
          [1, 2],
        );
      } finally {
        other.close();
        await store.close();
      }
    });
  }

  it("past the busy timeout, the error is a retryable rate_limit naming the file", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, busyTimeoutMs: 0, groupCommit: false });
    const other = otherConnection(path);
    try {
      other.exec("BEGIN IMMEDIATE");
      await assert.rejects(store.createSession("s"), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error), String(error));
        assert.equal(error.kind, "rate_limit");
        assert.equal(error.retryable, true);
        assert.ok(error.message.startsWith(`memory (embedded): ${path} stayed locked by another process's write past the busy timeout (`), error.message);
        return true;
      });
      other.exec("COMMIT");
      assert.equal((await store.createSession("s")).session_id, "s");
    } finally {
      other.close();
      await store.close();
    }
  });
});

describe("embedded store: retention", () => {
  it("expired rows are deleted by prune(), by a store's first write (a session made, or a group), then at most once a minute; the first group after open keeps the limits", async () => {
    const path = freshFile();
    const hour = 3_600_000;
    const old = new Date(Date.now() - 2 * hour).toISOString();
    const expired = (content: number) => [{ event_type: "x", content, timestamp: old }];
    const other = otherConnection(path);
    const rows = () => Number(other.prepare("SELECT count(*) AS n FROM agentloop_events").get().n);
    const first = await openEmbeddedStore({ path, retentionMs: hour, maxEventsPerSession: 2 });
    try {
      // The first group prunes (nothing yet) and keeps the limit of 2 events.
      await first.append("kept", [1, 2, 3].map((content) => ({ event_type: "x", content })));
      assert.deepEqual(
        (await first.events("kept")).map((event) => event.content),
        [2, 3],
      );
      await first.append("s", expired(1));
      await first.append("other", [{ event_type: "x", content: 1 }]);
      await first.createSession("n1");
      assert.equal(rows(), 4, "within the minute: neither a group nor a session made pruned");
      await first.prune();
      assert.equal(rows(), 3);
      await first.append("s", expired(2));
      assert.equal(rows(), 4);
      // Another store's first session made prunes.
      const second = await openEmbeddedStore({ path, retentionMs: hour });
      await second.createSession("n2");
      assert.equal(rows(), 3);
      await second.close();
      await first.append("s", expired(3));
      // Another store's first group prunes.
      const third = await openEmbeddedStore({ path, retentionMs: hour });
      await third.append("t", [{ event_type: "x", content: 4 }]);
      assert.equal(rows(), 4);
      await third.close();
      assert.deepEqual(await first.events("s"), []);
    } finally {
      other.close();
      await first.close();
    }
  });
});

describe("embedded store: transactions", () => {
  it("groupCommit: false commits each append on its own; with group commit, appends made at once share one commit (frames the log grew by)", async () => {
    const frames = async (options: { groupCommit?: boolean; writesOffThread?: boolean }) => {
      const path = freshFile();
      const store = await openEmbeddedStore({ path, backgroundCheckpoints: false, ...options });
      try {
        await store.append("warm", [{ event_type: "x" }]);
        const log = () => statSync(`${path}-wal`).size;
        const before = log();
        await Promise.all(Array.from({ length: 10 }, (_, index) => store.append(`s${index}`, [{ event_type: "x", content: index }])));
        // 4,096-byte pages, each frame with its 24-byte header.
        return (log() - before) / (4096 + 24);
      } finally {
        await store.close();
      }
    };
    const alone = await frames({ groupCommit: false });
    assert.ok(alone >= 10, `ten appends alone: ${alone} frames`);
    for (const options of [{}, { writesOffThread: false }]) {
      const together = await frames(options);
      assert.ok(together < 10, `ten appends at once, ${JSON.stringify(options)}: ${together} frames`);
    }
  });
});

describe("embedded store: locks on the JavaScript thread", () => {
  for (const [label, options] of [
    ["group commits on the JavaScript thread", { writesOffThread: false }],
    ["no group commit", { groupCommit: false }],
  ] as const) {
    it(`${label}: a lock attempt alone and a release alone are each written`, async () => {
      const path = freshFile();
      const store = await openEmbeddedStore({ path, ...options });
      const other = otherConnection(path);
      try {
        const release = await store.lockSession("s", AbortSignal.timeout(5000));
        assert.equal(Number(other.prepare("SELECT count(*) AS n FROM agentloop_session_locks").get().n), 1);
        await release();
        assert.equal(Number(other.prepare("SELECT count(*) AS n FROM agentloop_session_locks").get().n), 0);
      } finally {
        other.close();
        await store.close();
      }
    });
  }
});

describe("embedded store: groups with locks", () => {
  it("two lock attempts, then two releases, each made at once in one group, all take effect", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path });
    const other = otherConnection(path);
    const held = () => Number(other.prepare("SELECT count(*) AS n FROM agentloop_session_locks").get().n);
    try {
      const releases = await Promise.all([store.lockSession("a"), store.lockSession("b")]);
      assert.equal(held(), 2);
      await Promise.all(releases.map((release) => release()));
      assert.equal(held(), 0);
    } finally {
      other.close();
      await store.close();
    }
  });

  it("a group with a lock attempt and appends to sessions another store on the file wrote: the appends continue those sessions' seqs", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path });
    const writer = await openEmbeddedStore({ path });
    try {
      await store.append("mine", [{ event_type: "x" }]);
      await Promise.all(["s1", "s2"].map((session) => writer.append(session, [{ event_type: "x" }, { event_type: "x" }])));
      const [release, first, second] = await Promise.all([
        store.lockSession("t"),
        store.append("s1", [{ event_type: "x", content: "s1" }]),
        store.append("s2", [{ event_type: "x", content: "s2" }]),
      ]);
      assert.deepEqual(
        [first[0].seq, second[0].seq],
        [3, 3],
      );
      await release();
      // And with sessions it wrote last, which another store wrote since.
      await Promise.all(["s1", "s2"].map((session) => writer.append(session, [{ event_type: "x" }])));
      const [again, third] = await Promise.all([store.lockSession("t"), store.append("s1", [{ event_type: "x" }])]);
      assert.equal(third[0].seq, 5);
      await again();
    } finally {
      await writer.close();
      await store.close();
    }
  });
});

describe("embedded store: sessions beyond maxSessions", () => {
  it("another store's sessions are counted at this store's next count; the sessions it makes itself never pass the limit once counted", async () => {
    const path = freshFile();
    // maxSessions 30: a count every 3 sessions made here.
    const store = await openEmbeddedStore({ path, maxSessions: 30 });
    const other = await openEmbeddedStore({ path, maxSessions: 1000 });
    try {
      for (let index = 1; index <= 6; index++) await store.append(`n${index}`, [{ event_type: "x" }]);
      await Promise.all(Array.from({ length: 22 }, (_, index) => other.append(`r${index}`, [{ event_type: "x" }])));
      const sizes: number[] = [];
      for (let index = 1; index <= 5; index++) {
        await store.append(`m${index}`, [{ event_type: "x" }]);
        sizes.push((await store.listSessions()).length);
      }
      // 6 counted at 4 (2 made since), 22 more: m1 is the third made since, a count (29); m2 is not
      // past 30 with it (30); m3 is (29 counted + 2 made): counted, evicted to 30, and so on.
      assert.deepEqual(sizes, [29, 30, 30, 30, 30]);
    } finally {
      await other.close();
      await store.close();
    }
  });
});
