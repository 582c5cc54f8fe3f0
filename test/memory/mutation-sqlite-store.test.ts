// The embedded store's (src/memory/sqlite/) documented behaviour that the conformance suite leaves
// open (docs/memory.md, "Embedded"): an append made with `{ returnEvents: false }` resolves with
// no events; a group is one call to the writer connection when the file is as this process
// expects, and goes the longer way (a read first) when another process wrote its sessions.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { openEmbeddedStore } from "../../src/memory/embedded.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-sqlite-store-"));
after(() => rmSync(root, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(root, `store-${files++}.db`);

/** The writer connection's calls (each a trip to the driver's thread), counted on libsql/promise's own classes. */
const calls = { exec: 0, iterate: 0 };
let restore = () => {};
before(async () => {
  const AsyncDatabase = createRequire(import.meta.url)("libsql/promise");
  const probe = new AsyncDatabase(":memory:");
  const statementClass = Object.getPrototypeOf(await probe.prepare("SELECT 1"));
  probe.close();
  const { exec } = AsyncDatabase.prototype;
  const { iterate } = statementClass;
  AsyncDatabase.prototype.exec = function (this: unknown, ...args: unknown[]) {
    calls.exec++;
    return exec.apply(this, args);
  };
  statementClass.iterate = function (this: unknown, ...args: unknown[]) {
    calls.iterate++;
    return iterate.apply(this, args);
  };
  restore = () => {
    AsyncDatabase.prototype.exec = exec;
    statementClass.iterate = iterate;
  };
});
after(() => restore());

/** The writer's calls made by `fn`. */
async function callsOf(fn: () => Promise<unknown>): Promise<{ exec: number; iterate: number }> {
  calls.exec = 0;
  calls.iterate = 0;
  await fn();
  return { ...calls };
}

describe("embedded store: an append made with returnEvents: false", () => {
  for (const [label, options] of [
    ["group commits off the thread", {}],
    ["group commits on the JavaScript thread", { writesOffThread: false }],
    ["no group commit", { groupCommit: false }],
  ] as const) {
    it(`${label}: resolves with no events (none are built), the events stored as any other`, async () => {
      const store = await openEmbeddedStore({ path: freshFile(), backgroundCheckpoints: false, ...options });
      try {
        const [quiet, loud] = await Promise.all([
          store.append("s", [{ event_type: "x", content: 1 }, { event_type: "x", content: 2 }], { returnEvents: false }),
          store.append("s", [{ event_type: "x", content: 3 }], { returnEvents: true }),
        ]);
        assert.deepEqual(quiet, []);
        assert.deepEqual(
          loud.map((event) => [event.seq, event.content]),
          [[3, 3]],
        );
        assert.deepEqual(
          (await store.events("s")).map((event) => [event.seq, event.content]),
          [
            [1, 1],
            [2, 2],
            [3, 3],
          ],
        );
      } finally {
        await store.close();
      }
    });
  }
});

describe("embedded store: a group is one call to the writer when the file is as this store expects (docs/memory.md)", () => {
  it("appends to sessions it wrote last, to new sessions, with a lock attempt, a release alone, and after a session's deletion: one call each", async () => {
    const store = await openEmbeddedStore({ path: freshFile(), backgroundCheckpoints: false });
    try {
      // The first group making a session reads the count of sessions (the longer way).
      await store.append("s", [{ event_type: "x", content: 1 }]);
      const oneCall = { exec: 1, iterate: 0 };
      assert.deepEqual(await callsOf(() => store.append("s", [{ event_type: "x", content: 2 }])), oneCall, "a session it wrote last");
      assert.deepEqual(await callsOf(() => store.append("t", [{ event_type: "x", content: 1 }])), oneCall, "a new session");
      assert.deepEqual(
        await callsOf(() =>
          Promise.all([
            store.append("s", [{ event_type: "x", content: 3 }]),
            store.append("u", [{ event_type: "x", content: 1 }]),
            store.append("t", [{ event_type: "x", content: 2 }]),
          ]),
        ),
        oneCall,
        "sessions it wrote and a new one, in one group",
      );
      let release: () => Promise<void> = async () => {};
      assert.deepEqual(
        await callsOf(async () => {
          [release] = await Promise.all([store.lockSession("s"), store.append("s", [{ event_type: "x", content: 4 }])]);
        }),
        oneCall,
        "a lock attempt with an append",
      );
      assert.deepEqual(await callsOf(() => release()), oneCall, "a release alone");
      assert.equal(await store.deleteSession("t"), true);
      assert.deepEqual(await callsOf(() => store.append("t", [{ event_type: "x", content: "again" }])), oneCall, "a session it deleted, made again");
      assert.deepEqual(
        (await store.events("s")).map((event) => [event.seq, event.content]),
        [
          [1, 1],
          [2, 2],
          [3, 3],
          [4, 4],
        ],
      );
      assert.deepEqual(
        (await store.events("t")).map((event) => [event.seq, event.content]),
        [[1, "again"]],
      );
      assert.deepEqual(
        (await store.listSessions()).map((session) => session.session_id),
        ["u", "s", "t"],
      );
    } finally {
      await store.close();
    }
  });

  it("a release and a lock attempt on other sessions in one group: one call; on the same session: the longer way at once, and the lock changes hands", async () => {
    const store = await openEmbeddedStore({ path: freshFile(), backgroundCheckpoints: false });
    try {
      const releaseA = await store.lockSession("a");
      let releaseB: () => Promise<void> = async () => {};
      assert.deepEqual(
        await callsOf(async () => {
          [, releaseB] = await Promise.all([releaseA(), store.lockSession("b")]);
        }),
        { exec: 1, iterate: 0 },
      );
      let again: () => Promise<void> = async () => {};
      assert.deepEqual(
        await callsOf(async () => {
          [, again] = await Promise.all([releaseB(), store.lockSession("b", AbortSignal.timeout(5000))]);
        }),
        { exec: 2, iterate: 1 },
        "BEGIN and the writes before the read; the read; the rest and COMMIT",
      );
      await again();
    } finally {
      await store.close();
    }
  });

  it("another store on the file wrote the session since: the one call fails its guard, is rolled back, and the group goes the longer way", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, backgroundCheckpoints: false });
    const other = await openEmbeddedStore({ path, backgroundCheckpoints: false, writesOffThread: false });
    try {
      await store.append("s", [{ event_type: "x", content: 1 }]);
      await other.append("s", [{ event_type: "x", content: 2 }]);
      assert.deepEqual(await callsOf(() => store.append("s", [{ event_type: "x", content: 3 }])), { exec: 4, iterate: 1 }, "the one call, ROLLBACK, then two calls and the read");
      assert.deepEqual(await callsOf(() => store.append("s", [{ event_type: "x", content: 4 }])), { exec: 1, iterate: 0 }, "then one call again");
      assert.deepEqual(
        (await other.events("s")).map((event) => [event.seq, event.content]),
        [
          [1, 1],
          [2, 2],
          [3, 3],
          [4, 4],
        ],
      );
    } finally {
      await other.close();
      await store.close();
    }
  });
});
