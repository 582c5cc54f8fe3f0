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
