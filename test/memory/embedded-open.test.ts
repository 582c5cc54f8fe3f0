// openEmbeddedStore's settings as a user sees them: which values it takes and refuses (naming the
// setting), and where SQLite's own checkpoints (in COMMIT, on the connection that commits) come in
// when the background checkpoints are off, delayed, or failed: seen through the files (the
// database file grows when a checkpoint copies the log into it).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { AgentLoopError } from "../../src/errors.js";
import { type EmbeddedStoreOptions, openEmbeddedStore } from "../../src/memory/embedded.js";
import { tsChild } from "../ts-child.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-embedded-open-"));
after(() => rmSync(root, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(root, `store-${files++}.db`);
const sizeOf = (file: string) => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};
/** About one 4 KB page of the log per event. */
const page = "p".repeat(3500);

/** Appends `pages` events of about a page each to session `s`, 100 per append. */
async function fill(store: Awaited<ReturnType<typeof openEmbeddedStore>>, pages: number): Promise<void> {
  for (let done = 0; done < pages; done += 100) {
    await store.append("s", Array.from({ length: Math.min(100, pages - done) }, () => ({ event_type: "x", content: page })));
  }
}

async function refuses(options: EmbeddedStoreOptions, message: RegExp): Promise<void> {
  await assert.rejects(openEmbeddedStore({ path: freshFile(), ...options }), (error: unknown) => {
    assert.ok(AgentLoopError.isInstance(error), String(error));
    assert.equal(error.kind, "configuration");
    assert.match(error.message, message);
    return true;
  });
}

/** Resolves once `condition` holds, checking every few ms; fails after `ms`. */
async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const writeModes = [
  ["group commits off the thread", {}],
  ["group commits on the JavaScript thread", { writesOffThread: false }],
  ["no group commit", { groupCommit: false }],
] as const;

describe("openEmbeddedStore: settings", () => {
  it("takes 0 ms for the busy timeout and the checkpoint delay; refuses fractions and negatives, naming the setting and the value", async () => {
    const store = await openEmbeddedStore({ path: freshFile(), busyTimeoutMs: 0, backgroundCheckpoints: { delayMs: 0, truncatePages: 1 } });
    try {
      assert.equal((await store.append("s", [{ event_type: "x" }]))[0].seq, 1);
    } finally {
      await store.close();
    }
    await refuses({ busyTimeoutMs: 1.5 }, /^memory: busyTimeoutMs must be a non-negative integer, got 1\.5$/);
    await refuses({ busyTimeoutMs: -1 }, /^memory: busyTimeoutMs must be a non-negative integer, got -1$/);
    await refuses({ backgroundCheckpoints: { delayMs: 2.5 } }, /^memory: backgroundCheckpoints\.delayMs must be a non-negative integer, got 2\.5$/);
    await refuses({ backgroundCheckpoints: { truncatePages: 1.5 } }, /^memory: backgroundCheckpoints\.truncatePages must be a positive integer, got 1\.5$/);
    await refuses({ backgroundCheckpoints: { truncatePages: -3 } }, /^memory: backgroundCheckpoints\.truncatePages must be a positive integer, got -3$/);
    await refuses({ synchronous: "FULL" as never }, /^memory: synchronous must be "normal" or "full", got "FULL"$/);
  });

  it("names the file and keeps the cause: a folder that cannot be created, a file that is no database, tables that are not agentloop's, a PGlite directory", async () => {
    const notADirectory = join(root, "a-file");
    writeFileSync(notADirectory, "not a directory");
    await assert.rejects(openEmbeddedStore({ path: join(notADirectory, "memory.db") }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error) && error.kind === "configuration", String(error));
      const cause = error.cause as NodeJS.ErrnoException;
      assert.equal(error.message, `memory: cannot create the folder of the embedded store ${join(notADirectory, "memory.db")}: ${cause.message}`);
      assert.equal(cause.code, "EEXIST");
      return true;
    });
    const garbage = join(root, "garbage.db");
    writeFileSync(garbage, "this is not a SQLite database, just some text that is long enough to have a header".repeat(20));
    await assert.rejects(openEmbeddedStore({ path: garbage }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error) && error.kind === "configuration", String(error));
      assert.equal(error.message, `memory: cannot open the embedded store ${garbage}: ${(error.cause as Error).message}`);
      assert.match((error.cause as Error).message, /not a database/);
      return true;
    });
    // Another program's table of the same name: the schema cannot apply, nothing of it is written.
    const foreign = freshFile();
    const Database = createRequire(import.meta.url)("libsql");
    const raw = new Database(foreign);
    raw.exec("CREATE TABLE agentloop_sessions (name TEXT)");
    await assert.rejects(openEmbeddedStore({ path: foreign }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error) && error.kind === "configuration", String(error));
      assert.match(error.message, /^memory: cannot open the embedded store .*: .*activity/);
      return true;
    });
    assert.deepEqual(
      raw.prepare("SELECT name FROM sqlite_master ORDER BY name").all().map((row: { name: string }) => row.name),
      ["agentloop_sessions"],
    );
    raw.close();
    const pglite = join(root, "old-pglite");
    mkdirSync(pglite);
    writeFileSync(join(pglite, "PG_VERSION"), "17\n");
    await assert.rejects(openEmbeddedStore({ path: pglite }), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "configuration");
  });

  it("background checkpoints are on by default: the database file fills from the log a little after commits", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path });
    try {
      const empty = sizeOf(path);
      await fill(store, 40);
      await until(() => sizeOf(path) > empty + 100_000, 20_000, "the database file to receive the log's pages");
    } finally {
      await store.close();
    }
  });

  it("backgroundCheckpoints: false starts none: the log keeps the commits while the store is left alone", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, backgroundCheckpoints: false });
    try {
      const empty = sizeOf(path);
      await fill(store, 40);
      // Nothing to wait for but time: three times the default delay of a background checkpoint.
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(sizeOf(path), empty);
    } finally {
      await store.close();
    }
  });

  it("a log below truncatePages is checkpointed but kept (SQLite writes it again from its start); one at truncatePages is emptied", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, backgroundCheckpoints: { delayMs: 0, truncatePages: 1000 } });
    // A second connection left open: closing the store's own then leaves the log file as it is.
    const other = await openEmbeddedStore({ path, backgroundCheckpoints: false });
    try {
      const empty = sizeOf(path);
      await fill(store, 60);
      await until(() => sizeOf(path) > empty + 100_000, 20_000, "the database file to receive the log's pages");
      const copied = sizeOf(path);
      // The next checkpoint starts only once the first has ended (truncating, if it did).
      await fill(store, 20);
      await until(() => sizeOf(path) > copied + 40_000, 20_000, "the next checkpoint");
      // Closed while that checkpoint may still run: close waits for it.
      await store.close();
      assert.ok(sizeOf(`${path}-wal`) > 60 * 4096, `the log file was kept (${sizeOf(`${path}-wal`)} bytes)`);
      assert.equal((await other.events("s")).length, 80);
    } finally {
      await store.close();
      await other.close();
    }
    const small = freshFile();
    const truncating = await openEmbeddedStore({ path: small, backgroundCheckpoints: { delayMs: 0, truncatePages: 16 } });
    try {
      await fill(truncating, 60);
      await until(() => sizeOf(`${small}-wal`) === 0, 20_000, "the log file to be emptied");
      assert.equal((await truncating.events("s")).length, 60);
    } finally {
      await truncating.close();
    }
  });

  for (const [mode, options] of writeModes) {
    it(`backgroundCheckpoints: false, ${mode}: SQLite checkpoints in COMMIT once the log passes 1,000 pages`, async () => {
      const path = freshFile();
      const store = await openEmbeddedStore({ path, backgroundCheckpoints: false, ...options });
      try {
        const empty = sizeOf(path);
        await fill(store, 1200);
        assert.ok(sizeOf(path) > empty + 2_000_000, `the database file received the log (${sizeOf(path)} bytes)`);
      } finally {
        await store.close();
      }
    });

    it(`background checkpoints that have not run yet, ${mode}: SQLite's own runs in COMMIT as a backstop at twice truncatePages`, async () => {
      const path = freshFile();
      // The background checkpoint would start ten minutes after the first commit: only the backstop runs.
      const store = await openEmbeddedStore({ path, backgroundCheckpoints: { delayMs: 600_000, truncatePages: 200 }, ...options });
      try {
        const empty = sizeOf(path);
        await fill(store, 150);
        assert.equal(sizeOf(path), empty, "below twice truncatePages the log keeps the commits");
        await fill(store, 400);
        assert.ok(sizeOf(path) > empty + 400_000, `past 400 pages the database file received the log (${sizeOf(path)} bytes)`);
      } finally {
        await store.close();
      }
    });
  }

  it("when the checkpointing connection fails, SQLite's own checkpoints take over on the store's connection too (group commits on the JavaScript thread)", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, writesOffThread: false, backgroundCheckpoints: { delayMs: 0 } });
    try {
      await store.append("s", [{ event_type: "x", content: "first" }]);
      // The checkpointing connection opens at the first checkpoint, after this: the file's name now
      // holds a directory, so it cannot open (the store's own connection keeps its open file).
      renameSync(path, `${path}.moved`);
      mkdirSync(path);
      const before = sizeOf(`${path}.moved`);
      await fill(store, 1100);
      // The failure is noticed off the thread (at once, while the log fills): a COMMIT soon checkpoints
      // (with the backstop of twice truncatePages left in place, only after some 800 more appends).
      for (let appended = 0; sizeOf(`${path}.moved`) < before + 2_000_000; appended++) {
        assert.ok(appended < 200, "no checkpoint in COMMIT after the background checkpoints failed");
        await store.append("s", [{ event_type: "x", content: "more" }]);
      }
    } finally {
      await store.close();
    }
  });
});

const missingDriverChild = fileURLToPath(new URL("./fixtures/missing-driver-child.ts", import.meta.url));
/** Opens a store at `path` in a process where the module `missing` cannot be loaded: what it printed. */
async function withoutModule(missing: string, path: string, writesOffThread = true): Promise<Record<string, unknown>> {
  const env = { ...process.env, MISSING: missing, STORE_PATH: path, WRITES_OFF_THREAD: writesOffThread ? "1" : "0" };
  const { stdout } = await promisify(execFile)(process.execPath, await tsChild(missingDriverChild), { env, timeout: 30_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!);
}

describe("openEmbeddedStore: the driver missing", () => {
  it("without libsql, names the package and this platform, as a configuration error", async () => {
    assert.deepEqual(await withoutModule("libsql", freshFile()), {
      opened: false,
      kind: "configuration",
      message: `memory: the embedded store needs the "libsql" package and its binary for ${process.platform}-${process.arch}: Cannot find module 'libsql'`,
    });
  });

  it("without its promise API, the writer connection cannot open: a configuration error naming the file; on the JavaScript thread the store works, its checkpoints SQLite's own", async () => {
    const path = freshFile();
    assert.deepEqual(await withoutModule("libsql/promise", path), {
      opened: false,
      kind: "configuration",
      message: `memory: cannot open the writer connection of the embedded store ${path}: Cannot find module 'libsql/promise'`,
    });
    // Without the writer connection the store opens: its background checkpoints fail (the same module), the store goes on.
    assert.deepEqual(await withoutModule("libsql/promise", path, false), { opened: true, seq: 1 });
  });
});
