import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { AgentLoopError } from "../../src/errors.js";
import { embeddedFileOf, openEmbeddedStore } from "../../src/memory/embedded.js";
import { memoryConfigFromEnv } from "../../src/memory/index.js";
import { tsChild } from "../ts-child.js";
import { memoryStoreConformance } from "./conformance.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-embedded-"));
after(() => rmSync(root, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(root, `store-${files++}.db`);

memoryStoreConformance("embedded (SQLite)", async (limits) => openEmbeddedStore({ ...limits, path: freshFile() }));
memoryStoreConformance("embedded (SQLite, group commits on the JavaScript thread)", async (limits) =>
  openEmbeddedStore({ ...limits, path: freshFile(), writesOffThread: false }),
);
memoryStoreConformance("embedded (SQLite, no group commit)", async (limits) => openEmbeddedStore({ ...limits, path: freshFile(), groupCommit: false }));

const appendInChild = promisify(execFile);
const appendChild = fileURLToPath(new URL("./fixtures/append-child.ts", import.meta.url));
/** A separate process appending `count` events one by one to `session` of the store at `path`. */
async function childAppends(path: string, session: string, count: number) {
  const env = { ...process.env, STORE_PATH: path, SESSION: session, COUNT: String(count) };
  return appendInChild(process.execPath, await tsChild(appendChild), { env });
}

describe("embedded store: its file", () => {
  it("persists sessions across close and reopen; two stores on one file see each other's writes at once", async () => {
    const path = freshFile();
    const first = await openEmbeddedStore({ path });
    await first.append("s", [{ event_type: "user_message", content: "remember me" }]);
    const second = await openEmbeddedStore({ path });
    try {
      assert.deepEqual(
        (await second.events("s")).map((event) => [event.seq, event.content]),
        [[1, "remember me"]],
      );
      assert.equal((await second.append("s", [{ event_type: "x" }]))[0].seq, 2);
      assert.equal((await first.append("s", [{ event_type: "y" }]))[0].seq, 3, "seqs continue across the writers");
    } finally {
      await first.close();
      await second.close();
    }
    const reopened = await openEmbeddedStore({ path });
    try {
      assert.deepEqual(
        (await reopened.events("s")).map((event) => event.event_type),
        ["user_message", "x", "y"],
      );
    } finally {
      await reopened.close();
    }
  });

  it("two processes append to one session at once: every event lands, seqs gap-free, each append's events adjacent", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path });
    try {
      const writing = childAppends(path, "shared", 60);
      for (let index = 0; index < 60; index++) await store.append("shared", [{ event_type: "x", content: { pid: process.pid, index } }, { event_type: "y", content: { pid: process.pid, index } }]);
      await writing;
      const events = await store.events("shared");
      assert.deepEqual(
        events.map((event) => event.seq),
        Array.from({ length: 240 }, (_, index) => index + 1),
      );
      for (let index = 0; index < 240; index += 2) assert.deepEqual(events[index].content, events[index + 1].content);
      assert.equal(new Set(events.map((event) => (event.content as { pid: number }).pid)).size, 2);
    } finally {
      await store.close();
    }
  });

  it("a write waits for another connection's write, then fails with a clear error past the busy timeout", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, busyTimeoutMs: 100 });
    const Database = createRequire(import.meta.url)("libsql");
    const other = new Database(path);
    try {
      other.exec("BEGIN IMMEDIATE");
      await assert.rejects(store.append("s", [{ event_type: "x" }]), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error));
        assert.equal(error.kind, "rate_limit");
        assert.match(error.message, /stayed locked by another process's write past the busy timeout/);
        return true;
      });
      other.exec("COMMIT");
      assert.equal((await store.append("s", [{ event_type: "x" }]))[0].seq, 1, "the failed append used no seq");
    } finally {
      other.close();
      await store.close();
    }
  });

  it("a group that fails (the file locked past the busy timeout) rejects every append and lock attempt in it with one error, and writes none of it", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, busyTimeoutMs: 100 });
    const Database = createRequire(import.meta.url)("libsql");
    const other = new Database(path);
    try {
      const release = await store.lockSession("held");
      await store.append("a", [{ event_type: "x", content: "before" }]);
      other.exec("BEGIN IMMEDIATE");
      // All made in one turn: one group.
      const releasing = release();
      const results = await Promise.allSettled([
        store.append("a", [{ event_type: "x", content: "a2" }]),
        store.append("b", [{ event_type: "x", content: "b1" }, { event_type: "x", content: "b2" }]),
        store.lockSession("c"),
        store.append("a", [{ event_type: "x", content: "a3" }]),
      ]);
      other.exec("COMMIT");
      // The release, failed with its group, goes again on its own (the session is not left locked).
      await releasing;
      const reasons = results.map((result) => (result.status === "rejected" ? result.reason : undefined));
      assert.deepEqual(
        results.map((result) => result.status),
        ["rejected", "rejected", "rejected", "rejected"],
      );
      assert.ok(AgentLoopError.isInstance(reasons[0]) && reasons[0].kind === "rate_limit", String(reasons[0]));
      assert.ok(reasons.every((reason) => reason === reasons[0]), "one error for the whole group");
      assert.deepEqual((await store.events("a")).map((event) => [event.seq, event.content]), [[1, "before"]]);
      assert.deepEqual(await store.events("b"), []);
      // Nothing half-written: the next group continues the seqs, and the lock of "c" and "held" are free.
      assert.deepEqual((await store.append("a", [{ event_type: "x", content: "after" }])).map((event) => event.seq), [2]);
      await (await store.lockSession("c"))();
      await (await store.lockSession("held"))();
    } finally {
      other.close();
      await store.close();
    }
  });

  it("a group whose session another process wrote between its read and its transaction is written again, after that write", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, busyTimeoutMs: 5000 });
    const Database = createRequire(import.meta.url)("libsql");
    const other = new Database(path);
    try {
      await store.append("s", [{ event_type: "x", content: "first" }]);
      other.exec("BEGIN IMMEDIATE");
      // The group reads the session (last seq 1), then waits for the file's write lock.
      const appended = store.append("s", [{ event_type: "x", content: "mine" }]);
      await new Promise((resolve) => setTimeout(resolve, 30));
      // Meanwhile another process appends seq 2 to the same session.
      other
        .prepare("INSERT INTO agentloop_events (session_id, seq, event_id, timestamp, timestamp_ms, event_type, content, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        .run(["s", 2, "evt_other", new Date(0).toISOString(), 0, "x", JSON.stringify("theirs"), "{}"]);
      other.prepare("UPDATE agentloop_sessions SET last_seq = 2 WHERE session_id = ?").run(["s"]);
      other.exec("COMMIT");
      assert.deepEqual((await appended).map((event) => event.seq), [3]);
      assert.deepEqual((await store.events("s")).map((event) => [event.seq, event.content]), [
        [1, "first"],
        [2, "theirs"],
        [3, "mine"],
      ]);
    } finally {
      other.close();
      await store.close();
    }
  });

  it("a read made while a group is being written sees it and the appends queued after it; close writes them all", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path });
    const first = Array.from({ length: 50 }, (_, index) => store.append(`s${index % 5}`, [{ event_type: "x", content: index }]));
    // The first group starts on the next turn; these join the one after it.
    await new Promise((resolve) => setImmediate(resolve));
    const second = Array.from({ length: 50 }, (_, index) => store.append(`s${index % 5}`, [{ event_type: "x", content: 50 + index }]));
    const seen = await store.events("s0");
    assert.deepEqual(
      seen.map((event) => event.content),
      Array.from({ length: 20 }, (_, index) => index * 5),
    );
    assert.deepEqual(
      seen.map((event) => event.seq),
      Array.from({ length: 20 }, (_, index) => index + 1),
    );
    await Promise.all([...first, ...second]);
    // Close while a group is being written: it waits for it, then writes what is queued after it.
    await store.append("t", [{ event_type: "x", content: 0 }]);
    void store.append("t", [{ event_type: "x", content: 1 }]);
    await new Promise((resolve) => setImmediate(resolve));
    void store.append("t", [{ event_type: "x", content: 2 }]);
    await store.close();
    const reopened = await openEmbeddedStore({ path });
    try {
      assert.deepEqual((await reopened.events("t")).map((event) => event.content), [0, 1, 2]);
    } finally {
      await reopened.close();
    }
  });

  it("lockSession: a release made right after an append (not awaited) hands the session over only with that append written", async () => {
    const path = freshFile();
    const first = await openEmbeddedStore({ path });
    const second = await openEmbeddedStore({ path });
    try {
      await (await first.lockSession("s"))();
      const release = await first.lockSession("s");
      const taken = second.lockSession("s").then(async (releaseSecond) => {
        // The new holder sees the previous holder's last events.
        const seen = (await second.events("s")).map((event) => event.content);
        await releaseSecond();
        return seen;
      });
      const appended = first.append("s", [{ event_type: "x", content: "last words" }]);
      const released = release();
      await Promise.all([appended, released]);
      assert.deepEqual(await taken, ["last words"]);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it("lockSession: processes on one file take turns on a session; a dead holder's lock is taken over; waiting stops on abort", async () => {
    const path = freshFile();
    const first = await openEmbeddedStore({ path });
    const second = await openEmbeddedStore({ path });
    try {
      const release = await first.lockSession("s");
      let acquired = false;
      const waiting = second.lockSession("s").then((releaseSecond) => {
        acquired = true;
        return releaseSecond;
      });
      const other = await second.lockSession("other");
      await other();
      const controller = new AbortController();
      const aborted = assert.rejects(second.lockSession("s", controller.signal), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "aborted");
      controller.abort();
      await aborted;
      assert.equal(acquired, false, "still held by the first store");
      await release();
      await (await waiting)();
      // A lock row left by a killed process (a pid that cannot exist here) is stale.
      const Database = createRequire(import.meta.url)("libsql");
      const raw = new Database(path);
      raw.prepare("INSERT INTO agentloop_session_locks (session_id, owner_pid, owner_host, token) VALUES (?, ?, ?, ?)").run(["s", 2147483646, hostname(), "dead"]);
      raw.close();
      await (await second.lockSession("s"))();
      // A store closed while holding a lock gives it back.
      await first.lockSession("held-at-close");
      await first.close();
      await (await second.lockSession("held-at-close"))();
    } finally {
      await first.close();
      await second.close();
    }
  });

  it("a session this store never wrote but another process made (with events, or empty by createSession) is appended to after them", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path });
    const other = await openEmbeddedStore({ path });
    try {
      // A first session of its own (it counts the sessions then; the next ones, far below the limit, go in one call).
      await store.append("own", [{ event_type: "user_message", content: "own" }]);
      await other.append("made", [{ event_type: "user_message", content: "first" }]);
      await other.createSession("empty");
      // This store's group expects both to be new: its insert of their rows fails, and the group goes the longer way.
      const [made, empty] = await Promise.all([
        store.append("made", [{ event_type: "user_message", content: "second" }]),
        store.append("empty", [{ event_type: "user_message", content: "one" }]),
      ]);
      assert.deepEqual([made[0].seq, empty[0].seq], [2, 1]);
      assert.deepEqual((await other.events("made")).map((event) => [event.seq, event.content]), [[1, "first"], [2, "second"]]);
      assert.equal((await other.getSession("empty"))?.event_count, 1);
    } finally {
      await other.close();
      await store.close();
    }
  });

  it("maxSessions: new sessions below the limit are not counted each time, yet the limit holds, other processes' sessions counted within a tenth of it", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, maxSessions: 50 });
    const other = await openEmbeddedStore({ path, maxSessions: 1000 });
    try {
      const ids = Array.from({ length: 60 }, (_, index) => `s${String(index).padStart(2, "0")}`);
      for (const id of ids) {
        await store.append(id, [{ event_type: "user_message", content: id }]);
        assert.ok((await other.listSessions()).length <= 50, `over the limit after ${id}`);
      }
      assert.deepEqual(
        (await other.listSessions()).map((session) => session.session_id),
        ids.slice(10),
      );
    } finally {
      await other.close();
      await store.close();
    }
    // On a new file, this store makes 20 sessions (far below its limit), another process 40 (its own limit is higher).
    const second = freshFile();
    const below = await openEmbeddedStore({ path: second, maxSessions: 50 });
    const more = await openEmbeddedStore({ path: second, maxSessions: 1000 });
    try {
      for (let index = 0; index < 20; index++) await below.append(`b${String(index).padStart(2, "0")}`, [{ event_type: "user_message", content: "below" }]);
      for (let index = 0; index < 40; index++) await more.append(`o${String(index).padStart(2, "0")}`, [{ event_type: "user_message", content: "other" }]);
      assert.equal((await more.listSessions()).length, 60);
      // This store counts again within a tenth of its limit (5 new sessions), and evicts down to it.
      for (let index = 0; index < 5; index++) await below.append(`n${index}`, [{ event_type: "user_message", content: "new" }]);
      const left = (await more.listSessions()).map((session) => session.session_id);
      assert.equal(left.length, 50);
      assert.deepEqual(left.slice(-5), ["n0", "n1", "n2", "n3", "n4"]);
    } finally {
      await more.close();
      await below.close();
    }
  });

  it("maxSessions at the limit: a new session evicts the oldest in its group's one call to the writer (no read of the count), and never below the limit", async () => {
    // The writer connection's calls, counted on libsql/promise's own classes (the store's driver).
    const AsyncDatabase = createRequire(import.meta.url)("libsql/promise");
    const probe = new AsyncDatabase(":memory:");
    const statementClass = Object.getPrototypeOf(await probe.prepare("SELECT 1"));
    probe.close();
    const calls = { exec: 0, iterate: 0 };
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
    const path = freshFile();
    // No background checkpoints: their connection's calls are not the groups'.
    const store = await openEmbeddedStore({ path, maxSessions: 1000, backgroundCheckpoints: false });
    const other = await openEmbeddedStore({ path, maxSessions: 100_000, backgroundCheckpoints: false });
    try {
      const id = (index: number) => `s${String(index).padStart(4, "0")}`;
      // One group fills the store to its limit (it reads the count: the first group making sessions does).
      await Promise.all(Array.from({ length: 1000 }, (_, index) => store.append(id(index), [{ event_type: "user_message", content: "fill" }])));
      calls.exec = 0;
      calls.iterate = 0;
      for (let index = 1000; index < 1010; index++) await store.append(id(index), [{ event_type: "user_message", content: "new" }]);
      assert.deepEqual(calls, { exec: 10, iterate: 0 }, "each new session one call, no read");
      let sessions = (await other.listSessions()).map((session) => session.session_id);
      assert.deepEqual([sessions.length, sessions[0], sessions.at(-1)], [1000, id(10), id(1009)], "the ten oldest evicted");
      // Another process deletes five sessions: the next new ones evict none until the limit is reached again.
      for (const index of [10, 11, 12, 13, 14]) assert.equal(await other.deleteSession(id(index)), true);
      for (let index = 1010; index < 1015; index++) await store.append(id(index), [{ event_type: "user_message", content: "new" }]);
      sessions = (await other.listSessions()).map((session) => session.session_id);
      assert.deepEqual([sessions.length, sessions[0], sessions.at(-1)], [1000, id(15), id(1014)], "none evicted below the limit");
      await store.append(id(1015), [{ event_type: "user_message", content: "new" }]);
      sessions = (await other.listSessions()).map((session) => session.session_id);
      assert.deepEqual([sessions.length, sessions[0]], [1000, id(16)], "at the limit again, the oldest evicted");
    } finally {
      AsyncDatabase.prototype.exec = exec;
      statementClass.iterate = iterate;
      await other.close();
      await store.close();
    }
  });

  it("lockSession: a lock held by a live process of this host, or by any process of another host, is not taken over", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path });
    const Database = createRequire(import.meta.url)("libsql");
    const raw = new Database(path);
    try {
      // The test runner's process is alive; a pid that cannot exist here may live on the other host.
      raw.prepare("INSERT INTO agentloop_session_locks (session_id, owner_pid, owner_host, token) VALUES (?, ?, ?, ?)").run(["live", process.ppid, hostname(), "t1"]);
      raw.prepare("INSERT INTO agentloop_session_locks (session_id, owner_pid, owner_host, token) VALUES (?, ?, ?, ?)").run(["remote", 2147483646, `not-${hostname()}`, "t2"]);
      for (const sessionId of ["live", "remote"]) {
        const controller = new AbortController();
        const waiting = store.lockSession(sessionId, controller.signal);
        // Two polls at least, then given up.
        setTimeout(() => controller.abort(), 80);
        await assert.rejects(waiting, (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "aborted", sessionId);
      }
    } finally {
      raw.close();
      await store.close();
    }
  });

  it("a group's sessions are updated in the order of their last appends", async () => {
    const store = await openEmbeddedStore({ path: freshFile() });
    try {
      await Promise.all([store.append("a", [{ event_type: "x" }]), store.append("b", [{ event_type: "x" }]), store.append("a", [{ event_type: "x" }])]);
      assert.deepEqual(
        (await store.listSessions()).map((session) => session.session_id),
        ["b", "a"],
      );
    } finally {
      await store.close();
    }
  });

  it("maxSessions holds with sessions made empty by createSession between the counts", async () => {
    // Below 20 sessions this store counts them only every 2 new sessions of its groups: the sessions
    // createSession makes must count as made too (they once did not: 21 sessions were kept).
    for (const writesOffThread of [true, false]) {
      const store = await openEmbeddedStore({ path: freshFile(), maxSessions: 20, writesOffThread });
      try {
        await store.append("first", [{ event_type: "user_message", content: "counted" }]);
        for (let index = 0; index < 19; index++) await store.createSession(`empty${index}`);
        await store.append("next", [{ event_type: "user_message", content: "one too many" }]);
        const kept = (await store.listSessions()).map((session) => session.session_id);
        assert.equal(kept.length, 20);
        assert.deepEqual([kept.includes("first"), kept.at(-1)], [false, "next"]);
      } finally {
        await store.close();
      }
    }
  });

  it("a file of an earlier version loses its index of sessions by update time on open (one b-tree less per write); retention still applies", async () => {
    const path = freshFile();
    const first = await openEmbeddedStore({ path });
    await first.append("old", [{ event_type: "user_message", content: "kept" }]);
    await first.close();
    const Database = createRequire(import.meta.url)("libsql");
    const raw = new Database(path);
    const indexes = () => raw.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'agentloop_sessions' AND sql IS NOT NULL ORDER BY name").all().map((row: { name: string }) => row.name);
    raw.exec("CREATE INDEX agentloop_sessions_updated ON agentloop_sessions (updated_ms)");
    assert.deepEqual(indexes(), ["agentloop_sessions_activity", "agentloop_sessions_updated"]);
    const store = await openEmbeddedStore({ path, retentionMs: 60_000 });
    try {
      assert.deepEqual(indexes(), ["agentloop_sessions_activity"]);
      assert.deepEqual((await store.events("old")).map((event) => event.content), ["kept"]);
      raw.exec("UPDATE agentloop_sessions SET updated_ms = 0");
      assert.deepEqual(await store.events("old"), [], "an expired session is hidden");
      await store.prune();
      assert.equal(raw.prepare("SELECT count(*) AS n FROM agentloop_sessions").get().n, 0);
    } finally {
      await store.close();
      raw.close();
    }
  });

  it("a directory holds memory.db; the default file is the agent's own", async () => {
    const directory = join(root, "a-directory");
    mkdirSync(directory);
    assert.equal(embeddedFileOf(directory), join(directory, "memory.db"));
    assert.equal(embeddedFileOf(`${join(root, "new-directory")}/`), join(root, "new-directory", "memory.db"));
    assert.equal(embeddedFileOf(join(root, "plain.db")), join(root, "plain.db"));
    assert.equal(memoryConfigFromEnv({}).path, ".agentloop/agent/memory.db");
    assert.equal(memoryConfigFromEnv({ AGENT_NAME: "coordinator" }).path, ".agentloop/coordinator/memory.db");
    assert.equal(memoryConfigFromEnv({ AGENT_NAME: "../up" }).path, ".agentloop/__up/memory.db");
    assert.equal(memoryConfigFromEnv({ AGENT_NAME: "worker", MEMORY_PATH: "/data/x.db" }).path, "/data/x.db");
  });

  it("names a PGlite directory of an earlier version, and a folder that cannot be created", async () => {
    const old = join(root, "old-pglite");
    mkdirSync(old);
    writeFileSync(join(old, "PG_VERSION"), "17\n");
    await assert.rejects(openEmbeddedStore({ path: old }), /PGlite store of an earlier agentloop version.*Point MEMORY_PATH at a new file/);
    const file = join(root, "a-file");
    writeFileSync(file, "not a directory");
    await assert.rejects(openEmbeddedStore({ path: join(file, "memory", "memory.db") }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "configuration");
      assert.match(error.message, /cannot create the folder of the embedded store/);
      return true;
    });
    writeFileSync(join(root, "garbage.db"), "this is not a SQLite database, just some text that is long enough to have a header".repeat(20));
    await assert.rejects(openEmbeddedStore({ path: join(root, "garbage.db") }), /cannot open the embedded store .*garbage\.db/);
    await assert.rejects(openEmbeddedStore({ path: freshFile(), synchronous: "sometimes" as never }), /synchronous must be "normal" or "full"/);
    await assert.rejects(openEmbeddedStore({ path: freshFile(), busyTimeoutMs: -1 }), /busyTimeoutMs must be a non-negative integer/);
  });

  it("synchronous: full stores the same way", async () => {
    const store = await openEmbeddedStore({ path: freshFile(), synchronous: "full" });
    try {
      await store.append("s", [{ event_type: "x", content: "durable" }]);
      assert.deepEqual(
        (await store.events("s")).map((event) => event.content),
        ["durable"],
      );
    } finally {
      await store.close();
    }
  });
});
