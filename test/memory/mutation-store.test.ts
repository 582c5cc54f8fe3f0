// The memory contract's shared helpers (src/memory/store.ts) through the public API: what the
// mutation run of store.ts found no test for.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { openEmbeddedStore } from "../../src/memory/embedded.js";
import { defaultEmbeddedPath, InMemoryStore, MEMORY_EVENT_TYPES } from "../../src/memory/index.js";

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

describe("defaultEmbeddedPath", () => {
  it("keeps the dots inside an agent's name and replaces only leading ones, and other characters, with _", () => {
    assert.equal(defaultEmbeddedPath("team.lead-2"), ".agentloop/team.lead-2/memory.db");
    assert.equal(defaultEmbeddedPath("..hidden.db"), ".agentloop/_hidden.db/memory.db");
    assert.equal(defaultEmbeddedPath("my agent/v1.0"), ".agentloop/my_agent_v1.0/memory.db");
    assert.equal(defaultEmbeddedPath(""), ".agentloop/agent/memory.db");
    assert.equal(defaultEmbeddedPath(), ".agentloop/agent/memory.db");
  });
});

describe("event timestamps", () => {
  it("are written exactly as Date's toISOString writes them, for any time: before 1970, years below 1000, from year 10000 on, and 2,000 times spread over 1970-9999", async () => {
    const store = new InMemoryStore({ maxEventsPerSession: 10_000 });
    const year10000 = Date.UTC(10000, 0, 1);
    const edges = [-1, -86_400_001, Date.UTC(999, 11, 31, 23, 59, 59, 999), Date.UTC(-1, 0, 1), 0, 1, year10000 - 1, year10000, year10000 + 1, 8.64e15];
    // A fixed sequence (the MINSTD generator, exact in doubles), so a failure can be reproduced.
    let state = 12_345;
    const spread = Array.from({ length: 2000 }, () => {
      state = (state * 48_271) % 2_147_483_647;
      return Math.floor((state / 2_147_483_647) * year10000);
    });
    const times = [...edges, ...spread];
    const stored = await store.append("times", times.map((ms) => ({ event_type: "x", timestamp: new Date(ms) })));
    assert.deepEqual(
      stored.map((event) => event.timestamp),
      times.map((ms) => new Date(ms).toISOString()),
    );
    // The same time twice in a row, then another: each gets its own text.
    const [first, again, other] = await store.append("times", [{ event_type: "x", timestamp: new Date(5) }, { event_type: "x", timestamp: new Date(5) }, { event_type: "x", timestamp: new Date(6) }]);
    assert.deepEqual([first.timestamp, again.timestamp, other.timestamp], ["1970-01-01T00:00:00.005Z", "1970-01-01T00:00:00.005Z", "1970-01-01T00:00:00.006Z"]);
    await store.close();
  });
});

describe("content and metadata that JSON cannot write", () => {
  const refused = (pattern: RegExp) => (error: unknown) => {
    assert.ok(AgentLoopError.isInstance(error), `expected an AgentLoopError, got ${String(error)}`);
    assert.equal(error.kind, "invalid_request");
    assert.match(error.message, pattern);
    return true;
  };

  it("refuses an array or object that contains itself, naming the field, and stores nothing", async () => {
    const store = new InMemoryStore();
    const loop: unknown[] = ["start"];
    loop.push(loop);
    const nested: Record<string, unknown> = { list: [] };
    (nested.list as unknown[]).push({ back: nested });
    await assert.rejects(store.append("s", [{ event_type: "x", content: loop }]), refused(/content is not JSON-serializable/));
    await assert.rejects(store.append("s", [{ event_type: "x", metadata: { loop } }]), refused(/metadata is not JSON-serializable/));
    await assert.rejects(store.append("s", [{ event_type: "x", content: nested }]), refused(/content is not JSON-serializable/));
    await assert.rejects(store.createSession("s", { nested }), refused(/session metadata is not JSON-serializable/));
    assert.equal(await store.getSession("s"), undefined);
    await store.close();
  });

  it("stores a content JSON writes as nothing (a function, a symbol) as null", async () => {
    const store = new InMemoryStore();
    const stored = await store.append("s", [{ event_type: "x", content: () => 1 }, { event_type: "x", content: Symbol("s") }, { event_type: "x", content: { toJSON: () => undefined } }]);
    assert.deepEqual(
      stored.map((event) => event.content),
      [null, null, null],
    );
    await store.close();
  });
});

describe("text in content that takes the JSON round trip (nested deeper than 32, or with an own __proto__ key)", () => {
  const deep = (inner: unknown) => Array.from({ length: 40 }).reduce<unknown>((value) => ({ value }), inner);
  const bottom = (value: unknown): unknown => {
    let at = value as { value?: unknown };
    while (at && typeof at === "object" && !Array.isArray(at) && "value" in at) at = at.value as { value?: unknown };
    return at;
  };
  // Text holding a backslash then u0000 or ud800 (escaped code, a JSON document as a string) is text, not an escape.
  const literal = ["\\u0000 is how JSON writes NUL", "\\ud800", "a\\\\udc00", "\\ud83d\\ude00"];

  it("keeps a backslash-u sequence written as text, as it does in shallow content, and still replaces real NULs and lone surrogates", async () => {
    const store = new InMemoryStore();
    const [shallow, nested, withProto] = await store.append("s", [
      { event_type: "x", content: [...literal, "nul\u0000", "lone\ud800", null, 7] },
      { event_type: "x", content: deep([...literal, "nul\u0000", "lone\ud800", null, 7]) },
      { event_type: "x", content: JSON.parse(`{"__proto__": ${JSON.stringify([...literal, "nul\u0000"])}, "k": "\\\\u0000"}`) },
    ]);
    const expected = [...literal, "nul\uFFFD", "lone\uFFFD", null, 7];
    assert.deepEqual(shallow.content, expected);
    assert.deepEqual(bottom(nested.content), expected);
    assert.deepEqual(Object.getOwnPropertyDescriptor(withProto.content, "__proto__")?.value, [...literal, "nul\uFFFD"]);
    assert.equal((withProto.content as { k: string }).k, "\\u0000");
    await store.close();
  });

  it("replaces NULs and lone surrogates in its keys, keeping their order and an own __proto__ key as a key", async () => {
    const store = new InMemoryStore();
    const keyed = JSON.parse('{"first": 1, "a\\u0000b": 2, "__proto__": {"c\\ud800": 3}, "last\\\\u0000": 4}');
    const [stored] = await store.append("s", [{ event_type: "x", content: deep(keyed) }]);
    const inner = bottom(stored.content) as Record<string, unknown>;
    assert.deepEqual(Object.keys(inner), ["first", "a\uFFFDb", "__proto__", "last\\u0000"]);
    assert.equal(Object.getPrototypeOf(inner), Object.prototype);
    assert.deepEqual(Object.getOwnPropertyDescriptor(inner, "__proto__")?.value, { "c\uFFFD": 3 });
    assert.deepEqual([inner.first, inner["a\uFFFDb"], inner["last\\u0000"]], [1, 2, 4]);
    await store.close();
  });
});

describe("metadata whose JSON is null", () => {
  it("is refused, as any metadata that is not an object, for an event and for a session", async () => {
    const store = new InMemoryStore();
    const toNull = { toJSON: () => null };
    await assert.rejects(store.append("s", [{ event_type: "x", metadata: toNull as never }]), /memory: metadata must be an object/);
    await assert.rejects(store.createSession("s", toNull as never), /memory: session metadata must be an object/);
    assert.equal(await store.getSession("s"), undefined);
    await store.close();
  });
});

describe("a session lock wait stopped by its signal", () => {
  it("rejects with an aborted error that says why", async () => {
    const folder = mkdtempSync(join(tmpdir(), "agentloop-lock-"));
    const store = await openEmbeddedStore({ path: join(folder, "memory.db"), backgroundCheckpoints: false });
    try {
      await assert.rejects(store.lockSession("s", AbortSignal.abort()), (error: unknown) => {
        assert.ok(AgentLoopError.isInstance(error));
        assert.equal(error.kind, "aborted");
        assert.equal(error.message, "memory: stopped waiting for the session, which another run is using");
        return true;
      });
    } finally {
      await store.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
