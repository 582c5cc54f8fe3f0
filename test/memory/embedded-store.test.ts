import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PGlite } from "@electric-sql/pglite";
import { AgentLoopError } from "../../src/errors.js";
import { openEmbeddedStore } from "../../src/memory/embedded.js";
import { memoryStoreConformance } from "./conformance.js";
import { freshEmbeddedDirectory } from "./embedded-template.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-embedded-"));
let shared: PGlite;
let schemas = 0;

/** A fresh store directory, copied from one initialized once (creating a database takes seconds). */
function freshDirectory(name: string): string {
  const path = join(root, name);
  cpSync(join(root, "template"), path, { recursive: true });
  return path;
}

before(async () => {
  await freshEmbeddedDirectory(join(root, "template"));
  // One embedded database for the conformance suite; each test gets its own schema.
  shared = await PGlite.create(freshDirectory("shared"));
});
after(async () => {
  await shared.close();
  rmSync(root, { recursive: true, force: true });
});

memoryStoreConformance("embedded (PGlite)", async (limits) => openEmbeddedStore({ ...limits, database: shared, schema: `conformance_${schemas++}` }));

// One directory for these tests, in order (copying and opening a store takes seconds on a busy machine).
describe("embedded store: its directory", () => {
  let path: string;
  before(() => {
    path = freshDirectory("lifecycle");
  });

  it("persists sessions across close and reopen; takes over the lock of a dead process; refuses a second opener while open", async () => {
    const first = await openEmbeddedStore({ path });
    await first.append("s", [{ event_type: "user_message", content: "remember me" }]);
    await first.close(); // releases the lock: the reopen below would fail otherwise
    // A pid that cannot exist on this host: the lock of a killed process.
    writeFileSync(join(path, "agentloop.lock"), `2147483646@${hostname()}`);
    const second = await openEmbeddedStore({ path });
    try {
      const events = await second.events("s");
      assert.deepEqual(
        events.map((event) => [event.seq, event.content]),
        [[1, "remember me"]],
      );
      assert.equal((await second.append("s", [{ event_type: "x" }]))[0].seq, 2);
      await assert.rejects(openEmbeddedStore({ path }), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error));
        assert.equal(error.kind, "configuration");
        assert.match(error.message, new RegExp(`already open in process ${process.pid}`));
        assert.match(error.message, /MEMORY_TYPE=postgres/);
        return true;
      });
    } finally {
      await second.close();
    }
  });

  it("refuses a directory locked by another live process (with or without its host)", async () => {
    // The parent of this test process is alive and is not us.
    writeFileSync(join(path, "agentloop.lock"), String(process.ppid));
    await assert.rejects(openEmbeddedStore({ path }), new RegExp(`already open in process ${process.ppid}`));
    writeFileSync(join(path, "agentloop.lock"), `${process.ppid}@${hostname()}`);
    await assert.rejects(openEmbeddedStore({ path }), new RegExp(`already open in process ${process.ppid}`));
  });

  it("takes over a lock written on another host; a second opener reads a snapshot without touching it", async () => {
    // Written on another host (a restarted container sharing the volume): stale.
    writeFileSync(join(path, "agentloop.lock"), `${process.ppid}@some-old-pod`);
    const owner = await openEmbeddedStore({ path });
    try {
      await owner.append("s", [{ event_type: "user_message", content: "written by the owner" }]);
      const snapshot = await openEmbeddedStore({ path, whenLocked: "snapshot" });
      try {
        assert.deepEqual(
          (await snapshot.events("s")).map((event) => event.content),
          ["remember me", null, "written by the owner"],
        );
        await snapshot.append("s", [{ event_type: "x", content: "only in the copy" }]);
      } finally {
        await snapshot.close();
      }
      await owner.append("s", [{ event_type: "agent_response", content: "still the owner's" }]);
      assert.deepEqual(
        (await owner.events("s")).map((event) => [event.seq, event.content]),
        [
          [1, "remember me"],
          [2, null],
          [3, "written by the owner"],
          [4, "still the owner's"],
        ],
      );
    } finally {
      await owner.close();
    }
  });

  it("reports a directory that cannot be created", async () => {
    const file = join(root, "a-file");
    writeFileSync(file, "not a directory");
    await assert.rejects(openEmbeddedStore({ path: join(file, "memory") }), /cannot create the embedded store directory/);
  });
});
