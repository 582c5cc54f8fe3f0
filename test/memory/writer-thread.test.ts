// The embedded store's driver and writer thread (src/memory/sqlite/driver.ts, writer.ts;
// docs/memory.md, "Embedded"): which SQLite driver a process uses (node:sqlite on Node ≥ 24.21,
// libsql before, AGENTLOOP_SQLITE_DRIVER to choose), and what the store does when its writer thread
// dies in the middle of a group: that group and every later write are rejected with an error that
// says so, nothing of the group is written, reads go on and close() resolves.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { openEmbeddedStore } from "../../src/memory/embedded.js";
import { driverName } from "../../src/memory/sqlite/driver.js";
import { WriterThread } from "../../src/memory/sqlite/writer.js";
import { rawConnection, writerThreadsOf } from "./store-driver.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-writer-thread-"));
after(() => rmSync(root, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(root, `store-${files++}.db`);

describe("embedded store: its driver", () => {
  it("node:sqlite from Node 24.21 on, libsql before; AGENTLOOP_SQLITE_DRIVER chooses, and a value it cannot use is a configuration error naming it", () => {
    assert.equal(driverName("20.20.2", undefined), "libsql");
    assert.equal(driverName("22.21.0", undefined), "libsql");
    assert.equal(driverName("24.20.9", undefined), "libsql");
    assert.equal(driverName("24.21.0", undefined), "node:sqlite");
    assert.equal(driverName("25.0.0", undefined), "node:sqlite");
    assert.equal(driverName("24.21.0", ""), "node:sqlite");
    assert.equal(driverName("24.21.0", "libsql"), "libsql");
    assert.equal(driverName("26.1.0", "node:sqlite"), "node:sqlite");
    assert.throws(
      () => driverName("22.21.0", "node:sqlite"),
      (error: unknown) =>
        AgentLoopError.isInstance(error) &&
        error.kind === "configuration" &&
        error.message === "memory: AGENTLOOP_SQLITE_DRIVER=node:sqlite needs Node 24.21 or later (this is 22.21.0); unset it to use libsql",
    );
    assert.throws(
      () => driverName("24.21.0", "sqlite3"),
      (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "configuration" && error.message === 'memory: AGENTLOOP_SQLITE_DRIVER must be "libsql" or "node:sqlite", got "sqlite3"',
    );
  });

  it("a store opened with AGENTLOOP_SQLITE_DRIVER=libsql runs on libsql on every Node; an unknown value refuses to open", async () => {
    const before = process.env.AGENTLOOP_SQLITE_DRIVER;
    try {
      process.env.AGENTLOOP_SQLITE_DRIVER = "libsql";
      const store = await openEmbeddedStore({ path: freshFile() });
      try {
        assert.equal(store.driver, "libsql");
        assert.deepEqual((await store.append("s", [{ event_type: "x", content: "on libsql" }])).map((event) => event.seq), [1]);
        assert.deepEqual((await store.events("s")).map((event) => event.content), ["on libsql"]);
      } finally {
        await store.close();
      }
      process.env.AGENTLOOP_SQLITE_DRIVER = "sqlite3";
      await assert.rejects(openEmbeddedStore({ path: freshFile() }), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "configuration" && /AGENTLOOP_SQLITE_DRIVER/.test(error.message));
    } finally {
      if (before === undefined) delete process.env.AGENTLOOP_SQLITE_DRIVER;
      else process.env.AGENTLOOP_SQLITE_DRIVER = before;
    }
    const store = await openEmbeddedStore({ path: freshFile() });
    assert.equal(store.driver, driverName());
    await store.close();
  });
});

describe("embedded store: its writer thread dies in the middle of a group", () => {
  // node:sqlite: the thread is ended while its group's BEGIN waits for another connection's write
  // lock (inside SQLite). libsql cannot be ended inside a call (its binding aborts the process when
  // it cannot make the call's result or error in an ending thread), and a group sent to it may be
  // taken before the thread ends: there the thread is ended while it waits for work, and the
  // group sent next is the one rejected.
  it("that group and every later write are rejected with an error naming the thread, nothing of the group is written, reads go on, close() resolves", async () => {
    const path = freshFile();
    // A busy timeout of 1 s: the ended thread's wait inside SQLite ends then.
    const store = await openEmbeddedStore({ path, backgroundCheckpoints: false, busyTimeoutMs: 1000 });
    const other = rawConnection(path);
    const insideSqlite = store.driver === "node:sqlite";
    try {
      await store.append("kept", [{ event_type: "x", content: "before" }]);
      if (insideSqlite) other.exec("BEGIN IMMEDIATE");
      let appended: Promise<unknown> | undefined;
      const group = () => {
        appended = store.append("lost", [
          { event_type: "x", content: "in the group" },
          { event_type: "x", content: "also in the group" },
        ]);
        // Rejected before the assertion below reads it.
        appended.catch(() => {});
      };
      if (insideSqlite) {
        const threads = await writerThreadsOf(async () => {
          group();
          await new Promise((resolve) => setTimeout(resolve, 50));
        });
        assert.equal(threads.length, 1, "the group went to the writer thread");
        await threads[0].terminate();
      } else {
        const [thread] = await writerThreadsOf(() => store.append("kept", [{ event_type: "x", content: "also before" }]));
        await thread.terminate();
        group();
      }
      await assert.rejects(appended!, (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error), String(error));
        assert.equal(
          error.message,
          `memory (embedded): the writer thread of ${path} stopped (it exited with code 1) before it answered: a group it was writing is in the file whole or not at all, and this store writes nothing more until it is opened again`,
        );
        return true;
      });
      if (insideSqlite) other.exec("COMMIT");
      const started = Date.now();
      await assert.rejects(store.append("later", [{ event_type: "x" }]), (error: unknown) => AgentLoopError.isInstance(error) && /the writer thread of .* stopped/.test(error.message));
      await assert.rejects(store.lockSession("later"), (error: unknown) => AgentLoopError.isInstance(error) && /the writer thread of .* stopped/.test(error.message));
      assert.ok(Date.now() - started < 1000, "no wait");
      assert.deepEqual((await store.events("kept")).map((event) => event.content), insideSqlite ? ["before"] : ["before", "also before"], "reads go on");
      assert.deepEqual(await store.events("lost"), []);
    } finally {
      other.close();
      await store.close();
    }
    const reopened = await openEmbeddedStore({ path });
    try {
      assert.deepEqual(
        (await reopened.listSessions()).map((session) => session.session_id),
        ["kept"],
        "nothing of the group in the file",
      );
      assert.equal((await reopened.append("lost", [{ event_type: "x", content: "again" }]))[0].seq, 1);
    } finally {
      await reopened.close();
    }
  });
});

describe("embedded store: the writer thread's batches", () => {
  it("a checkpoint sent while a group's transaction is open (left open by a batch that reads, kept open by a second) waits for the batch that closes it, then runs", async () => {
    const file = freshFile();
    const writer = await WriterThread.start({ file, driver: driverName(), timeout: 5000, pragmas: "PRAGMA journal_mode = WAL; CREATE TABLE t (a)" });
    try {
      const read = { sql: "SELECT count(*) FROM t", params: [], read: true as const };
      assert.deepEqual(await writer.run([{ sql: "BEGIN IMMEDIATE", params: [] }, { sql: "INSERT INTO t VALUES (?)", params: [1] }, read], "opens"), [[[1]]]);
      let checkpointed = false;
      const checkpoint = writer.run([{ sql: "PRAGMA wal_checkpoint(PASSIVE)", params: [], read: true }], "between").then((rows) => {
        checkpointed = true;
        return rows;
      });
      assert.deepEqual(await writer.run([{ sql: "INSERT INTO t VALUES (?)", params: [2] }, read], "opens"), [[[2]]]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(checkpointed, false, "not inside the open transaction");
      await writer.run([{ sql: "COMMIT", params: [] }], "closes");
      const [[row]] = await checkpoint;
      assert.equal(row[0], 0, "the checkpoint ran, not busy");
      assert.deepEqual(await writer.run([read]), [[[2]]], "both inserts committed");
    } finally {
      await writer.close();
    }
  });

  it("a statement that fails rolls back the transaction in the thread, and the error comes back with the driver's message", async () => {
    const file = freshFile();
    const writer = await WriterThread.start({ file, driver: driverName(), timeout: 5000, pragmas: "PRAGMA journal_mode = WAL; CREATE TABLE t (a UNIQUE)" });
    try {
      await assert.rejects(
        writer.run([{ sql: "BEGIN IMMEDIATE", params: [] }, { sql: "INSERT INTO t VALUES (?)", params: [1] }, { sql: "INSERT INTO t VALUES (?)", params: [1] }, { sql: "COMMIT", params: [] }]),
        (error: unknown) => error instanceof Error && /UNIQUE constraint failed: t\.a/.test(error.message),
      );
      assert.deepEqual(await writer.run([{ sql: "SELECT count(*) FROM t", params: [], read: true }]), [[[0]]], "nothing written, no transaction left open");
      assert.deepEqual(await writer.run([{ sql: "BEGIN IMMEDIATE", params: [] }, { sql: "INSERT INTO t VALUES (?)", params: [1] }, { sql: "COMMIT", params: [] }]), []);
    } finally {
      await writer.close();
    }
    await assert.rejects(writer.run([]), (error: unknown) => AgentLoopError.isInstance(error) && error.message === `memory (embedded): the writer thread of ${file} is closed`);
  });
});
