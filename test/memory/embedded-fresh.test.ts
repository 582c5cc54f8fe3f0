// A new embedded store directory is initialized in a child process (initdb and PGlite's second
// instance would otherwise keep ~400-500 MB resident here), then opened like an existing one.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { openEmbeddedStore } from "../../src/memory/embedded.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-embedded-fresh-"));
after(() => rmSync(root, { recursive: true, force: true }));

const residentMb = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? Number.NaN) / 1024;

describe("embedded store: a new directory", () => {
  it("is created, written and reopened; opening it does not keep the initialization's memory", async () => {
    const path = join(root, "new", "memory");
    const before = residentMb();
    const store = await openEmbeddedStore({ path });
    const grown = residentMb() - before;
    try {
      await store.append("s", [{ event_type: "user_message", content: "hello" }]);
    } finally {
      await store.close();
    }
    // One open PGlite instance: ~150-250 MB. Initializing in this process kept ~600-700 MB.
    assert.ok(grown < 450, `RSS grew by ${grown.toFixed(0)} MB when opening a new store`);
    const reopened = await openEmbeddedStore({ path });
    try {
      assert.deepEqual(
        (await reopened.events("s")).map((event) => event.content),
        ["hello"],
      );
    } finally {
      await reopened.close();
    }
  });

  it("reports a directory that cannot be initialized, with the reason", async () => {
    const path = join(root, "broken");
    mkdirSync(path);
    // PostgreSQL needs `base` and `global` to be directories.
    writeFileSync(join(path, "base"), "not a directory");
    writeFileSync(join(path, "global"), "not a directory");
    await assert.rejects(openEmbeddedStore({ path }), (error: Error) => {
      assert.match(error.message, /cannot open the embedded store at .*broken: \S/);
      return true;
    });
  });
});
