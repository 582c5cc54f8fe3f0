// The memory contract's shared helpers (src/memory/store.ts) through the public API: what the
// mutation run of store.ts found no test for.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { MEMORY_EVENT_TYPES } from "../../src/memory/index.js";

/** The `event_type` column of docs/memory.md's table of what `sessionMemory` writes. */
function documentedEventTypes(): string[] {
  const page = readFileSync(new URL("../../docs/memory.md", import.meta.url), "utf8");
  const table = page.slice(page.indexOf("| Loop event | `event_type` |"));
  const rows = table.slice(0, table.indexOf("\n\n")).split("\n").slice(2);
  return rows.map((row) => /`([a-z_]+)`/.exec(row.split("|")[2])?.[1] ?? assert.fail(`no event type in ${row}`));
}

describe("MEMORY_EVENT_TYPES", () => {
  it("names, once each, every event type the docs say sessionMemory writes, and the server's task_delegation_received", () => {
    const documented = new Set([...documentedEventTypes(), "task_delegation_received"]);
    assert.equal(documented.size, 14);
    assert.equal(new Set(MEMORY_EVENT_TYPES).size, MEMORY_EVENT_TYPES.length, "no type twice");
    assert.deepEqual([...MEMORY_EVENT_TYPES].sort(), [...documented].sort());
  });
});
