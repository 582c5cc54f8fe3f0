// openEmbeddedStore's settings as a user sees them: which values it takes and refuses (naming the
// setting), and where SQLite's own checkpoints (in COMMIT, on the connection that commits) come in
// when the background checkpoints are off, delayed, or failed: seen through the files (the
// database file grows when a checkpoint copies the log into it).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync } from "node:fs";
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
      // The failure is noticed off the thread: appends go on until a COMMIT checkpoints.
      const deadline = Date.now() + 30_000;
      while (sizeOf(`${path}.moved`) < before + 2_000_000) {
        assert.ok(Date.now() < deadline, "no checkpoint in COMMIT after the background checkpoints failed");
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
