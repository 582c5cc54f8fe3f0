// openEmbeddedStore's paths that test/memory/embedded-open.test.ts leaves open (found by mutation
// testing, docs/mutation.md): a failed open lets go of the file, the writer connection's failure
// with background checkpoints off and its cause, and how long an emptying of the log may hold this
// process's writes when another connection keeps reading an old snapshot.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { AgentLoopError } from "../../src/errors.js";
import { openEmbeddedStore } from "../../src/memory/embedded.js";
import { tsChild } from "../ts-child.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-mutation-open-"));
after(() => rmSync(root, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(root, `store-${files++}.db`);

/** How many of this process's open file descriptors point at `path` (or its -wal, -shm). */
function descriptorsOn(path: string): number {
  return readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith(path);
    } catch {
      return false;
    }
  }).length;
}

describe("openEmbeddedStore: failures", () => {
  it("a file that is no database: the open fails and the process keeps no descriptor of it", async () => {
    const garbage = freshFile();
    writeFileSync(garbage, "this is not a SQLite database, just some text that is long enough to have a header".repeat(20));
    for (let attempt = 0; attempt < 3; attempt++) {
      await assert.rejects(openEmbeddedStore({ path: garbage }), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "configuration");
    }
    assert.equal(descriptorsOn(garbage), 0, "every failed open closed its connection");
  });

  it("another program's tables: the open fails and lets go of the file", async () => {
    const foreign = freshFile();
    const Database = createRequire(import.meta.url)("libsql");
    const raw = new Database(foreign);
    raw.exec("CREATE TABLE agentloop_sessions (name TEXT)");
    raw.close();
    await assert.rejects(openEmbeddedStore({ path: foreign }), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "configuration");
    assert.equal(descriptorsOn(foreign), 0);
  });

  it("without libsql/promise and with background checkpoints off: the writer connection's configuration error, its cause kept", async () => {
    const path = freshFile();
    const child = fileURLToPath(new URL("./fixtures/missing-driver-child.ts", import.meta.url));
    const env = { ...process.env, MISSING: "libsql/promise", STORE_PATH: path, WRITES_OFF_THREAD: "1", BACKGROUND: "0", CAUSE: "1" };
    const { stdout } = await promisify(execFile)(process.execPath, await tsChild(child), { env, timeout: 30_000 });
    assert.deepEqual(JSON.parse(stdout.trim().split("\n").at(-1)!), {
      opened: false,
      kind: "configuration",
      message: `memory: cannot open the writer connection of the embedded store ${path}: Cannot find module 'libsql/promise'`,
      cause: "Cannot find module 'libsql/promise'",
    });
  });
});

describe("openEmbeddedStore: emptying the log while another connection reads", () => {
  it("holds this process's writes about 100 ms at a time, not for the whole busy timeout", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, busyTimeoutMs: 4000, backgroundCheckpoints: { delayMs: 0, truncatePages: 4 } });
    // A reader on an old snapshot: no checkpoint can copy past it, so every one finds the log long
    // and tries to empty it, waiting for this reader (it never ends while the appends go on).
    const Database = createRequire(import.meta.url)("libsql");
    const reader = new Database(path);
    try {
      await store.append("s", [{ event_type: "x", content: "first" }]);
      reader.exec("BEGIN");
      reader.prepare("SELECT count(*) FROM agentloop_events").get();
      let slowest = 0;
      for (let index = 0; index < 12; index++) {
        const started = Date.now();
        await store.append("s", [{ event_type: "x", content: "p".repeat(3500) }]);
        slowest = Math.max(slowest, Date.now() - started);
      }
      // Each emptying gives up after 100 ms (the busy timeout, 4 s, is for writes of other processes).
      assert.ok(slowest < 2000, `an append waited ${slowest} ms`);
      assert.equal((await store.events("s")).length, 13);
    } finally {
      reader.exec("COMMIT");
      reader.close();
      await store.close();
    }
  });
});
