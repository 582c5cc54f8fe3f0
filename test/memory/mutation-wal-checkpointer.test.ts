// The embedded store's background checkpoints after `close()` (found by mutation testing,
// docs/mutation.md): one scheduled is cancelled by close, and checkpoints that find nothing new
// to do (no commit of this store since) do not go on by themselves, nor after their connection failed. Seen through the files: a checkpoint opens its own
// connection to the database file, which creates the file again if the user deleted it after close.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmdirSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { openEmbeddedStore } from "../../src/memory/embedded.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-mutation-checkpointer-"));
after(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;
/** A store file alone in a folder of its own. */
const freshFolder = () => {
  const folder = join(root, `f${folders++}`);
  mkdirSync(folder);
  return folder;
};
const removeFiles = (folder: string) => {
  for (const name of readdirSync(folder)) rmSync(join(folder, name));
};
const sizeOf = (file: string) => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};
/** About one 4 KB page. */
const page = "p".repeat(3500);
/** Resolves once `condition` holds, checking every few ms; fails after `ms`. */
async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
/** Waits `ms`: a checkpoint scheduled `delayMs` < `ms` after an earlier moment has started by then (timers fire in order). */
const elapse = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("embedded store: no background checkpoint after close", () => {
  it("one scheduled a little after the last commit is cancelled: the files deleted after close stay deleted", async () => {
    const folder = freshFolder();
    const store = await openEmbeddedStore({ path: join(folder, "memory.db"), backgroundCheckpoints: { delayMs: 20 } });
    await store.append("s", [{ event_type: "x", content: "a" }]);
    await store.close();
    removeFiles(folder);
    await elapse(60);
    assert.deepEqual(readdirSync(folder), []);
  });

  it("two commits in a row (no group commit: a transaction per append) schedule one checkpoint, which close cancels", async () => {
    const folder = freshFolder();
    const store = await openEmbeddedStore({ path: join(folder, "memory.db"), groupCommit: false, backgroundCheckpoints: { delayMs: 20 } });
    await Promise.all([store.append("s", [{ event_type: "x", content: "a" }]), store.append("s", [{ event_type: "x", content: "b" }])]);
    await store.close();
    removeFiles(folder);
    await elapse(60);
    assert.deepEqual(readdirSync(folder), []);
  });

  it("a checkpoint follows this store's commits only: another connection's commits are left to it (no checkpoint runs on its own)", async () => {
    const folder = freshFolder();
    const path = join(folder, "memory.db");
    const store = await openEmbeddedStore({ path, backgroundCheckpoints: { delayMs: 0 } });
    const other = new (createRequire(import.meta.url)("libsql"))(path);
    try {
      other.exec("PRAGMA wal_autocheckpoint = 0");
      const empty = sizeOf(path);
      await store.append("s", Array.from({ length: 10 }, () => ({ event_type: "x", content: page })));
      // The checkpoint after that commit copied the log into the database file; none follows it.
      await until(() => sizeOf(path) > empty + 8 * 4096, 20_000, "the database file to receive the log's pages");
      other.exec("CREATE TABLE other (text TEXT)");
      const insert = other.prepare("INSERT INTO other VALUES (?)");
      for (let index = 0; index < 20; index++) insert.run(page);
      const copied = sizeOf(path);
      await elapse(100);
      assert.equal(sizeOf(path), copied, "the other connection's pages stayed in the log");
      assert.equal((await store.events("s")).length, 10);
    } finally {
      other.close();
      await store.close();
    }
  });

  it("a log exactly truncatePages frames long is emptied", async () => {
    const events = Array.from({ length: 6 }, () => ({ event_type: "x", content: page }));
    // The same file made twice: first with no checkpoint yet, to count the frames of its log (a 32-byte header, then 24 + 4096 bytes each).
    const counted = join(freshFolder(), "memory.db");
    const counting = await openEmbeddedStore({ path: counted, backgroundCheckpoints: { delayMs: 600_000 } });
    await counting.append("s", events);
    const frames = (sizeOf(`${counted}-wal`) - 32) / (24 + 4096);
    await counting.close();
    assert.ok(Number.isInteger(frames) && frames > 6, `${frames} frames`);
    const path = join(freshFolder(), "memory.db");
    const store = await openEmbeddedStore({ path, backgroundCheckpoints: { delayMs: 0, truncatePages: frames } });
    try {
      await store.append("s", events);
      await until(() => sizeOf(`${path}-wal`) === 0, 5_000, `the log of ${frames} frames to be emptied`);
    } finally {
      await store.close();
    }
  });

  it("once the checkpointing connection failed, the store's commits start no background checkpoint again (SQLite's own took over)", async () => {
    const folder = freshFolder();
    const path = join(folder, "memory.db");
    const store = await openEmbeddedStore({ path, backgroundCheckpoints: { delayMs: 0 } });
    try {
      await store.append("s", [{ event_type: "x", content: "first" }]);
      // The checkpoint after the next commit cannot open its connection: the file's name holds a directory.
      renameSync(path, `${path}.moved`);
      mkdirSync(path);
      await store.append("s", [{ event_type: "x", content: "second" }]);
      await elapse(50);
      // The file back under its name: a checkpoint started now would open it and copy the log into it.
      rmdirSync(path);
      renameSync(`${path}.moved`, path);
      const before = sizeOf(path);
      await store.append("s", Array.from({ length: 20 }, () => ({ event_type: "x", content: page })));
      await elapse(100);
      assert.equal(sizeOf(path), before, "no checkpoint copied the log");
      assert.equal((await store.events("s")).length, 22);
    } finally {
      await store.close();
    }
  });

  // Made deterministic: a transaction per append on the JavaScript thread (the commit is made before
  // `append` returns), a timer set after the checkpoint's with the same delay (so it fires just after
  // the checkpoint started, before the checkpoint can end: that needs a trip to the driver's thread),
  // and a reader whose snapshot predates the second commit (so the running checkpoint cannot copy it).
  it("a commit made while a checkpoint runs, past what that checkpoint may copy, gets a checkpoint of its own", async () => {
    const path = join(freshFolder(), "memory.db");
    const store = await openEmbeddedStore({ path, groupCommit: false, backgroundCheckpoints: { delayMs: 50, truncatePages: 100_000 } });
    const reader = new (createRequire(import.meta.url)("libsql"))(path);
    try {
      await store.append("s", Array.from({ length: 20 }, () => ({ event_type: "x", content: page })));
      await elapse(50);
      // The checkpoint of that commit is running now. A read transaction's snapshot: nothing committed after it is copied while it lasts.
      reader.exec("BEGIN");
      reader.prepare("SELECT count(*) FROM sqlite_master").get();
      const pagesBefore = (reader.prepare("PRAGMA page_count").get() as { page_count: number }).page_count;
      await store.append("t", Array.from({ length: 5 }, () => ({ event_type: "x", content: page })));
      await until(() => sizeOf(path) >= pagesBefore * 4096, 5_000, `the running checkpoint to copy the ${pagesBefore} pages before the second commit`);
      reader.exec("COMMIT");
      const pages = (reader.prepare("PRAGMA page_count").get() as { page_count: number }).page_count;
      assert.ok(pages > pagesBefore);
      await until(() => sizeOf(path) === pages * 4096, 5_000, `the database file to hold all ${pages} pages`);
    } finally {
      reader.close();
      await store.close();
    }
  });

  it("a commit made while a checkpoint runs, then close: no checkpoint follows the close (the files deleted after it stay deleted)", async () => {
    const folder = freshFolder();
    const store = await openEmbeddedStore({ path: join(folder, "memory.db"), groupCommit: false, backgroundCheckpoints: { delayMs: 150 } });
    await store.append("s", [{ event_type: "x", content: "a" }]);
    await elapse(150);
    // The checkpoint of that commit is running: this commit asks for another, and close is called before the first ends.
    await store.append("s", [{ event_type: "x", content: "b" }]);
    await store.close();
    removeFiles(folder);
    await elapse(250);
    assert.deepEqual(readdirSync(folder), []);
  });

  it("a commit made while a checkpoint copies the log gets a checkpoint of its own", async () => {
    const folder = freshFolder();
    const path = join(folder, "memory.db");
    // Group commits on the JavaScript thread: the second commit is made while the checkpoint runs on the driver's.
    const store = await openEmbeddedStore({ path, writesOffThread: false, backgroundCheckpoints: { delayMs: 0, truncatePages: 100_000 } });
    const other = new (createRequire(import.meta.url)("libsql"))(path);
    try {
      await store.append("s", Array.from({ length: 1000 }, () => ({ event_type: "x", content: page })));
      // The checkpoint of that commit (1,000 pages to copy) has started (its timer was set first); this commit lands while it runs.
      await new Promise((resolve) => setTimeout(resolve, 0));
      await store.append("t", Array.from({ length: 5 }, () => ({ event_type: "x", content: page })));
      const pages = (other.prepare("PRAGMA page_count").get() as { page_count: number }).page_count;
      await until(() => sizeOf(path) === pages * 4096, 5_000, `the database file to hold all ${pages} pages`);
    } finally {
      other.close();
      await store.close();
    }
  });
});
