import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { createAgentServer } from "../../src/server/index.js";
import { cleanEnv, runCli } from "./helpers.js";

const postgresUrl = process.env.AGENTLOOP_TEST_PG_URL;

/**
 * The store shared by the server and the CLI: the CI's PostgreSQL (`.ci/run` sets
 * AGENTLOOP_TEST_PG_URL), in a schema of its own. The embedded store is checked below with one
 * round trip, as each process opening it takes seconds.
 */
describe("agentloop sessions and events read the store the server writes (PostgreSQL)", { skip: postgresUrl ? false : "set AGENTLOOP_TEST_PG_URL (the CI does)" }, () => {
  const schema = `cli_${randomUUID().replace(/-/g, "").slice(0, 12)}`;
  let directory: string;
  let memoryEnv: Record<string, string>;
  const serverSession = `served-${randomUUID().slice(0, 8)}`;
  const chatSession = `chatted-${randomUUID().slice(0, 8)}`;

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), "agentloop-cli-store-"));
    memoryEnv = { MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl!, MEMORY_POSTGRES_SCHEMA: schema };
    const server = await createAgentServer({ env: { AGENT_NAME: "store-writer", DEBUG_MOCK_RESPONSES: '["served answer"]', ...memoryEnv }, log: () => {} });
    const url = await server.listen(0, "127.0.0.1");
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ session_id: serverSession, messages: [{ role: "user", content: "hello server" }] }),
    });
    assert.equal(response.status, 200);
    await server.close();
  });

  after(async () => {
    await rm(directory, { recursive: true, force: true });
    if (postgresUrl) {
      const client = new pg.Client({ connectionString: postgresUrl });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  });

  it("chat --session writes to the same store, and continues it", async () => {
    const first = await runCli(["chat", "--session", chatSession, "--mock", '["first reply"]'], cleanEnv(memoryEnv), "remember me\n");
    assert.equal(first.code, 0, first.stderr);
    const second = await runCli(["chat", "--session", chatSession, "--json", "--mock", '["second reply"]'], cleanEnv(memoryEnv), "again\n");
    assert.equal(second.code, 0, second.stderr);
  });

  it("sessions --json lists both sessions", async () => {
    const result = await runCli(["sessions", "--json"], cleanEnv(memoryEnv));
    assert.equal(result.code, 0, result.stderr);
    const body = JSON.parse(result.stdout) as { sessions: Array<{ session_id: string; event_count: number }>; total: number };
    const ids = body.sessions.map((session) => session.session_id);
    assert.ok(ids.includes(serverSession), `${serverSession} in ${ids}`);
    assert.ok(ids.includes(chatSession));
    assert.equal(body.total, body.sessions.length);
  });

  it("sessions prints a readable table", async () => {
    const result = await runCli(["sessions"], cleanEnv(memoryEnv));
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^SESSION +EVENTS +UPDATED$/m);
    assert.match(result.stdout, new RegExp(`^${serverSession} +\\d+ +\\d{4}-\\d\\d-\\d\\d`, "m"));
  });

  it("events --json gives the KAOS shape of the server's session", async () => {
    const result = await runCli(["events", serverSession, "--json"], cleanEnv(memoryEnv));
    assert.equal(result.code, 0, result.stderr);
    const body = JSON.parse(result.stdout) as { session_id: string; events: Array<Record<string, unknown>>; total: number };
    assert.equal(body.session_id, serverSession);
    const types = body.events.map((event) => event.event_type).filter((type) => !String(type).startsWith("run_"));
    assert.deepEqual(types, ["user_message", "agent_response"]);
    assert.deepEqual(Object.keys(body.events[0]).sort(), ["content", "event_id", "event_type", "metadata", "timestamp"]);
  });

  it("events prints one readable line per event, two runs for the continued chat", async () => {
    const result = await runCli(["events", chatSession], cleanEnv(memoryEnv));
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^\d\d:\d\d:\d\d {2}user_message +remember me$/m);
    assert.match(result.stdout, /^\d\d:\d\d:\d\d {2}agent_response +second reply$/m);
    assert.equal(result.stdout.match(/user_message/g)?.length, 2);
    assert.doesNotMatch(result.stdout, /\u001b\[/, "no colours when stdout is not a TTY");
  });

  it("events exits 1 for an unknown session, naming it", async () => {
    const result = await runCli(["events", "no-such-session"], cleanEnv(memoryEnv));
    assert.equal(result.code, 1);
    assert.match(result.stderr, /session "no-such-session" not found/);
  });

  it("sessions fails clearly when memory is disabled", async () => {
    const result = await runCli(["sessions"], cleanEnv({ MEMORY_ENABLED: "false" }));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /MEMORY_ENABLED is false/);
  });
});

describe("the embedded store (the default) is shared the same way", () => {
  it("events --json reads what the server wrote, after the server shut down", async () => {
    const directory = await mkdtemp(join(tmpdir(), "agentloop-cli-embedded-"));
    try {
      const memoryEnv = { MEMORY_TYPE: "embedded", MEMORY_PATH: join(directory, "memory") };
      const server = await createAgentServer({ env: { DEBUG_MOCK_RESPONSES: '["embedded answer"]', ...memoryEnv }, log: () => {} });
      const url = await server.listen(0, "127.0.0.1");
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ session_id: "embedded-1", messages: [{ role: "user", content: "hello embedded" }] }),
      });
      assert.equal(response.status, 200);
      // An embedded store is opened by one process at a time.
      await server.close();
      const result = await runCli(["events", "embedded-1", "--json"], cleanEnv(memoryEnv));
      assert.equal(result.code, 0, result.stderr);
      const body = JSON.parse(result.stdout) as { events: Array<{ event_type: string; content: unknown }> };
      assert.deepEqual(
        body.events.filter((event) => !event.event_type.startsWith("run_")).map((event) => event.content),
        ["hello embedded", "embedded answer"],
      );
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
