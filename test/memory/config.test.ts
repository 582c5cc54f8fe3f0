import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { Agent, ScriptedModel } from "../../src/index.js";
import { DEFAULT_MEMORY_CONFIG, memoryConfigFromEnv, memoryFromEnv, openMemoryStore, parseDuration } from "../../src/memory/index.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "./postgres-server.js";

after(dropSchemas);

describe("memory configuration from the environment", () => {
  it("has the KAOS defaults and the embedded store by default", () => {
    assert.deepEqual(memoryConfigFromEnv({}), { ...DEFAULT_MEMORY_CONFIG, retentionMs: undefined, postgresUrl: undefined, postgresSchema: undefined });
    assert.equal(DEFAULT_MEMORY_CONFIG.type, "embedded");
    assert.equal(DEFAULT_MEMORY_CONFIG.contextLimit, 6);
    assert.equal(DEFAULT_MEMORY_CONFIG.maxSessions, 1000);
    assert.equal(DEFAULT_MEMORY_CONFIG.maxEventsPerSession, 500);
    assert.equal(DEFAULT_MEMORY_CONFIG.path, ".agentloop/agent/memory.db");
  });

  it("reads every variable", () => {
    const config = memoryConfigFromEnv({
      MEMORY_ENABLED: "yes",
      MEMORY_TYPE: "postgres",
      MEMORY_CONTEXT_LIMIT: "0",
      MEMORY_MAX_SESSIONS: "10",
      MEMORY_MAX_SESSION_EVENTS: "20",
      MEMORY_RETENTION: "7d",
      MEMORY_PATH: "/tmp/x",
      DATABASE_URL: "postgres://db/x",
      MEMORY_POSTGRES_SCHEMA: "agents",
    });
    assert.deepEqual(config, {
      enabled: true,
      type: "postgres",
      contextLimit: 0,
      maxSessions: 10,
      maxEventsPerSession: 20,
      retentionMs: 7 * 86_400_000,
      path: "/tmp/x",
      postgresUrl: "postgres://db/x",
      postgresSchema: "agents",
    });
    assert.equal(memoryConfigFromEnv({ MEMORY_TYPE: "local" }).type, "memory", "KAOS local is the in-process store");
    assert.equal(memoryConfigFromEnv({ MEMORY_TYPE: "SQLite" }).type, "embedded");
    assert.equal(memoryConfigFromEnv({ MEMORY_RETENTION: "90" }).retentionMs, 90_000);
    assert.equal(memoryConfigFromEnv({ MEMORY_RETENTION: "30m" }).retentionMs, 1_800_000);
    assert.equal(
      memoryConfigFromEnv({ MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: "postgres://a/b", DATABASE_URL: "postgres://c/d" }).postgresUrl,
      "postgres://a/b",
    );
  });

  it("rejects bad values naming the variable", () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ MEMORY_ENABLED: "maybe" }, /^MEMORY_ENABLED must be true or false, got "maybe"/],
      [{ MEMORY_TYPE: "redis" }, /^MEMORY_TYPE must be one of local, memory, embedded, sqlite, postgres, got "redis"/],
      [{ MEMORY_TYPE: "pglite" }, /PGlite store was replaced by the SQLite file of MEMORY_TYPE=embedded/],
      [{ MEMORY_CONTEXT_LIMIT: "-1" }, /^MEMORY_CONTEXT_LIMIT must be a non-negative integer/],
      [{ MEMORY_MAX_SESSIONS: "0" }, /^MEMORY_MAX_SESSIONS must be a positive integer, got "0"/],
      [{ MEMORY_MAX_SESSION_EVENTS: "many" }, /^MEMORY_MAX_SESSION_EVENTS must be a positive integer/],
      [{ MEMORY_RETENTION: "forever" }, /^MEMORY_RETENTION must be a positive duration/],
      [{ MEMORY_RETENTION: "0" }, /^MEMORY_RETENTION must be a positive duration/],
      [{ MEMORY_POSTGRES_SCHEMA: "x;drop" }, /^MEMORY_POSTGRES_SCHEMA must be a plain SQL identifier/],
      [{ MEMORY_TYPE: "postgres" }, /^MEMORY_TYPE=postgres needs MEMORY_POSTGRES_URL \(or DATABASE_URL\)/],
    ];
    for (const [env, message] of cases) {
      assert.throws(
        () => memoryConfigFromEnv(env),
        (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "configuration" && message.test(error.message),
        JSON.stringify(env),
      );
    }
  });

  it("reads each spelling of a boolean, a store type and a duration, trimmed and in any case", () => {
    for (const value of ["true", "1", "yes", "on", " TRUE ", "On"]) assert.equal(memoryConfigFromEnv({ MEMORY_ENABLED: value }).enabled, true, value);
    for (const value of ["false", "0", "no", "off", "FALSE", " Off "]) assert.equal(memoryConfigFromEnv({ MEMORY_ENABLED: value, MEMORY_TYPE: "postgres" }).enabled, false, value);
    assert.equal(memoryConfigFromEnv({ MEMORY_ENABLED: "  " }).enabled, true, "blank is unset");
    for (const [name, type] of [
      ["memory", "memory"],
      ["In-Memory", "memory"],
      ["embedded", "embedded"],
      [" postgresql ", "postgres"],
    ] as const) {
      assert.equal(memoryConfigFromEnv({ MEMORY_TYPE: name, DATABASE_URL: "postgres://db/x" }).type, type, name);
    }
    for (const [text, milliseconds] of [
      ["500ms", 500],
      ["1.5s", 1500],
      ["1.25s", 1250],
      ["2 m", 120_000],
      ["12h", 43_200_000],
      ["7D", 7 * 86_400_000],
      [" 3MS ", 3],
    ] as const) {
      assert.equal(memoryConfigFromEnv({ MEMORY_RETENTION: text }).retentionMs, milliseconds, text);
    }
    assert.equal(parseDuration("TTL", " 5m "), 300_000, "parseDuration trims what it is given");
    assert.throws(() => parseDuration("TTL", "5 weeks"), /^AgentLoopError: TTL must be a positive duration/);
    assert.equal(memoryConfigFromEnv({ MEMORY_MAX_SESSIONS: " 7 " }).maxSessions, 7);
    assert.equal(memoryConfigFromEnv({ MEMORY_MAX_SESSIONS: "1" }).maxSessions, 1, "1 is the least");
    assert.equal(memoryConfigFromEnv({ MEMORY_POSTGRES_SCHEMA: `_${"a".repeat(62)}` }).postgresSchema?.length, 63);
    assert.equal(memoryConfigFromEnv({ MEMORY_PATH: "  ", AGENT_NAME: "  " }).path, ".agentloop/agent/memory.db", "blank values are unset");
    assert.equal(memoryConfigFromEnv({ MEMORY_POSTGRES_URL: " ", DATABASE_URL: "postgres://db/y" }).postgresUrl, "postgres://db/y");
  });

  it("rejects each malformed number, duration and schema, naming the variable and what it must be", () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ MEMORY_ENABLED: "enabled" }, /^MEMORY_ENABLED must be true or false, got "enabled"$/],
      [{ MEMORY_MAX_SESSIONS: "+5" }, /^MEMORY_MAX_SESSIONS must be a positive integer, got "\+5"$/],
      [{ MEMORY_MAX_SESSIONS: "1.5" }, /^MEMORY_MAX_SESSIONS must be a positive integer/],
      [{ MEMORY_MAX_SESSIONS: "5x" }, /^MEMORY_MAX_SESSIONS must be a positive integer/],
      [{ MEMORY_MAX_SESSIONS: "x5" }, /^MEMORY_MAX_SESSIONS must be a positive integer/],
      [{ MEMORY_MAX_SESSIONS: "1e3" }, /^MEMORY_MAX_SESSIONS must be a positive integer, got "1e3"$/],
      [{ MEMORY_MAX_SESSIONS: "0x10" }, /^MEMORY_MAX_SESSIONS must be a positive integer/],
      [{ MEMORY_MAX_SESSION_EVENTS: "99999999999999999999" }, /^MEMORY_MAX_SESSION_EVENTS must be a positive integer, got "99999999999999999999"$/],
      [{ MEMORY_CONTEXT_LIMIT: "two" }, /^MEMORY_CONTEXT_LIMIT must be a non-negative integer, got "two"$/],
      [{ MEMORY_RETENTION: "5 weeks" }, /^MEMORY_RETENTION must be a positive duration like "3600", "30m", "12h" or "7d", got "5 weeks"$/],
      [{ MEMORY_RETENTION: "x7d" }, /^MEMORY_RETENTION must be a positive duration/],
      [{ MEMORY_RETENTION: "7dx" }, /^MEMORY_RETENTION must be a positive duration/],
      [{ MEMORY_RETENTION: "0ms" }, /^MEMORY_RETENTION must be a positive duration/],
      [{ MEMORY_RETENTION: `1${"0".repeat(400)}` }, /^MEMORY_RETENTION must be a positive duration/],
      [{ MEMORY_POSTGRES_SCHEMA: "1agents" }, /^MEMORY_POSTGRES_SCHEMA must be a plain SQL identifier \(letters, digits, _\), got "1agents"$/],
      [{ MEMORY_POSTGRES_SCHEMA: `a${"b".repeat(63)}` }, /^MEMORY_POSTGRES_SCHEMA must be a plain SQL identifier/],
      [{ MEMORY_POSTGRES_SCHEMA: "agents x" }, /^MEMORY_POSTGRES_SCHEMA must be a plain SQL identifier/],
      [{ MEMORY_TYPE: "Pglite" }, /^MEMORY_TYPE must be one of local, memory, embedded, sqlite, postgres \(the PGlite store was replaced/],
    ];
    for (const [env, message] of cases) {
      assert.throws(
        () => memoryConfigFromEnv(env),
        (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "configuration" && message.test(error.message),
        JSON.stringify(env),
      );
    }
  });

  it("the disabled store hands back the session asked for, or a new one, with its metadata and no events", async () => {
    const store = await openMemoryStore({ enabled: false, type: "postgres" });
    assert.equal(store.kind, "disabled");
    const named = await store.createSession("s", { user: "ada" });
    assert.deepEqual([named.session_id, named.metadata, named.event_count, named.last_seq], ["s", { user: "ada" }, 0, 0]);
    assert.equal(named.created_at, named.updated_at);
    assert.ok(Math.abs(Date.parse(named.created_at) - Date.now()) < 60_000);
    const fresh = await store.createSession();
    assert.match(fresh.session_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual(fresh.metadata, {});
  });

  it("MEMORY_ENABLED=false records nothing and gives every run an empty history", async () => {
    // Disabled wins over an incomplete store configuration.
    const { config, store, memory } = await memoryFromEnv({ MEMORY_ENABLED: "false", MEMORY_TYPE: "postgres" });
    assert.equal(config.enabled, false);
    assert.equal(store.kind, "disabled");
    const model = new ScriptedModel(["answer"]);
    const agent = new Agent({ model, memory });
    await agent.run("first", { sessionId: "s" });
    await agent.run("second", { sessionId: "s" });
    assert.deepEqual(model.requests[1].messages, [{ role: "user", content: "second" }]);
    assert.deepEqual(await store.events("s"), []);
    assert.deepEqual(await store.listSessions(), []);
    assert.deepEqual(await store.latestEvents(), []);
    assert.equal(await store.getSession("s"), undefined);
    assert.deepEqual(await store.append("s", [{ event_type: "x" }]), []);
    assert.equal(await store.deleteSession("s"), false);
    assert.equal((await store.createSession("s")).session_id, "s");
    await store.close();
  });

  it("opens the in-memory and postgres stores it names, with the limits and context limit", async () => {
    const local = await memoryFromEnv({ MEMORY_TYPE: "local", MEMORY_CONTEXT_LIMIT: "2", MEMORY_MAX_SESSION_EVENTS: "3" });
    assert.equal(local.store.kind, "memory");
    assert.equal(local.memory.contextLimit, 2);
    await local.store.append("s", [{ event_type: "a" }, { event_type: "b" }, { event_type: "c" }, { event_type: "d" }]);
    assert.equal((await local.store.events("s")).length, 3);
    await local.store.close();

    const shared = await memoryFromEnv({ MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: uniqueSchema("config") });
    try {
      assert.equal(shared.store.kind, "postgres");
      const model = new ScriptedModel(["stored"]);
      await new Agent({ model, memory: shared.memory }).run("remember", { sessionId: "pg" });
      assert.deepEqual(
        (await shared.store.events("pg")).map((event) => event.event_type),
        ["run_started", "user_message", "agent_response", "run_ended"],
      );
    } finally {
      await shared.store.close();
    }
    await assert.rejects(openMemoryStore({ type: "postgres" }), /needs postgresUrl/);
    await assert.rejects(openMemoryStore({ type: "nope" as never }), /unknown store type "nope"/);
  });
});
