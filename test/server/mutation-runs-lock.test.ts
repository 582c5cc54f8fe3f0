// src/server/runs.ts's session lock across replicas, as a client sees it: a request naming a session
// another replica is answering in waits for that run to end before its own run starts, so its model
// sees the other run's answer. Two servers on one PostgreSQL schema; the first one's model answers
// only when told to. A request whose client leaves while it waits for the lock calls its attempt off, and so does one
// whose turn comes after the shutdown began, and one whose lock is granted just after its client left starts no run.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import type { Message } from "../../src/messages.js";
import type { Model } from "../../src/model/model.js";
import { openPostgresStore } from "../../src/memory/postgres.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { postJson, startTestServer } from "./helpers.js";

after(dropSchemas);

/** A model answering `text`; each call's messages are recorded, `called` resolves at the first, and it answers once `open` resolves. */
function gatedModel(text: string, open: Promise<void> = Promise.resolve()) {
  const seen: Message[][] = [];
  let markCalled!: () => void;
  const called = new Promise<void>((resolve) => {
    markCalled = resolve;
  });
  const model: Model = {
    provider: "test",
    modelId: "gated",
    async *stream(request) {
      seen.push(request.messages);
      markCalled();
      await open;
      yield { type: "text-start", id: "t" };
      yield { type: "text-delta", id: "t", delta: text };
      yield { type: "text-end", id: "t" };
      yield { type: "finish", reason: { unified: "stop", raw: "stop" } };
    },
  };
  return { model, seen, called };
}

describe("the session lock on PostgreSQL", () => {
  it("a session another replica is answering in: a request waits for that run to end; its model is called after, with the other run's answer in the history", async () => {
    const schema = uniqueSchema("lockturn");
    let openFirst!: () => void;
    const first = gatedModel("the first answer", new Promise((resolve) => (openFirst = resolve)));
    const second = gatedModel("the second answer");
    const store = await openPostgresStore({ url: postgresUrl(), schema });
    let attempted!: () => void;
    const lockAttempted = new Promise<void>((resolve) => (attempted = resolve));
    const lockSession = store.lockSession!.bind(store);
    store.lockSession = (sessionId, signal) => {
      attempted();
      return lockSession(sessionId, signal);
    };
    const replicaA = await startTestServer({ AGENT_NAME: "turns", MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: schema }, { build: { model: first.model } });
    const replicaB = await startTestServer({ AGENT_NAME: "turns" }, { memory: store, build: { model: second.model } });
    try {
      const ask = (url: string, content: string) => postJson(`${url}/v1/chat/completions`, { session_id: "shared", messages: [{ role: "user", content }] });
      const answerA = ask(replicaA.url, "one");
      await first.called;
      const answerB = ask(replicaB.url, "two");
      await lockAttempted;
      // The lock is the other replica's: the run waits (a model called now would miss the first answer).
      const early = await Promise.race([second.called.then(() => "called"), new Promise((resolve) => setTimeout(() => resolve("waiting"), 300))]);
      assert.equal(early, "waiting");
      openFirst();
      assert.equal((await answerA).status, 200);
      const b = await answerB;
      assert.equal(b.status, 200);
      assert.equal(((await b.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content, "the second answer");
      const text = (message: Message) => (typeof message.content === "string" ? message.content : message.content.map((part) => ("text" in part ? part.text : "")).join(""));
      assert.deepEqual(
        second.seen[0]!.filter((message) => message.role !== "system").map((message) => [message.role, text(message)]),
        [
          ["user", "one"],
          ["assistant", "the first answer"],
          ["user", "two"],
        ],
      );
    } finally {
      await Promise.all([replicaA.server.close({ graceMs: 0 }), replicaB.server.close({ graceMs: 0 })]);
      await store.close();
    }
  });

  it("a client leaving while its request waits for the lock: the attempt is called off (its signal aborted), no run is recorded for it", async () => {
    const schema = uniqueSchema("lockleave");
    let openFirst!: () => void;
    const first = gatedModel("the first answer", new Promise((resolve) => (openFirst = resolve)));
    const second = gatedModel("the third answer");
    const store = await openPostgresStore({ url: postgresUrl(), schema });
    const signals: Array<AbortSignal | undefined> = [];
    let attempted!: () => void;
    const lockAttempted = new Promise<void>((resolve) => (attempted = resolve));
    const lockSession = store.lockSession!.bind(store);
    store.lockSession = (sessionId, signal) => {
      signals.push(signal);
      attempted();
      return lockSession(sessionId, signal);
    };
    const replicaA = await startTestServer({ AGENT_NAME: "leave", MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: schema }, { build: { model: first.model } });
    const replicaB = await startTestServer({ AGENT_NAME: "leave" }, { memory: store, build: { model: second.model } });
    try {
      const ask = (url: string, content: string, signal?: AbortSignal) => postJson(`${url}/v1/chat/completions`, { session_id: "left", messages: [{ role: "user", content }] }, {}, signal);
      const answerA = ask(replicaA.url, "one");
      await first.called;
      const leaving = new AbortController();
      const gone = ask(replicaB.url, "two", leaving.signal).catch((error: unknown) => error);
      await lockAttempted;
      const signal = signals[0];
      assert.ok(signal, "the lock attempt gets the request's signal");
      const calledOff = new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      leaving.abort();
      await calledOff;
      assert.ok((await gone) instanceof Error);
      openFirst();
      assert.equal((await answerA).status, 200);
      assert.equal((await ask(replicaB.url, "three")).status, 200);
      const ended = (await store.events("left")).filter((event) => event.event_type === "run_ended").map((event) => (event.content as { state: string }).state);
      assert.deepEqual(ended, ["COMPLETED", "COMPLETED"]);
      assert.equal(second.seen.length, 1);
    } finally {
      await Promise.all([replicaA.server.close({ graceMs: 0 }), replicaB.server.close({ graceMs: 0 })]);
      await store.close();
    }
  });

  it("a request queued behind a run when the shutdown comes: its lock attempt is called off at once, it records no run", async () => {
    const schema = uniqueSchema("lockshut");
    const held = gatedModel("never", new Promise(() => {}));
    const store = await openPostgresStore({ url: postgresUrl(), schema });
    const test = await startTestServer({ AGENT_NAME: "shut" }, { memory: store, build: { model: held.model } });
    try {
      const ask = (content: string) =>
        test.server.fetch(new Request("http://agent/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: "queued", messages: [{ role: "user", content }] }) }));
      const running = ask("one");
      await held.called;
      const queued = ask("two");
      await test.server.close({ graceMs: 0 });
      await Promise.all([running, queued]);
      const ended = (await store.events("queued")).filter((event) => event.event_type === "run_ended").map((event) => (event.content as { state: string }).state);
      assert.deepEqual(ended, ["ABORTED"]);
      assert.equal(held.seen.length, 1);
    } finally {
      await test.server.close({ graceMs: 0 });
      await store.close();
    }
  });

  it("a lock granted just as its client left (the call-off lost the race): no run starts and none is recorded; the lock goes back", async () => {
    const schema = uniqueSchema("lockrace");
    const model = gatedModel("the answer");
    const store = await openPostgresStore({ url: postgresUrl(), schema });
    let attempted!: (signal: AbortSignal | undefined) => void;
    const lockAttempted = new Promise<AbortSignal | undefined>((resolve) => (attempted = resolve));
    const lockSession = store.lockSession!.bind(store);
    let raced = false;
    store.lockSession = (sessionId, signal) => {
      if (raced) return lockSession(sessionId, signal);
      raced = true;
      attempted(signal);
      // The store grants the lock after the abort instead of calling the attempt off.
      return new Promise((resolve, reject) => signal?.addEventListener("abort", () => lockSession(sessionId).then(resolve, reject), { once: true }));
    };
    const test = await startTestServer({ AGENT_NAME: "race" }, { memory: store, build: { model: model.model } });
    try {
      const leaving = new AbortController();
      const gone = postJson(`${test.url}/v1/chat/completions`, { session_id: "raced", messages: [{ role: "user", content: "one" }] }, {}, leaving.signal).catch((error: unknown) => error);
      assert.ok(await lockAttempted, "the lock attempt gets the request's signal");
      leaving.abort();
      assert.ok((await gone) instanceof Error);
      const next = await postJson(`${test.url}/v1/chat/completions`, { session_id: "raced", messages: [{ role: "user", content: "two" }] });
      assert.equal(next.status, 200, "the lock granted to the request nobody waits for went back");
      const ended = (await store.events("raced")).filter((event) => event.event_type === "run_ended").map((event) => (event.content as { state: string }).state);
      assert.deepEqual(ended, ["COMPLETED"]);
      assert.equal(model.seen.length, 1);
      assert.equal(model.seen[0]?.at(-1)?.content, "two");
    } finally {
      await test.server.close({ graceMs: 0 });
      await store.close();
    }
  });
});
