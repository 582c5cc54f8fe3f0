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
