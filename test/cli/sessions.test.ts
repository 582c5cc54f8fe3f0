import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createAgentServer } from "../../src/server/index.js";
import { Readable } from "node:stream";
import { chatCommand } from "../../src/cli/commands/chat.js";
import { eventsCommand, sessionsCommand } from "../../src/cli/commands/sessions.js";
import { openPostgresStore } from "../../src/memory/postgres.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { captured, cleanEnv, runCli } from "./helpers.js";

after(dropSchemas);

/**
 * The store shared by the server and the CLI: a real PostgreSQL (AGENTLOOP_TEST_PG_URL, set by
 * `.ci/run`, or started by scripts/start-postgres.sh), in a schema of its own. The embedded store
 * is checked below and in shared-store.test.ts.
 */
describe("agentloop sessions and events read the store the server writes (PostgreSQL)", () => {
  let memoryEnv: Record<string, string>;
  const serverSession = `served-${randomUUID().slice(0, 8)}`;
  const chatSession = `chatted-${randomUUID().slice(0, 8)}`;

  before(async () => {
    memoryEnv = { MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: uniqueSchema("cli") };
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

  it("chat --session writes to the same store, and continues it", async () => {
    const first = await runCli(["chat", "--session", chatSession, "--mock", '["first reply"]'], cleanEnv(memoryEnv), "remember me\n");
    assert.equal(first.code, 0, first.stderr);
    const second = await runCli(["chat", "--session", chatSession, "--json", "--mock", '["second reply"]'], cleanEnv(memoryEnv), "again\n");
    assert.equal(second.code, 0, second.stderr);
  });

  it("sessions --json lists both sessions", async () => {
    const stdout = captured();
    assert.equal(await sessionsCommand({ json: true }, { stdout, stderr: captured(), env: cleanEnv(memoryEnv) }), 0);
    const body = JSON.parse(stdout.text()) as { sessions: Array<{ session_id: string; event_count: number }>; total: number };
    const ids = body.sessions.map((session) => session.session_id);
    assert.ok(ids.includes(serverSession), `${serverSession} in ${ids}`);
    assert.ok(ids.includes(chatSession));
    assert.equal(body.total, body.sessions.length);
  });

  it("sessions prints a readable table", async () => {
    const stdout = captured();
    assert.equal(await sessionsCommand({}, { stdout, stderr: captured(), env: cleanEnv(memoryEnv) }), 0);
    assert.match(stdout.text(), /^SESSION +EVENTS +UPDATED$/m);
    assert.match(stdout.text(), new RegExp(`^${serverSession} +\\d+ +\\d{4}-\\d\\d-\\d\\d`, "m"));
    assert.doesNotMatch(stdout.text(), /\u001b\[/, "no colours when stdout is not a TTY");
  });

  it("events --json gives the KAOS shape of the server's session", async () => {
    const result = await runCli(["events", serverSession, "--json"], cleanEnv(memoryEnv));
    assert.equal(result.code, 0, result.stderr);
    const body = JSON.parse(result.stdout) as { session_id: string; events: Array<Record<string, unknown>>; total: number };
    assert.equal(body.session_id, serverSession);
    const types = body.events.map((event) => event.event_type).filter((type) => !String(type).startsWith("run_"));
    assert.deepEqual(types, ["user_message", "agent_response"]);
    assert.deepEqual(Object.keys(body.events[0]).sort(), ["content", "event_id", "event_type", "metadata", "timestamp"]);
    assert.equal(body.total, body.events.length);
  });

  it("events prints one readable line per event, two runs for the continued chat", async () => {
    const stdout = captured();
    assert.equal(await eventsCommand(chatSession, {}, { stdout, stderr: captured(), env: cleanEnv(memoryEnv) }), 0);
    assert.match(stdout.text(), /^\d\d:\d\d:\d\d {2}user_message +remember me$/m);
    assert.match(stdout.text(), /^\d\d:\d\d:\d\d {2}agent_response +second reply$/m);
    assert.equal(stdout.text().match(/user_message/g)?.length, 2);
    assert.doesNotMatch(stdout.text(), /\u001b\[/, "no colours when stdout is not a TTY");
  });

  it("events answers 1 for an unknown session, naming it", async () => {
    const stderr = captured();
    assert.equal(await eventsCommand("no-such-session", {}, { stdout: captured(), stderr, env: cleanEnv(memoryEnv) }), 1);
    assert.match(stderr.text(), /session "no-such-session" not found/);
  });

  it("chat waits while another process (a server replica) holds the session", async () => {
    const holder = await openPostgresStore({ url: postgresUrl(), schema: memoryEnv.MEMORY_POSTGRES_SCHEMA });
    try {
      const release = await holder.lockSession("held");
      let finished = false;
      const chat = chatCommand(
        { session: "held", mock: '["after the wait"]' },
        { stdin: Readable.from(["hello\n"]), stdout: captured(), stderr: captured(), env: cleanEnv(memoryEnv) },
      ).then((code) => {
        finished = true;
        return code;
      });
      // Several lock polls later, the chat has not started its run.
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(finished, false);
      assert.deepEqual(await holder.events("held"), []);
      await release();
      assert.equal(await chat, 0);
      assert.deepEqual(
        (await holder.events("held", { types: ["user_message", "agent_response"] })).map((event) => event.content),
        ["hello", "after the wait"],
      );
    } finally {
      await holder.close();
    }
  });

  it("sessions fails clearly when memory is disabled", async () => {
    await assert.rejects(sessionsCommand({}, { stdout: captured(), stderr: captured(), env: cleanEnv({ MEMORY_ENABLED: "false" }) }), /MEMORY_ENABLED is false/);
  });
});

describe("the embedded store (the default) is shared the same way", () => {
  it("events --json reads what a running server wrote, while it runs", async () => {
    const directory = await mkdtemp(join(tmpdir(), "agentloop-cli-embedded-"));
    try {
      const memoryEnv = { MEMORY_TYPE: "embedded", MEMORY_PATH: join(directory, "memory.db") };
      const server = await createAgentServer({ env: { DEBUG_MOCK_RESPONSES: '["embedded answer"]', ...memoryEnv }, log: () => {} });
      try {
        const url = await server.listen(0, "127.0.0.1");
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ session_id: "embedded-1", messages: [{ role: "user", content: "hello embedded" }] }),
        });
        assert.equal(response.status, 200);
        const result = await runCli(["events", "embedded-1", "--json"], cleanEnv(memoryEnv));
        assert.equal(result.code, 0, result.stderr);
        const body = JSON.parse(result.stdout) as { events: Array<{ event_type: string; content: unknown }> };
        assert.deepEqual(
          body.events.filter((event) => !event.event_type.startsWith("run_")).map((event) => event.content),
          ["hello embedded", "embedded answer"],
        );
      } finally {
        await server.close();
      }
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
