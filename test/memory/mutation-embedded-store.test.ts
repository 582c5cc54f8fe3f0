// The embedded store's own rules (src/memory/sqlite/store.ts) that the conformance suite leaves
// open, through its public API.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { openEmbeddedStore } from "../../src/memory/embedded.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-embedded-rules-"));
after(() => rmSync(root, { recursive: true, force: true }));
let files = 0;
const freshFile = () => join(root, `store-${files++}.db`);

describe("embedded store: what it says of itself, sessions made again, an aborted lock", () => {
  it("is of kind embedded, its appends kept in call order; closed, it says so by its kind", async () => {
    const store = await openEmbeddedStore({ path: freshFile() });
    assert.equal(store.kind, "embedded");
    assert.equal(store.appendsInOrder, true);
    await store.close();
    await assert.rejects(store.listSessions(), (error: unknown) => AgentLoopError.isInstance(error) && error.message === "memory: the embedded store is closed");
  });

  it("createSession of a session that exists (and has not expired) leaves its place in update order and its time as they were", async () => {
    const store = await openEmbeddedStore({ path: freshFile(), retentionMs: 3_600_000 });
    try {
      const first = await store.createSession("a");
      await store.createSession("b");
      const again = await store.createSession("a");
      assert.equal(again.updated_at, first.updated_at);
      assert.deepEqual(
        (await store.listSessions()).map((session) => session.session_id),
        ["a", "b"],
      );
    } finally {
      await store.close();
    }
  });

  it("lockSession with a signal already aborted rejects without taking the session, even when it is free", async () => {
    const store = await openEmbeddedStore({ path: freshFile() });
    try {
      await assert.rejects(store.lockSession("s", AbortSignal.abort()), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "aborted");
      // Not taken: another wait for it gets it at once.
      const release = await store.lockSession("s", AbortSignal.timeout(2000));
      await release();
    } finally {
      await store.close();
    }
  });
});
