// openMemoryStore: the embedded store it opens, and the kind of its refusals (what the mutation run
// of config.ts found no test for).
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { openMemoryStore } from "../../src/memory/index.js";

const folder = mkdtempSync(join(tmpdir(), "agentloop-config-"));
after(() => rmSync(folder, { recursive: true, force: true }));

function configurationError(pattern: RegExp): (error: unknown) => boolean {
  return (error) => {
    assert.ok(AgentLoopError.isInstance(error), `expected an AgentLoopError, got ${String(error)}`);
    assert.equal(error.kind, "configuration");
    assert.match(error.message, pattern);
    return true;
  };
}

describe("openMemoryStore", () => {
  it("opens the embedded store at the path it is given, with the limits it is given", async () => {
    const path = join(folder, "agent", "memory.db");
    const store = await openMemoryStore({ type: "embedded", path, maxSessions: 1, maxEventsPerSession: 2 });
    try {
      assert.equal(store.kind, "embedded");
      await store.append("first", [{ event_type: "a" }]);
      await store.append("second", [{ event_type: "a" }, { event_type: "b" }, { event_type: "c" }]);
      assert.deepEqual(
        (await store.listSessions()).map((session) => session.session_id),
        ["second"],
      );
      assert.deepEqual(
        (await store.events("second")).map((event) => event.event_type),
        ["b", "c"],
      );
    } finally {
      await store.close();
    }
    assert.ok(existsSync(path), `the store's file is ${path}`);
  });

  it("refuses a postgres store without a URL and an unknown type as configuration errors", async () => {
    await assert.rejects(openMemoryStore({ type: "postgres" }), configurationError(/the postgres store needs postgresUrl/));
    await assert.rejects(openMemoryStore({ type: "nope" as never }), configurationError(/unknown store type "nope"/));
  });
});
