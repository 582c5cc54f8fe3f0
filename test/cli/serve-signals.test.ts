// Issue 12, failure 4: a second SIGTERM during the drain aborts what is left cleanly (run_ended
// ABORTED stored, an error chunk and [DONE] for the stream) and exits non-zero. A real `agentloop serve`.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, it } from "node:test";
import { openPostgresStore } from "../../src/memory/postgres.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { cleanEnv, spawnCli } from "./helpers.js";

/** A KAOS peer that never answers a delegated task (until closed); `received` settles when one arrives. */
async function stuckPeer(): Promise<{ url: string; received: Promise<void>; close(): Promise<void> }> {
  let markReceived!: () => void;
  const received = new Promise<void>((resolve) => {
    markReceived = resolve;
  });
  const server: Server = createServer(async (request, response) => {
    if (request.url?.startsWith("/.well-known/")) {
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ name: "stuck", description: "never answers", url: "http://x", version: "1" }));
      return;
    }
    for await (const _chunk of request);
    markReceived();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

after(dropSchemas);

describe("agentloop serve: a second SIGTERM during the drain", () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal} twice: aborts the running stream with an error chunk and [DONE], stores run_ended ABORTED, exits non-zero`, async () => {
      const peer = await stuckPeer();
      const schema = uniqueSchema("signals");
      const cli = spawnCli(
        ["serve", "--port", "0", "--host", "127.0.0.1", "--json", "--grace-ms", "60000"],
        cleanEnv({
          AGENT_NAME: "twice",
          MEMORY_TYPE: "postgres",
          MEMORY_POSTGRES_URL: postgresUrl(),
          MEMORY_POSTGRES_SCHEMA: schema,
          AGENT_SUB_AGENTS: `stuck:${peer.url}`,
          DEBUG_MOCK_RESPONSES: JSON.stringify([JSON.stringify({ tool_calls: [{ id: "c1", name: "delegate_to_stuck", arguments: { task: "work" } }] }), "never"]),
        }),
      );
      try {
        const [, url] = (await cli.waitFor(/"event":"listening".*"url":"([^"]+)"/)) as RegExpMatchArray;
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ messages: [{ role: "user", content: "go" }], stream: true, session_id: "twice" }),
        });
        assert.equal(response.status, 200);
        const text = response.text();
        await peer.received;
        cli.child.kill(signal);
        await cli.waitFor(/shutting down: waiting up to 60000 ms for 1 request/, "stderr");
        cli.child.kill(signal);
        const body = await text;
        assert.match(body, /data: \{"error":\{"message":"[^"]*shutting down[^"]*","type":"server_error","param":null,"code":"aborted"\}\}\n\ndata: \[DONE\]\n\n$/);
        const { code } = await cli.exited;
        assert.equal(code, signal === "SIGTERM" ? 143 : 130);
        assert.match(cli.stderr(), new RegExp(`${signal} received again: aborting the runs still going`));
        assert.match(cli.stderr(), /session twice ABORTED/);
        const store = await openPostgresStore({ url: postgresUrl(), schema });
        try {
          const events = await store.events("twice");
          assert.deepEqual(
            events.map((event) => event.event_type),
            ["run_started", "user_message", "delegation_request", "delegation_response", "run_ended"],
          );
          assert.equal((events[events.length - 1].content as { state: string }).state, "ABORTED");
        } finally {
          await store.close();
        }
      } finally {
        cli.child.kill("SIGKILL");
        await peer.close();
      }
    });
  }
});
