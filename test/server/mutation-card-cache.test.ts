// The agent card's version and caching edges a client sees (src/server/agent-card.ts,
// routes/agent-card.ts), and who closes the memory store (src/server/memory.ts).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { ScriptedModel } from "../../src/index.js";
import { createAgentServer } from "../../src/server/index.js";
import { DisabledMemoryStore } from "../../src/memory/index.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { startTestServer, type TestServer } from "./helpers.js";

describe("the A2A card's version and validators", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "cached" }, { build: { model: new ScriptedModel(["ok"]) } });
  });
  after(() => test.close());

  it("the version named in the query parameter is trimmed; one of spaces only names none", async () => {
    const card = async (path: string, version: string) => (await (await fetch(`${test.url}${path}?A2A-Version=${encodeURIComponent(version)}`)).json()) as { protocolVersion?: string };
    assert.equal((await card("/.well-known/agent-card.json", " 0.3 ")).protocolVersion, "0.3.0");
    assert.equal((await card("/.well-known/agent-card.json", "  ")).protocolVersion, undefined);
    assert.equal((await card("/.well-known/agent.json", "  ")).protocolVersion, "0.3.0");
    assert.equal((await card("/.well-known/agent.json", " 1.0")).protocolVersion, undefined);
  });

  it("If-None-Match: `*` anywhere in a list matches; a W/ inside the quotes is part of the tag", async () => {
    const url = `${test.url}/.well-known/agent-card.json`;
    const first = await fetch(url);
    await first.text();
    const etag = first.headers.get("etag")!;
    const opaque = etag.slice(2);
    const status = async (ifNoneMatch: string) => {
      const response = await fetch(url, { headers: { "if-none-match": ifNoneMatch } });
      await response.text();
      return response.status;
    };
    assert.equal(await status('"a", *'), 304);
    assert.equal(await status(`"W/${opaque.slice(1)}`), 200);
    assert.equal(await status(etag), 304);
  });
});

describe("the A2A card's Last-Modified", () => {
  it("is the time the card was first served, and moves later when the card changes within that second", async () => {
    const server = await createAgentServer({ env: { AGENT_NAME: "moving", MEMORY_TYPE: "memory" }, build: { model: new ScriptedModel(["ok"]) }, log: () => undefined });
    try {
      // Before it listens the card names the configured port; once it listens, its own address.
      const before = await server.fetch(new Request("http://agent.test/.well-known/agent-card.json"));
      const firstCard = (await before.json()) as { supportedInterfaces: Array<{ url: string }> };
      const first = before.headers.get("last-modified")!;
      assert.ok(Math.abs(Date.parse(first) - Date.now()) < 5000, `${first} is now`);
      const url = await server.listen(0, "127.0.0.1");
      const revalidated = await fetch(`${url}/.well-known/agent-card.json`, { headers: { "if-modified-since": first } });
      const changed = (await revalidated.json()) as { supportedInterfaces: Array<{ url: string }> };
      assert.notEqual(changed.supportedInterfaces[0].url, firstCard.supportedInterfaces[0].url);
      assert.equal(revalidated.status, 200, "a cache holding the first card gets the new one");
      const second = revalidated.headers.get("last-modified")!;
      assert.ok(Date.parse(second) > Date.parse(first), `${second} after ${first}`);
      assert.ok(Date.parse(second) - Date.now() < 5000, `${second} is about now`);
    } finally {
      await server.close({ graceMs: 0 });
    }
  });
});

describe("who closes the memory store", () => {
  it("a disabled store given by the caller is left open for the caller to close", async () => {
    let closed = 0;
    class CountingStore extends DisabledMemoryStore {
      override async close(): Promise<void> {
        closed++;
      }
    }
    const server = await createAgentServer({ env: { AGENT_NAME: "lent" }, build: { model: new ScriptedModel(["ok"]) }, memory: new CountingStore(), log: () => undefined });
    await server.close({ graceMs: 0 });
    assert.equal(closed, 0);
  });

  it("the PostgreSQL store the server opened from MEMORY_* is closed with it: none of its connections is left", async () => {
    const schema = uniqueSchema("owned");
    const observer = new pg.Client({ connectionString: postgresUrl() });
    await observer.connect();
    // The store's connections are the ones whose last statement named its schema.
    const connections = async () =>
      Number((await observer.query("SELECT count(*) AS n FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND position($1 in query) > 0", [`"${schema}".`])).rows[0].n);
    try {
      const server = await createAgentServer({
        env: { AGENT_NAME: "owner", MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: schema },
        build: { model: new ScriptedModel(["ok"]) },
        log: () => undefined,
      });
      const answer = await server.fetch(
        new Request("http://agent.test/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ session_id: "s", messages: [{ role: "user", content: "hi" }] }) }),
      );
      assert.equal(answer.status, 200);
      await answer.text();
      assert.ok((await connections()) > 0, "the store is connected");
      await server.close({ graceMs: 0 });
      // A backend leaves pg_stat_activity a moment after its client said goodbye.
      const deadline = Date.now() + 5000;
      while ((await connections()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(await connections(), 0);
    } finally {
      await observer.end();
      await dropSchemas();
    }
  });
});
