import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { Agent, ScriptedModel } from "../../src/index.js";
import { DEFAULT_MEMORY_CONFIG, memoryConfigFromEnv, memoryFromEnv, openMemoryStore } from "../../src/memory/index.js";
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
