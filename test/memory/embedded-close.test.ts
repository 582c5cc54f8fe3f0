// An embedded store's close() lets go of its file: once it resolved, this process holds no
// descriptor of memory.db, its -wal or its -shm (read from /proc/self/fd: Linux) unless another
// connection of the process still has the file open, and the last connection to close the file
// checkpointed the log and deleted both files, as SQLite does on a last clean close
// (docs/memory.md, "close() lets go of the file"). libsql closes a connection only once the statements
// prepared on it are garbage collected; without the store's collection on close, the writer, the
// off-thread connection and the checkpointing one all stayed open.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { type EmbeddedStoreOptions, openEmbeddedStore } from "../../src/memory/embedded.js";
import { memoryFromEnv } from "../../src/memory/index.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-embedded-close-"));
after(() => rmSync(root, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(root, `store-${files++}.db`);
const linux = existsSync("/proc/self/fd");

/** This process's open descriptors of the database at `path`, by file: "db", "-wal", "-shm". */
function descriptorsOf(path: string): string[] {
  const names = new Map([
    [path, "db"],
    [`${path}-wal`, "-wal"],
    [`${path}-shm`, "-shm"],
  ]);
  const open: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const name = names.get(readlinkSync(`/proc/self/fd/${fd}`));
      if (name) open.push(name);
    } catch {
      // closed meanwhile (the readdir's own descriptor)
    }
  }
  return open.sort();
}

const sizeOf = (file: string) => (existsSync(file) ? statSync(file).size : 0);

/** Resolves once `condition` holds, checking every few ms; fails after `ms`. */
async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Every kind of work a store prepares statements for: appends, reads, a lock and its release. */
async function use(store: Awaited<ReturnType<typeof openEmbeddedStore>>): Promise<void> {
  await Promise.all(Array.from({ length: 12 }, (_, index) => store.append(`s${index % 3}`, [{ event_type: "x", content: "y".repeat(2000) }])));
  await store.createSession("made");
  await (await store.lockSession("s0"))();
  assert.equal((await store.events("s1")).length, 4);
  assert.equal((await store.listSessions()).length, 4);
}

function assertReleased(path: string): void {
  assert.deepEqual(descriptorsOf(path), [], "no descriptor of the store's files is left open");
  assert.equal(existsSync(`${path}-wal`), false, "the last close checkpointed the log and deleted it");
  assert.equal(existsSync(`${path}-shm`), false, "and the shared-memory file");
}

describe("embedded store: close() lets go of its files", { skip: linux ? false : "reads /proc/self/fd (Linux)" }, () => {
  const modes: Array<[string, EmbeddedStoreOptions]> = [
    ["default (writes and checkpoints off the thread)", {}],
    ["group commits on the JavaScript thread", { writesOffThread: false }],
    ["no group commit", { groupCommit: false }],
    ["SQLite's own checkpoints", { backgroundCheckpoints: false }],
  ];
  for (const [mode, options] of modes) {
    it(`${mode}: no descriptor left once close() resolved, the -wal and -shm removed, every append kept`, async () => {
      const path = freshFile();
      const store = await openEmbeddedStore({ ...options, path, backgroundCheckpoints: options.backgroundCheckpoints ?? { delayMs: 0 } });
      const empty = sizeOf(path);
      await use(store);
      assert.ok(descriptorsOf(path).length >= 3, `the open store holds its files (${descriptorsOf(path)})`);
      // With background checkpoints, their connection has prepared its statement too.
      if (options.backgroundCheckpoints !== false) await until(() => sizeOf(path) > empty, 20_000, "a background checkpoint");
      await store.close();
      assertReleased(path);
      const reopened = await openEmbeddedStore({ path });
      try {
        assert.equal((await reopened.events("s2")).length, 4);
      } finally {
        await reopened.close();
      }
      assertReleased(path);
    });
  }

  it("memoryFromEnv's embedded store, one append, close: nothing left open", async () => {
    const path = freshFile();
    const { store } = await memoryFromEnv({ MEMORY_TYPE: "embedded", MEMORY_PATH: path });
    await store.append("s", [{ event_type: "x", content: "one" }]);
    await store.close();
    assertReleased(path);
  });

  it("two stores on one file: the first closed closes its logs and leaves the second working; the last close lets go of everything", async () => {
    const path = freshFile();
    const first = await openEmbeddedStore({ path, backgroundCheckpoints: { delayMs: 0 } });
    // No checkpointing connection on the second: its own two stay the only ones once the first closed.
    const second = await openEmbeddedStore({ path, backgroundCheckpoints: false });
    const empty = sizeOf(path);
    await use(first);
    await until(() => sizeOf(path) > empty, 20_000, "a background checkpoint of the first store");
    await second.append("s0", [{ event_type: "x", content: "from the second" }]);
    const count = (name: string) => descriptorsOf(path).filter((file) => file === name).length;
    assert.equal(count("-wal"), 5, "three connections of the first store, two of the second");
    await first.close();
    assert.equal(count("-wal"), 2, "the first store's connections are closed");
    // Not its descriptors of the database file: SQLite keeps a closed connection's while another
    // connection of the process holds a lock on the file (closing it would drop that lock), reuses
    // them for the next connection, and closes them with the last (below).
    assert.equal(existsSync(`${path}-wal`), true, "the log stays while another connection has the file open");
    assert.equal((await second.events("s0")).length, 5);
    await second.append("s0", [{ event_type: "x", content: "after the first closed" }]);
    await second.close();
    assertReleased(path);
  });

  it("closed during an append, and twice at once: the append is kept and nothing is left open", async () => {
    const path = freshFile();
    const other = freshFile();
    const store = await openEmbeddedStore({ path });
    const alsoOpen = await openEmbeddedStore({ path: other });
    await use(store);
    await alsoOpen.append("s", [{ event_type: "x" }]);
    const appended = store.append("late", [{ event_type: "x", content: "written by close" }]);
    // Closes in one turn share one collection: each store's files are released all the same.
    await Promise.all([store.close(), store.close(), alsoOpen.close()]);
    assert.equal((await appended).length, 1);
    assertReleased(path);
    assertReleased(other);
    const reopened = await openEmbeddedStore({ path });
    try {
      assert.deepEqual(
        (await reopened.events("late")).map((event) => event.content),
        ["written by close"],
      );
    } finally {
      await reopened.close();
    }
  });
});
