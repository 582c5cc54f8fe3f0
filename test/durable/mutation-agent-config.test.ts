// What `durableAgent` and `launch()` promise before anything runs (src/durable/agent.ts, launch.ts):
// configuration refusals with clear errors, the agent a durable agent runs (its model, tools, toolsets
// and memory), and a launch that cannot reach its database leaving nothing half-launched. No DBOS
// launch succeeds here (a closed loopback port): fast, and each test may run again in one process
// (its agents' names its own).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { durableAgent } from "../../src/durable/index.js";
import { Agent, defineTool, ScriptedModel } from "../../src/index.js";
import type { SessionMemory } from "../../src/loop/types.js";
import { InMemoryStore, sessionMemory } from "../../src/memory/index.js";

const unique = (name: string) => `${name}-${randomUUID().slice(0, 8)}`;
const model = () => new ScriptedModel(["hi"]);
const closed = "postgres://127.0.0.1:1/none";

test("durableAgent refuses what it cannot use, naming the problem and the value", () => {
  for (const notAgent of [{}, null, { name: "fake", run: () => undefined }]) {
    assert.throws(() => durableAgent(notAgent as never, { databaseUrl: closed }), (error: unknown) => error instanceof TypeError && error.message === "durableAgent: the first argument must be an Agent");
  }
  const agent = () => new Agent({ name: unique("refused"), model: model() });
  const refusals: Array<[unknown, string]> = [
    [undefined, "undefined"],
    [{}, "undefined"],
    [{ databaseUrl: 5432 }, "5432"],
    [{ databaseUrl: "" }, '""'],
    [{ databaseUrl: "mysql://h/d" }, '"mysql://h/d"'],
    [{ databaseUrl: "xpostgres://h/d" }, '"xpostgres://h/d"'],
    [{ databaseUrl: "postgres:/h/d" }, '"postgres:/h/d"'],
    [{ databaseUrl: "postgresq://h/d" }, '"postgresq://h/d"'],
    // Not a string, though it reads as one.
    [{ databaseUrl: new URL("postgres://h/d") }, '"postgres://h/d"'],
  ];
  for (const [options, shown] of refusals) {
    assert.throws(
      () => durableAgent(agent(), options as never),
      (error: unknown) => error instanceof TypeError && error.message === `durableAgent: databaseUrl must be a postgres:// URL, got ${shown}`,
      String(shown),
    );
  }
  for (const databaseUrl of ["postgres://h/d", "postgresql://h/d"]) assert.equal(typeof durableAgent(agent(), { databaseUrl }).run, "function", databaseUrl);
});

test("a second durable agent of one name in a process is refused, naming it (its runs' workflow is registered once); another name is not", () => {
  const name = unique("twice");
  const first = durableAgent(new Agent({ name, model: model() }), { databaseUrl: closed });
  assert.throws(
    () => durableAgent(new Agent({ name, model: model() }), { databaseUrl: closed }),
    (error: unknown) => error instanceof Error && error.message === `durableAgent: an agent named "${name}" is durable already in this process: give each durable agent its own name`,
  );
  assert.equal(first.agent.name, name);
  assert.equal(durableAgent(new Agent({ name: `${name}-2`, model: model() }), { databaseUrl: closed }).agent.name, `${name}-2`);
});

test("the durable agent's loop is the agent's: its name, model, tools, a toolset's tools and memory (outside a workflow, each is itself)", async () => {
  const lookup = defineTool({ name: "lookup", description: "looks up", parameters: { type: "object" }, execute: () => "found it" });
  const toolset = {
    name: "catalog",
    toolsVersion: 1,
    loadedTools: [defineTool({ name: "price", description: "prices", parameters: { type: "object" }, execute: () => "12 EUR" })],
  };
  const loads: string[] = [];
  const memory: SessionMemory = {
    loadHistory: async (sessionId) => {
      loads.push(sessionId);
      return [{ role: "user", content: `earlier in ${sessionId}` }];
    },
    onEvent: () => undefined,
  };
  const calls = JSON.stringify({ tool_calls: [{ id: "l1", name: "lookup", arguments: {} }, { id: "p1", name: "price", arguments: {} }] });
  const agent = new Agent({ name: unique("wrapped"), model: new ScriptedModel([calls, "Priced."], { modelId: "script-7" }), tools: [lookup, toolset], memory });
  const durable = durableAgent(agent, { databaseUrl: closed });
  assert.equal(durable.agent.name, agent.name);
  assert.deepEqual([durable.agent.model.provider, durable.agent.model.modelId], ["scripted", "script-7"]);
  const plain = await agent.run("price it", { sessionId: "s1" });
  const inner = await durable.agent.run("price it", { sessionId: "s2" });
  const outcomes = (result: typeof plain) => result.newMessages.flatMap((message) => (message.role === "tool" ? [[message.toolName, message.content, message.isError === true]] : []));
  assert.deepEqual(outcomes(plain), [
    ["lookup", "found it", false],
    ["price", "12 EUR", false],
  ]);
  assert.deepEqual(outcomes(inner), outcomes(plain));
  assert.equal(inner.text, "Priced.");
  assert.deepEqual(loads, ["s1", "s2"], "the durable agent's loop loads its history from the agent's memory");
  const forgetful = durableAgent(new Agent({ name: unique("no-memory"), model: model() }), { databaseUrl: closed });
  assert.equal((await forgetful.agent.run("hello", { sessionId: "s3" })).text, "hi", "no memory: a session id alone is no error");
});

test("a memory that tells no store of its own is the durable agent's as it is; a sessionMemory's store is the one its replays skip on", async () => {
  const onEvent = () => undefined;
  const loadHistory = async () => [];
  const appendOnly = { append: async () => [] };
  const ownAppend = appendOnly.append;
  const odd = [undefined, "elsewhere", appendOnly, { events: async () => [] }];
  for (const store of odd) {
    const durable = durableAgent(new Agent({ name: unique("odd-store"), model: model(), memory: { loadHistory, onEvent, store } as SessionMemory }), { databaseUrl: closed });
    assert.equal((await durable.agent.run("hello", { sessionId: "s4" })).text, "hi", String(store));
    assert.equal((durable.agent.config.memory as { store?: unknown }).store, undefined, "not a store: none is read");
    assert.equal(durable.agent.config.memory?.ordersItself, undefined, "a memory that does not order its writes itself is waited for");
  }
  assert.equal(appendOnly.append, ownAppend, "a store without events is not wrapped");
  const store = new InMemoryStore();
  const memory = sessionMemory(store);
  const durable = durableAgent(new Agent({ name: unique("session-store"), model: model(), memory }), { databaseUrl: closed });
  assert.equal((durable.agent.config.memory as { store?: unknown }).store, store);
  assert.equal(durable.agent.config.memory?.ordersItself, true);
  // Outside a run's replay the store stores what it is given, as it answers.
  assert.equal((await durable.agent.run("hello", { sessionId: "s5" })).text, "hi");
  assert.deepEqual((await store.events("s5")).map((event) => event.event_type), ["run_started", "user_message", "agent_response", "run_ended"]);
  assert.deepEqual(await store.append("s5", []), []);
  // Even an append of no events is the store's to answer: a session id it refuses is refused.
  await assert.rejects(store.append("", []), /memory: a session id must be a non-empty string/);
});

test("a launch that cannot reach its database rejects with the connection's error, and leaves nothing launched: calls still ask for launch(), another database is tried", async () => {
  const first = durableAgent(new Agent({ name: unique("unreachable"), model: model() }), { databaseUrl: closed });
  await assert.rejects(first.launch(), /ECONNREFUSED 127\.0\.0\.1:1\b/);
  await assert.rejects(first.run("hi"), /^Error: durable run: call launch\(\) first$/);
  // Not launched: an agent may still be created, and its launch tries its own database.
  const second = durableAgent(new Agent({ name: unique("unreachable-2"), model: model() }), { databaseUrl: "postgres://127.0.0.1:2/other" });
  await assert.rejects(second.launch(), /ECONNREFUSED 127\.0\.0\.1:2\b/);
  await assert.rejects(first.launch(), /ECONNREFUSED 127\.0\.0\.1:1\b/, "tried again, not the failed launch remembered");
  await second.shutdown();
  await assert.rejects(second.list(), /^Error: durable list: call launch\(\) first$/);
});
