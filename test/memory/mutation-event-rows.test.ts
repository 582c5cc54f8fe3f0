// The embedded store writes an append's events as the JSON text it makes at the call
// (src/memory/sqlite/event-rows.ts) and falls back to the shared preparation when a value cannot be
// written: metadata that JSON cannot write, beside content that it can, is refused as every store
// refuses it (the in-process store's error), and nothing of the append is stored.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, it } from "node:test";
import { openEmbeddedStore } from "../../src/memory/embedded.js";
import { InMemoryStore } from "../../src/memory/in-memory-store.js";

const root = mkdtempSync(join(tmpdir(), "agentloop-event-rows-"));
after(() => rmSync(root, { recursive: true, force: true }));

it("metadata JSON cannot write (a BigInt), beside content it can, is refused with the in-process store's error, and nothing is stored", async () => {
  const events = [
    { event_type: "user_message", content: "fine" },
    { event_type: "agent_response", content: "fine too", metadata: { tokens: 10n } },
  ];
  const reference = new InMemoryStore();
  await reference.createSession("s");
  const expected = await reference.append("s", events as never).then(
    () => undefined,
    (error: unknown) => error,
  );
  assert.ok(expected instanceof Error, "the in-process store refuses it");
  const store = await openEmbeddedStore({ path: join(root, "memory.db") });
  try {
    await store.createSession("s");
    await assert.rejects(store.append("s", events as never), (error: unknown) => error instanceof Error && error.constructor === expected.constructor && error.message === expected.message);
    assert.deepEqual(await store.events("s"), []);
  } finally {
    await store.close();
  }
});
