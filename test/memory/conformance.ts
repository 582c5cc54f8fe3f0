// One conformance suite, run against every MemoryStore implementation.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import type { MemoryEvent, MemoryLimits, MemoryStore } from "../../src/memory/index.js";

export type StoreFactory = (limits?: MemoryLimits) => Promise<MemoryStore>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withStore(factory: StoreFactory, limits: MemoryLimits | undefined, fn: (store: MemoryStore) => Promise<void>): Promise<void> {
  const store = await factory(limits);
  try {
    await fn(store);
  } finally {
    await store.close();
  }
}

async function rejectsWith(promise: Promise<unknown>, kind: string, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(AgentLoopError.isInstance(error), `expected an AgentLoopError, got ${String(error)}`);
    assert.equal(error.kind, kind);
    assert.match(error.message, pattern);
    return true;
  });
}

export function memoryStoreConformance(name: string, factory: StoreFactory): void {
  describe(`MemoryStore conformance: ${name}`, () => {
    it("creates sessions idempotently and reports unknown ones as undefined", async () => {
      await withStore(factory, undefined, async (store) => {
        assert.equal(await store.getSession("nope"), undefined);
        const created = await store.createSession("s1", { user: "ada" });
        assert.equal(created.session_id, "s1");
        assert.deepEqual(created.metadata, { user: "ada" });
        assert.equal(created.event_count, 0);
        assert.equal(created.last_seq, 0);
        assert.ok(!Number.isNaN(Date.parse(created.created_at)));
        const again = await store.createSession("s1", { user: "other" });
        assert.deepEqual(again.metadata, { user: "ada" }, "an existing session is returned unchanged");
        const generated = await store.createSession();
        // A UUID in the version 7 layout: its first 48 bits are the time (ids sort in creation order).
        const V7 = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
        const [, high, low] = V7.exec(generated.session_id) ?? assert.fail(`${generated.session_id} is not a UUID in the version 7 layout`);
        const madeAt = Number.parseInt(high + low, 16);
        assert.ok(Math.abs(madeAt - Date.now()) < 60_000, `its time ${new Date(madeAt).toISOString()} is now`);
        await new Promise((resolve) => setTimeout(resolve, 2));
        const later = await store.createSession();
        assert.ok(later.session_id > generated.session_id, `${later.session_id} sorts after ${generated.session_id}`);
        assert.equal((await store.getSession("s1"))?.session_id, "s1");
      });
    });

    it("appends in order, assigns seqs and keeps content, metadata, ids and timestamps", async () => {
      await withStore(factory, undefined, async (store) => {
        const stored = await store.append("s", [
          { event_type: "user_message", content: "hello", metadata: { run_id: "r1" } },
          { event_type: "tool_call", content: { tool: "echo", arguments: { text: "hi", n: [1, 2] } }, metadata: { tool_call_id: "c1" } },
          { event_type: "tool_result", content: { tool: "echo", result: "hi" }, event_id: "mine", timestamp: "2030-01-02T03:04:05.678Z" },
        ]);
        assert.deepEqual(
          stored.map((event) => event.seq),
          [1, 2, 3],
        );
        const more = await store.append("s", [{ event_type: "agent_response", content: "done" }]);
        assert.equal(more[0].seq, 4);
        const events = await store.events("s");
        assert.deepEqual(
          events.map((event) => [event.seq, event.event_type]),
          [
            [1, "user_message"],
            [2, "tool_call"],
            [3, "tool_result"],
            [4, "agent_response"],
          ],
        );
        assert.deepEqual(events, [...stored, ...more]);
        assert.equal(events[0].content, "hello");
        assert.deepEqual(events[0].metadata, { run_id: "r1" });
        assert.deepEqual(events[1].content, { tool: "echo", arguments: { text: "hi", n: [1, 2] } });
        assert.equal(events[2].event_id, "mine");
        assert.equal(events[2].timestamp, "2030-01-02T03:04:05.678Z");
        assert.equal(events[0].session_id, "s");
        assert.match(events[0].event_id, /^[0-9a-f-]{36}$/);
        assert.notEqual(events[0].event_id, events[1].event_id);
        const session = await store.getSession("s");
        assert.equal(session?.event_count, 4);
        assert.equal(session?.last_seq, 4);
        assert.deepEqual(await store.append("s", []), []);
        assert.deepEqual(await store.append("never", []), []);
        assert.equal(await store.getSession("never"), undefined, "an empty append creates no session");
      });
    });

    it("rejects a batch with one bad event as a whole", async () => {
      await withStore(factory, undefined, async (store) => {
        await store.append("s", [{ event_type: "user_message", content: "kept" }]);
        await rejectsWith(store.append("s", [{ event_type: "user_message", content: "x" }, { event_type: "" }]), "invalid_request", /event_type/);
        await rejectsWith(store.append("s", [{ event_type: "tool_result", content: { big: 10n } }]), "invalid_request", /content is not JSON-serializable/);
        await rejectsWith(store.append("s", [{ event_type: "x", metadata: [] as never }]), "invalid_request", /metadata must be an object/);
        await rejectsWith(store.append("s", [{ event_type: "x", timestamp: "yesterday" }]), "invalid_request", /invalid event timestamp/);
        const events = await store.events("s");
        assert.deepEqual(
          events.map((event) => event.content),
          ["kept"],
        );
        assert.equal((await store.append("s", [{ event_type: "x" }]))[0].seq, 2, "a failed append uses no seq");
      });
    });

    it("rejects bad session ids and query values with invalid_request", async () => {
      await withStore(factory, undefined, async (store) => {
        await rejectsWith(store.append("", [{ event_type: "x" }]), "invalid_request", /session id/);
        await rejectsWith(store.getSession(42 as never), "invalid_request", /session id/);
        await rejectsWith(store.createSession("x".repeat(300)), "invalid_request", /at most 256/);
        // A lone surrogate has no UTF-8 form: two such ids would become one session (or crash the SQLite driver).
        await rejectsWith(store.append("s\ud800x", [{ event_type: "x" }]), "invalid_request", /session id .*lone surrogate/);
        await rejectsWith(store.events("\udc00"), "invalid_request", /lone surrogate/);
        await rejectsWith(store.getSession("a\udbff"), "invalid_request", /lone surrogate/);
        await rejectsWith(store.createSession("\ud800"), "invalid_request", /lone surrogate/);
        assert.equal((await store.append("s\ud83d\ude00", [{ event_type: "x" }]))[0].session_id, "s\ud83d\ude00", "a surrogate pair is fine");
        await rejectsWith(store.events("s", { limit: -1 }), "invalid_request", /limit/);
        await rejectsWith(store.events("s", { afterSeq: 1.5 }), "invalid_request", /afterSeq/);
        await rejectsWith(store.latestEvents({ limit: Number.NaN }), "invalid_request", /limit/);
      });
    });

    it("queries by limit (latest), afterSeq (next page) and types; unknown sessions are empty", async () => {
      await withStore(factory, undefined, async (store) => {
        await store.append(
          "s",
          Array.from({ length: 10 }, (_, index) => ({ event_type: index % 2 === 0 ? "user_message" : "agent_response", content: `e${index + 1}` })),
        );
        const contents = (events: Array<{ content: unknown }>) => events.map((event) => event.content);
        assert.deepEqual(contents(await store.events("s", { limit: 3 })), ["e8", "e9", "e10"]);
        assert.deepEqual(contents(await store.events("s", { afterSeq: 7 })), ["e8", "e9", "e10"]);
        assert.deepEqual(contents(await store.events("s", { afterSeq: 2, limit: 2 })), ["e3", "e4"]);
        assert.deepEqual(contents(await store.events("s", { types: ["agent_response"], limit: 2 })), ["e8", "e10"]);
        assert.deepEqual(contents(await store.events("s", { types: ["user_message"], afterSeq: 6 })), ["e7", "e9"]);
        assert.deepEqual(await store.events("s", { limit: 0 }), []);
        assert.deepEqual(await store.events("s", { types: [] }), []);
        assert.deepEqual(await store.events("unknown"), []);
      });
    });

    it("returns the latest events across sessions in order", async () => {
      await withStore(factory, undefined, async (store) => {
        await store.append("a", [{ event_type: "user_message", content: "a1" }]);
        await store.append("b", [{ event_type: "user_message", content: "b1" }]);
        await store.append("a", [{ event_type: "agent_response", content: "a2" }]);
        await store.append("b", [{ event_type: "agent_response", content: "b2" }]);
        const latest = await store.latestEvents({ limit: 3 });
        assert.deepEqual(
          latest.map((event) => [event.session_id, event.content]),
          [
            ["b", "b1"],
            ["a", "a2"],
            ["b", "b2"],
          ],
        );
        const answers = await store.latestEvents({ types: ["agent_response"] });
        assert.deepEqual(
          answers.map((event) => event.content),
          ["a2", "b2"],
        );
      });
    });

    it("lists sessions least recently updated first and deletes them", async () => {
      await withStore(factory, undefined, async (store) => {
        await store.append("one", [{ event_type: "x" }]);
        await store.append("two", [{ event_type: "x" }, { event_type: "y" }]);
        await store.append("one", [{ event_type: "z" }]);
        const sessions = await store.listSessions();
        assert.deepEqual(
          sessions.map((session) => [session.session_id, session.event_count, session.last_seq]),
          [
            ["two", 2, 2],
            ["one", 2, 2],
          ],
        );
        assert.deepEqual(
          (await store.listSessions({ limit: 1 })).map((session) => session.session_id),
          ["one"],
        );
        assert.equal(await store.deleteSession("two"), true);
        assert.equal(await store.deleteSession("two"), false);
        assert.deepEqual(await store.events("two"), []);
        assert.equal(await store.getSession("two"), undefined);
        assert.deepEqual(
          (await store.latestEvents()).map((event) => event.session_id),
          ["one", "one"],
        );
      });
    });

    it("trims the oldest events beyond maxEventsPerSession; seqs keep counting", async () => {
      await withStore(factory, { maxEventsPerSession: 3 }, async (store) => {
        await store.append("s", [{ event_type: "x", content: 1 }, { event_type: "x", content: 2 }]);
        await store.append("s", [{ event_type: "x", content: 3 }, { event_type: "x", content: 4 }, { event_type: "x", content: 5 }]);
        const events = await store.events("s");
        assert.deepEqual(
          events.map((event) => [event.seq, event.content]),
          [
            [3, 3],
            [4, 4],
            [5, 5],
          ],
        );
        const session = await store.getSession("s");
        assert.equal(session?.event_count, 3);
        assert.equal(session?.last_seq, 5);
      });
    });

    it("trims a large append to its newest events, and a deleted session starts again empty", async () => {
      await withStore(factory, { maxEventsPerSession: 3 }, async (store) => {
        await store.append("s", Array.from({ length: 12 }, (_, index) => ({ event_type: "x", content: index + 1 })));
        assert.deepEqual(
          (await store.events("s")).map((event) => [event.seq, event.content]),
          [
            [10, 10],
            [11, 11],
            [12, 12],
          ],
        );
        assert.deepEqual(
          (await store.latestEvents()).map((event) => event.content),
          [10, 11, 12],
        );
        assert.equal(await store.deleteSession("s"), true);
        const [again] = await store.append("s", [{ event_type: "x", content: "new" }]);
        assert.equal(again.seq, 1);
        assert.deepEqual(
          (await store.events("s")).map((event) => event.content),
          ["new"],
        );
        assert.equal((await store.getSession("s"))?.event_count, 1);
      });
    });

    it("evicts the least recently updated session beyond maxSessions", async () => {
      await withStore(factory, { maxSessions: 2 }, async (store) => {
        await store.append("old", [{ event_type: "x" }]);
        await store.append("middle", [{ event_type: "x" }]);
        await store.append("old", [{ event_type: "x" }]); // now "middle" is the least recently updated
        await store.append("new", [{ event_type: "x" }]);
        assert.deepEqual(
          (await store.listSessions()).map((session) => session.session_id),
          ["old", "new"],
        );
        assert.deepEqual(await store.events("middle"), []);
        await store.createSession("newest");
        assert.deepEqual(
          (await store.listSessions()).map((session) => session.session_id),
          ["new", "newest"],
        );
      });
    });

    it("gives back any JSON content and metadata as written: strings, escapes, unicode, numbers, nesting", async () => {
      const odd = 'quote " apostrophe \' it\'\'s backslash \\ newline \n tab \t line separator \u2028 emoji 🙂 accents é ñ';
      const contents: unknown[] = [odd, { nested: { list: [1, 0.1, 1e21, -2.5e-7, 9007199254740991, null, true, false, ""], text: odd } }, [], null, 0, "null", '{"not":"parsed"}'];
      await withStore(factory, undefined, async (store) => {
        await store.append("s", contents.map((content, index) => ({ event_type: "x", content, metadata: { index, text: odd, deep: { values: [index, odd] } } })));
        const events = await store.events("s");
        assert.deepEqual(
          events.map((event) => event.content),
          contents,
        );
        assert.deepEqual(
          events.map((event) => event.metadata.deep),
          contents.map((_, index) => ({ values: [index, odd] })),
        );
      });
    });

    it("stores a large append whole, in order, with quotes in its ids, type and content", async () => {
      const sessionId = "it's a session";
      await withStore(factory, { maxEventsPerSession: 5000 }, async (store) => {
        const events = Array.from({ length: 3000 }, (_, index) => ({ event_id: `e'${index}`, event_type: "user's", content: `line ${index}: 'quoted'`, metadata: { index } }));
        const stored = await store.append(sessionId, events);
        assert.equal(stored.length, 3000);
        const read = await store.events(sessionId);
        assert.deepEqual(
          read.map((event) => [event.seq, event.event_id, event.event_type, event.content, event.metadata.index]),
          events.map((event, index) => [index + 1, event.event_id, "user's", event.content, index]),
        );
      });
    });

    it("keeps the most recently updated sessions while evictions run beside later appends", async () => {
      // A store may evict after the appends that asked for it (PostgreSQL defers evictions and
      // runs one at a time): what it evicts must follow the order of updates as it is then. Here
      // "b" is new, then the three others are updated: "b" is the least recently updated.
      await withStore(factory, { maxSessions: 3 }, async (store) => {
        const order: string[] = [];
        const touch = async (sessionId: string) => {
          await store.append(sessionId, [{ event_type: "x" }]);
          const at = order.indexOf(sessionId);
          if (at >= 0) order.splice(at, 1);
          order.push(sessionId);
        };
        for (const sessionId of ["p", "q", "a"]) await touch(sessionId);
        await sleep(150);
        for (const sessionId of ["z", "b", "q", "a", "z"]) await touch(sessionId);
        const kept = (await store.listSessions()).map((session) => session.session_id);
        assert.deepEqual(kept, order.slice(-3));
        assert.deepEqual(kept, ["q", "a", "z"]);
      });
    });

    it("hides and removes events and sessions older than the retention", async () => {
      // One second of slack between writing "fresh" and reading it back, even on a busy machine.
      await withStore(factory, { retentionMs: 1000 }, async (store) => {
        await store.append("s", [
          { event_type: "x", content: "ancient", timestamp: "2000-01-01T00:00:00.000Z" },
          { event_type: "x", content: "fresh" },
        ]);
        assert.deepEqual(
          (await store.events("s")).map((event) => event.content),
          ["fresh"],
        );
        assert.equal((await store.getSession("s"))?.event_count, 1);
        await sleep(1100);
        assert.equal(await store.getSession("s"), undefined);
        assert.deepEqual(await store.events("s"), []);
        assert.deepEqual(await store.listSessions(), []);
        assert.deepEqual(await store.latestEvents(), []);
        const revived = await store.createSession("s");
        assert.equal(revived.event_count, 0, "an expired session comes back empty");
      });
    });

    it("rejects invalid limits when it is created", async () => {
      await rejectsWith(factory({ maxSessions: 0 }), "configuration", /maxSessions must be a positive integer/);
      await rejectsWith(factory({ maxEventsPerSession: 2.5 }), "configuration", /maxEventsPerSession/);
      await rejectsWith(factory({ retentionMs: -1 }), "configuration", /retentionMs/);
    });

    it("replaces NUL characters (PostgreSQL cannot store them) the same way everywhere", async () => {
      await withStore(factory, undefined, async (store) => {
        await store.append("s", [{ event_type: "tool_result", content: { result: "a\u0000b" }, metadata: { note: "c\u0000" } }]);
        const [event] = await store.events("s");
        assert.deepEqual(event.content, { result: "a\uFFFDb" });
        assert.deepEqual(event.metadata, { note: "c\uFFFD" });
      });
    });

    it("replaces lone surrogates (no UTF-8 store can hold them) with U+FFFD, keeps pairs, and loses no event", async () => {
      await withStore(factory, undefined, async (store) => {
        await store.append("s", [
          { event_type: "user_message", content: "hi \ud800 there" },
          { event_type: "agent_response", content: "end \udc00", metadata: { note: "x\udbff", ["k\ud800"]: "\u0000\ud800" } },
          { event_type: "tool_result", content: { result: ["\ud83d\ude00", "\ude00\ud83d"] }, timestamp: new Date(0) },
        ]);
        const events = await store.events("s");
        assert.deepEqual(
          events.map((event) => event.content),
          ["hi \uFFFD there", "end \uFFFD", { result: ["\ud83d\ude00", "\uFFFD\uFFFD"] }],
        );
        assert.deepEqual(events[1].metadata, { note: "x\uFFFD", "k\uFFFD": "\uFFFD\uFFFD" });
        // Reads give the same back in every query shape.
        assert.deepEqual((await store.latestEvents({ limit: 3 })).map((event) => event.content), events.map((event) => event.content));
      });
    });

    it("replaces a lone surrogate with U+FFFD in an append that holds no NUL, high or low, in content, metadata, ids and types", async () => {
      await withStore(factory, undefined, async (store) => {
        // Each alone in its append: nothing else in it (a NUL) makes the store look for what to replace.
        const [high] = await store.append("s", [{ event_type: "x", content: "a\ud800b" }]);
        const [low] = await store.append("s", [{ event_type: "x", content: { text: "c\udfffd" } }]);
        const [meta] = await store.append("s", [{ event_type: "x", metadata: { note: "\udbff" } }]);
        const [named] = await store.append("s", [{ event_type: "t\udc00", event_id: "id\ud83d" }]);
        assert.deepEqual(
          [high.content, low.content, meta.metadata, named.event_type, named.event_id],
          ["a\uFFFDb", { text: "c\uFFFDd" }, { note: "\uFFFD" }, "t\uFFFD", "id\uFFFD"],
        );
        assert.deepEqual(
          (await store.events("s")).map((event) => [event.content, event.metadata.note, event.event_type, event.event_id]),
          [
            ["a\uFFFDb", undefined, "x", high.event_id],
            [{ text: "c\uFFFDd" }, undefined, "x", low.event_id],
            [null, "\uFFFD", "x", meta.event_id],
            [null, undefined, "t\uFFFD", "id\uFFFD"],
          ],
        );
      });
    });

    it("makes a session's metadata storable as event metadata is: NUL and lone surrogates become U+FFFD, in keys, values and nesting", async () => {
      await withStore(factory, undefined, async (store) => {
        const metadata = {
          user: "ada\u0000lovelace",
          "k\ud800": "\udc00 end",
          nested: { list: ["\ud83d\ude00", "\ude00\ud83d", 1, true, null], "n\u0000": { deep: "x\udbff" } },
          when: new Date(0),
        };
        const expected = {
          user: "ada\uFFFDlovelace",
          "k\uFFFD": "\uFFFD end",
          nested: { list: ["\ud83d\ude00", "\uFFFD\uFFFD", 1, true, null], "n\uFFFD": { deep: "x\uFFFD" } },
          when: "1970-01-01T00:00:00.000Z",
        };
        assert.deepEqual((await store.createSession("meta", metadata)).metadata, expected);
        // What a user reads back later, by each way a session is read, and the session still works.
        assert.deepEqual((await store.getSession("meta"))?.metadata, expected);
        assert.deepEqual((await store.listSessions()).find((session) => session.session_id === "meta")?.metadata, expected);
        assert.equal((await store.append("meta", [{ event_type: "user_message", content: "hi" }]))[0].seq, 1);
        assert.deepEqual((await store.getSession("meta"))?.metadata, expected, "an append keeps the metadata");
        // The caller's object is copied, not kept: changing it later changes nothing stored.
        metadata.user = "changed";
        assert.equal((await store.getSession("meta"))?.metadata.user, "ada\uFFFDlovelace");
        // Nor is an object given back: changing it changes nothing stored.
        const read = (await store.getSession("meta")) ?? assert.fail("the session is there");
        read.metadata.user = "changed too";
        (read.metadata.nested as { list: unknown[] }).list.push("more");
        const listed = (await store.listSessions())[0] ?? assert.fail("the session is listed");
        listed.metadata.user = "changed again";
        assert.deepEqual((await store.getSession("meta"))?.metadata, expected);
        // No metadata is an empty object.
        assert.deepEqual((await store.createSession("plain")).metadata, {});
      });
    });

    it("refuses session metadata that is not a JSON object, naming it, and creates nothing", async () => {
      await withStore(factory, undefined, async (store) => {
        for (const metadata of [[1, 2], "text", 42, true]) {
          await rejectsWith(store.createSession("bad-meta", metadata as never), "invalid_request", /session metadata must be an object/);
        }
        const cyclic: Record<string, unknown> = {};
        cyclic.self = cyclic;
        await rejectsWith(store.createSession("bad-meta", cyclic), "invalid_request", /session metadata is not JSON-serializable/);
        assert.equal(await store.getSession("bad-meta"), undefined);
        // null is no metadata (as undefined), the same in every store.
        assert.deepEqual((await store.createSession("null-meta", null as never)).metadata, {});
      });
    });

    it("reads a types filter as event types are written (NUL and lone surrogates as U+FFFD), the same in every store, and refuses one that is not a list of names", async () => {
      await withStore(factory, undefined, async (store) => {
        await store.append("s", [
          { event_type: "a\u0000b", content: 1 },
          { event_type: "c\ud800", content: 2 },
          { event_type: "plain", content: 3 },
        ]);
        for (const [types, expected] of [
          [["a\u0000b"], [1]],
          [["a\uFFFDb"], [1]],
          [["c\ud800", "plain"], [2, 3]],
          [[], []],
        ] as Array<[string[], number[]]>) {
          assert.deepEqual((await store.events("s", { types })).map((event) => event.content), expected, JSON.stringify(types));
          assert.deepEqual((await store.latestEvents({ types })).map((event) => event.content), expected, JSON.stringify(types));
        }
        // A string is not a list: "plain" would be read as its letters by one store and as one name by another.
        for (const types of ["plain", [42], [null], "x" as unknown]) {
          await rejectsWith(store.events("s", { types: types as never }), "invalid_request", /types must be an array of event type names/);
          await rejectsWith(store.latestEvents({ types: types as never }), "invalid_request", /types must be an array of event type names/);
        }
      });
    });

    it("stores an append made with returnEvents: false exactly as any other, in order with the others, all or nothing", async () => {
      await withStore(factory, undefined, async (store) => {
        await store.append("s", [{ event_type: "user_message", content: "first" }]);
        const quiet = await Promise.all([
          store.append("s", [{ event_type: "tool_call", content: { tool: "echo", arguments: { n: [1, 2] } }, metadata: { run_id: "r1" }, event_id: "q1", timestamp: "2030-01-02T03:04:05.678Z" }], { returnEvents: false }),
          store.append("s", [{ event_type: "agent_response", content: "done" }]),
        ]);
        // The result is not for reading: the stored events, or none.
        assert.ok(Array.isArray(quiet[0]) && (quiet[0].length === 0 || quiet[0][0].event_id === "q1"));
        const events = await store.events("s");
        assert.deepEqual(
          events.map((event) => [event.seq, event.event_type, event.content]),
          [
            [1, "user_message", "first"],
            [2, "tool_call", { tool: "echo", arguments: { n: [1, 2] } }],
            [3, "agent_response", "done"],
          ],
        );
        assert.deepEqual(events[1].metadata, { run_id: "r1" });
        assert.equal(events[1].event_id, "q1");
        assert.equal(events[1].timestamp, "2030-01-02T03:04:05.678Z");
        assert.deepEqual(quiet[1], [events[2]], "an append without the option still returns its events");
        await rejectsWith(store.append("s", [{ event_type: "x" }, { event_type: "" }], { returnEvents: false }), "invalid_request", /event_type/);
        assert.equal((await store.events("s")).length, 3, "the failed append stored nothing");
      });
    });

    it("serializes concurrent appends to one session without gaps or duplicates", async () => {
      await withStore(factory, undefined, async (store) => {
        await Promise.all(Array.from({ length: 40 }, (_, index) => store.append("s", [{ event_type: "x", content: index }, { event_type: "y", content: index }])));
        const events = await store.events("s");
        assert.deepEqual(
          events.map((event) => event.seq),
          Array.from({ length: 80 }, (_, index) => index + 1),
        );
        // The two events of one append stay adjacent.
        for (let index = 0; index < 80; index += 2) assert.equal(events[index].content, events[index + 1].content);
      });
    });

    it("stores what an append's events held when it was called: the caller's later changes reach nothing stored, values JSON cannot write as such are stored as JSON writes them", async () => {
      await withStore(factory, undefined, async (store) => {
        class Point {
          constructor(
            readonly x: number,
            readonly y: number,
          ) {}
        }
        const content = { text: "before", list: [1, { deep: "before" }], at: new Date("2030-01-02T03:04:05.678Z"), point: new Point(1, 2), skip: undefined };
        const metadata: Record<string, unknown> = { run_id: "r", nested: { n: 1 } };
        const nullPrototype = Object.assign(Object.create(null), { kept: true });
        const appended = store.append("s", [
          { event_type: "tool_call", content, metadata },
          { event_type: "tool_result", content: -0, metadata: nullPrototype },
        ]);
        // Changed before the append is written (a group commit writes it on a later turn).
        content.text = "after";
        (content.list[1] as { deep: string }).deep = "after";
        metadata.run_id = "changed";
        (metadata.nested as { n: number }).n = 2;
        nullPrototype.kept = false;
        await appended;
        const stored = (await store.events("s")).map((event) => [event.content, event.metadata]);
        assert.deepEqual(stored, [
          [
            { text: "before", list: [1, { deep: "before" }], at: "2030-01-02T03:04:05.678Z", point: { x: 1, y: 2 } },
            { run_id: "r", nested: { n: 1 } },
          ],
          [0, { kept: true }],
        ]);
      });
    });

    it("returned events cannot be used to change the stored log", async () => {
      await withStore(factory, undefined, async (store) => {
        const [appended] = await store.append("s", [{ event_type: "tool_call", content: { tool: "t", arguments: { n: 1 } }, metadata: { run_id: "r" } }]);
        const original = structuredClone(appended);
        const tamper = (event: MemoryEvent) => {
          // Stores that share their stored objects freeze them (assigning throws); others return copies.
          for (const change of [
            () => {
              (event.content as { arguments: { n: number } }).arguments.n = 2;
            },
            () => {
              event.metadata.run_id = "changed";
            },
            () => {
              event.seq = 99;
            },
          ]) {
            try {
              change();
            } catch (error) {
              assert.ok(error instanceof TypeError, String(error));
            }
          }
        };
        tamper(appended);
        const [read] = await store.events("s");
        tamper(read);
        tamper((await store.latestEvents())[0]);
        assert.deepEqual(await store.events("s"), [original]);
      });
    });

    it("refuses each malformed event or argument with a message naming the problem, storing nothing", async () => {
      await withStore(factory, undefined, async (store) => {
        await rejectsWith(store.append("s", [null as never]), "invalid_request", /an event must be an object/);
        await rejectsWith(store.append("s", ["user_message" as never]), "invalid_request", /an event must be an object/);
        await rejectsWith(store.append("s", [{ event_type: 7 as never }]), "invalid_request", /event_type must be a non-empty string/);
        await rejectsWith(store.append("s", [{ event_type: "x", event_id: "" }]), "invalid_request", /event_id must be a non-empty string when given/);
        await rejectsWith(store.append("s", [{ event_type: "x", event_id: 5 as never }]), "invalid_request", /event_id must be a non-empty string/);
        await assert.rejects(store.append("s", { event_type: "x" } as never), (error: unknown) => error instanceof TypeError && /append expects an array of events/.test(error.message));
        await rejectsWith(store.append("a\u0000b", [{ event_type: "x" }]), "invalid_request", /session id cannot contain NUL/);
        await rejectsWith(store.createSession(""), "invalid_request", /session id must be a non-empty string/);
        await rejectsWith(store.deleteSession(""), "invalid_request", /session id/);
        await rejectsWith(store.events(undefined as never), "invalid_request", /session id/);
        assert.equal((await store.createSession("x".repeat(256))).session_id.length, 256, "256 characters is the limit, allowed");
        await rejectsWith(store.listSessions({ limit: 1.5 }), "invalid_request", /limit must be a non-negative integer/);
        await rejectsWith(store.latestEvents({ limit: -1 }), "invalid_request", /limit must be a non-negative integer/);
        await rejectsWith(store.events("s", { afterSeq: -1 }), "invalid_request", /afterSeq must be a non-negative integer/);
        await rejectsWith(store.events("s", { limit: 2.5 }), "invalid_request", /limit/);
        assert.equal(await store.getSession("s"), undefined, "no refused append created the session");
        assert.deepEqual(await store.events("s", { afterSeq: 0, limit: 0 }), []);
      });
    });

    it("latestEvents gives the 100 most recent by default; an afterSeq of 0 reads from the start", async () => {
      await withStore(factory, undefined, async (store) => {
        await store.append("s", Array.from({ length: 102 }, (_, index) => ({ event_type: "x", content: index + 1 })));
        const latest = await store.latestEvents();
        assert.equal(latest.length, 100);
        assert.deepEqual([latest[0].content, latest[99].content], [3, 102]);
        assert.deepEqual(await store.latestEvents({ limit: 0 }), []);
        assert.deepEqual((await store.events("s", { afterSeq: 0, limit: 2 })).map((event) => event.seq), [1, 2]);
        assert.deepEqual((await store.events("s", { afterSeq: 101 })).map((event) => event.seq), [102]);
        assert.deepEqual(await store.events("s", { afterSeq: 102 }), []);
      });
    });

    it("reads event timestamps given as a Date or any ISO form as UTC ISO text, and stamps the others with the time of the append", async () => {
      await withStore(factory, undefined, async (store) => {
        const before = Date.now();
        const [offset, date, stamped] = await store.append("s", [
          { event_type: "x", timestamp: "2030-01-02T03:04:05+02:00" },
          { event_type: "x", timestamp: new Date(Date.UTC(2031, 5, 6, 7, 8, 9, 10)) },
          { event_type: "x" },
        ]);
        assert.equal(offset.timestamp, "2030-01-02T01:04:05.000Z");
        assert.equal(date.timestamp, "2031-06-06T07:08:09.010Z");
        const at = Date.parse(stamped.timestamp);
        assert.ok(at >= before - 1000 && at <= Date.now() + 1000, `${stamped.timestamp} is the time of the append`);
        await rejectsWith(store.append("s", [{ event_type: "x", timestamp: new Date(Number.NaN) }]), "invalid_request", /invalid event timestamp/);
        assert.deepEqual((await store.events("s")).map((event) => event.timestamp), [offset.timestamp, date.timestamp, stamped.timestamp]);
        // Calendar edges, in a Date and in text: leap days, ends of months and years, the epoch, the last 4-digit year.
        const edges = [
          "1970-01-01T00:00:00.000Z",
          "1999-12-31T23:59:59.999Z",
          "2000-02-29T12:00:00.001Z",
          "2024-02-29T23:59:59.090Z",
          "2025-03-01T00:00:00.000Z",
          "2100-02-28T08:09:10.100Z",
          "2100-03-01T00:00:00.000Z",
          "9999-12-31T23:59:59.999Z",
        ];
        const dated = await store.append("edges", [...edges.map((text) => ({ event_type: "x", timestamp: new Date(text) })), ...edges.map((text) => ({ event_type: "x", timestamp: text.replace(".000Z", "Z") }))]);
        assert.deepEqual(
          dated.map((event) => event.timestamp),
          [...edges, ...edges],
        );
        assert.deepEqual(
          (await store.events("edges")).map((event) => event.timestamp),
          [...edges, ...edges],
        );
      });
    });

    it("makes event ids and deeply nested text storable too (NUL and lone surrogates as U+FFFD, pairs kept), and writes -0 as 0", async () => {
      const deep = (inner: unknown) => Array.from({ length: 40 }).reduce<unknown>((value) => ({ value }), inner);
      await withStore(factory, undefined, async (store) => {
        await store.append("s", [
          { event_type: "x", event_id: "id\u0000\ud800", content: deep(["a\u0000b", "c\ud800d", "\udc00e", "f\ud83d\ude00g", "h\ud800\ud800\udc00"]) },
          { event_type: "x", content: JSON.parse('{"__proto__": "p\\u0000", "k\\ud800": "v"}'), metadata: { zero: -0, list: [-0] } },
          { event_type: "x", content: -0 },
        ]);
        const [nested, own, zero] = await store.events("s");
        assert.equal(nested.event_id, "id\uFFFD\uFFFD");
        assert.deepEqual(nested.content, deep(["a\uFFFDb", "c\uFFFDd", "\uFFFDe", "f\ud83d\ude00g", "h\uFFFD\ud800\udc00"]));
        assert.deepEqual(own.content, JSON.parse('{"__proto__": "p\\ufffd", "k\\ufffd": "v"}'));
        assert.equal(Object.getPrototypeOf(own.content), Object.prototype);
        assert.ok(Object.is(zero.content, 0), "-0 is stored as 0, as JSON writes it");
        assert.ok(Object.is(own.metadata.zero, 0) && Object.is((own.metadata.list as number[])[0], 0));
      });
    });

    it("treats an infinite limit as no limit, and refuses a retention that is not a positive finite number", async () => {
      await withStore(factory, { maxEventsPerSession: Number.POSITIVE_INFINITY, maxSessions: Number.POSITIVE_INFINITY }, async (store) => {
        await store.append("s", Array.from({ length: 520 }, (_, index) => ({ event_type: "x", content: index })));
        assert.equal((await store.getSession("s"))?.event_count, 520, "more than the default 500 are kept");
      });
      await withStore(factory, { maxEventsPerSession: 1, maxSessions: 1 }, async (store) => {
        await store.append("a", [{ event_type: "x", content: 1 }, { event_type: "x", content: 2 }]);
        assert.deepEqual((await store.events("a")).map((event) => event.content), [2]);
        await store.append("b", [{ event_type: "x" }]);
        assert.deepEqual((await store.listSessions()).map((session) => session.session_id), ["b"]);
      });
      await rejectsWith(factory({ retentionMs: 0 }), "configuration", /retentionMs must be a positive number of milliseconds, got 0/);
      await rejectsWith(factory({ retentionMs: Number.NaN }), "configuration", /retentionMs.*got NaN/);
      await rejectsWith(factory({ retentionMs: Number.POSITIVE_INFINITY }), "configuration", /retentionMs.*got Infinity/);
      await rejectsWith(factory({ maxSessions: -3 }), "configuration", /memory: maxSessions must be a positive integer, got -3/);
      await rejectsWith(factory({ maxEventsPerSession: Number.NaN }), "configuration", /maxEventsPerSession must be a positive integer, got NaN/);
    });

    it("rejects calls after close; close is idempotent", async () => {
      const store = await factory();
      await store.close();
      await store.close();
      await rejectsWith(store.append("s", [{ event_type: "x" }]), "invalid_request", /closed/);
      await rejectsWith(store.events("s"), "invalid_request", /closed/);
      const closed = new RegExp(`the ${store.kind} store is closed`);
      await rejectsWith(store.createSession("s"), "invalid_request", closed);
      await rejectsWith(store.getSession("s"), "invalid_request", closed);
      await rejectsWith(store.latestEvents(), "invalid_request", closed);
      await rejectsWith(store.listSessions(), "invalid_request", closed);
      await rejectsWith(store.deleteSession("s"), "invalid_request", closed);
    });
  });
}
