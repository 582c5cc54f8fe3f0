// The embedded store's WAL checkpoints run on a second connection, off the JavaScript thread
// (docs/memory.md, "Checkpoints"): observed through the files a user sees (the database file
// filling while the store is left alone, the log emptied under nonstop writes) and through the
// store's contract (every append lands in order, reads see this process's appends).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { AgentLoopError } from "../../src/errors.js";
import { openEmbeddedStore } from "../../src/memory/embedded.js";
import { tsChild } from "../ts-child.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-checkpoints-"));
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
const text = "a line of an answer, long enough that a few events fill a page. ".repeat(16);

/** Resolves once `condition` holds, checking every few ms; fails after `ms`. */
async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("embedded store: background checkpoints", () => {
  it("the database file fills from the log after commits, with no further call on the store (not inside a commit)", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, backgroundCheckpoints: { delayMs: 0 } });
    try {
      const empty = sizeOf(path);
      // 40 events: far below the 1,000 pages at which SQLite itself would checkpoint in a commit.
      await Promise.all(Array.from({ length: 40 }, (_, index) => store.append(`s${index % 4}`, [{ event_type: "agent_response", content: text }])));
      await until(() => sizeOf(path) > empty + 8 * 4096, 20_000, "the database file to receive the log's pages");
      assert.equal((await store.events("s1")).length, 10);
    } finally {
      await store.close();
    }
  });

  it("without them, the same commits stay in the log (SQLite checkpoints inside a commit only past 1,000 pages)", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, backgroundCheckpoints: false });
    try {
      const empty = sizeOf(path);
      await Promise.all(Array.from({ length: 40 }, (_, index) => store.append(`s${index % 4}`, [{ event_type: "agent_response", content: text }])));
      assert.ok(sizeOf(`${path}-wal`) > 8 * 4096);
      assert.equal(sizeOf(path), empty);
      assert.equal((await store.events("s1")).length, 10);
    } finally {
      await store.close();
    }
  });

  it("under nonstop writes the log is emptied again and again while writes go on, once more when they pause, and every append lands in order", async () => {
    const path = freshFile();
    const truncatePages = 16;
    const store = await openEmbeddedStore({ path, backgroundCheckpoints: { delayMs: 0, truncatePages } });
    const reader = await openEmbeddedStore({ path });
    let shrank = 0;
    let previous = 0;
    let rounds = 0;
    const deadline = Date.now() + 60_000;
    try {
      // Writes until the log file was emptied twice while they went on (a loaded machine's checkpoints are slow).
      while (shrank < 2) {
        assert.ok(Date.now() < deadline, `the log file was emptied ${shrank} times in ${rounds} rounds of writes`);
        const round = ++rounds;
        // Four sessions appended to at once, then a read that must see this round's appends
        // (a read waits while the log is emptied, then writes what is pending first).
        const appending = Array.from({ length: 4 }, (_, index) => store.append(`s${index}`, [{ event_type: "agent_response", content: `${round} ${text}` }]));
        const [last] = await store.events("s3", { limit: 1 });
        assert.equal(last?.seq, round, "a read sees the appends made before it");
        await Promise.all(appending);
        // A server's next write comes after I/O: one turn of the event loop.
        await new Promise((resolve) => setImmediate(resolve));
        const size = sizeOf(`${path}-wal`);
        if (size < previous) shrank++;
        previous = size;
      }
      // How far past 16 pages the log grows before it is emptied is what the writes add while one
      // checkpoint copies and fsyncs (docs/memory.md, "Checkpoints"): a figure of the machine's
      // load and disk, not a bound the store keeps (~50 pages here at load 12 with two busy loops
      // beside it; 4.8 MB once, when a test asserted 4 MB). What it keeps: the log is emptied again
      // and again while writes go on (above), and a log past the threshold is emptied once they pause.
      await store.append("paused", [{ event_type: "agent_response", content: "x".repeat((truncatePages + 4) * 4096) }]);
      await until(() => sizeOf(`${path}-wal`) === 0, 30_000, "the log to be emptied once the writes paused");
      const events = await reader.events("s2");
      assert.deepEqual(
        events.map((event) => event.seq),
        Array.from({ length: rounds }, (_, index) => index + 1),
      );
      assert.deepEqual(
        events.map((event) => Number((event.content as string).split(" ")[0])),
        Array.from({ length: rounds }, (_, index) => index + 1),
      );
    } finally {
      // Closed while a checkpoint may still run: close waits for it.
      await store.close();
      await reader.close();
    }
    const reopened = await openEmbeddedStore({ path });
    try {
      assert.equal((await reopened.events("s0")).length, rounds);
    } finally {
      await reopened.close();
    }
  });

  it("a process that appends and never closes its store still exits by itself, its appends stored", async () => {
    const path = freshFile();
    const child = fileURLToPath(new URL("./fixtures/append-child.ts", import.meta.url));
    const env = { ...process.env, STORE_PATH: path, SESSION: "left-open", COUNT: "30", CHECKPOINT_DELAY_MS: "0", NO_CLOSE: "1" };
    await promisify(execFile)(process.execPath, await tsChild(child), { env, timeout: 30_000 });
    const store = await openEmbeddedStore({ path });
    try {
      assert.equal((await store.events("left-open")).length, 60);
    } finally {
      await store.close();
    }
  });

  it("when the checkpointing connection fails, the store goes on and SQLite's own checkpoints (in COMMIT) take over", async () => {
    const path = freshFile();
    const store = await openEmbeddedStore({ path, backgroundCheckpoints: { delayMs: 0 } });
    try {
      await store.append("s", [{ event_type: "x", content: "first" }]);
      // The second connection opens at the first checkpoint, after this: the file's name now
      // holds a directory, so it cannot open (the store's own connection keeps its open file).
      renameSync(path, `${path}.moved`);
      mkdirSync(path);
      const before = sizeOf(`${path}.moved`);
      // Several thousand pages of log: past SQLite's default of 1,000 pages, so checkpoints in
      // COMMIT start the log over from there (left to the backstop, it would reach 8,192 pages, 33 MB).
      for (let index = 0; index < 1500; index++) await store.append("s", [{ event_type: "x", content: "y".repeat(3000) }]);
      assert.ok(sizeOf(`${path}.moved`) > before + 1_000_000, "the database file received the log's pages from a checkpoint in COMMIT");
      assert.ok(sizeOf(`${path}-wal`) < 1100 * 4200, `the log restarted at SQLite's default size (${sizeOf(`${path}-wal`)} bytes)`);
      assert.equal((await store.events("s")).length, 500);
    } finally {
      await store.close();
    }
  });

  it("names a bad setting", async () => {
    for (const [setting, message] of [
      [{ truncatePages: 0 }, /backgroundCheckpoints\.truncatePages must be a positive integer, got 0/],
      [{ delayMs: -1 }, /backgroundCheckpoints\.delayMs must be a non-negative integer, got -1/],
    ] as const) {
      await assert.rejects(openEmbeddedStore({ path: freshFile(), backgroundCheckpoints: setting }), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error) && error.kind === "configuration");
        assert.match(error.message, message);
        return true;
      });
    }
  });
});
