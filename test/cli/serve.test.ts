import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, it } from "node:test";
import { openPostgresStore } from "../../src/memory/postgres.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { cleanEnv, readyUrl, spawnCli } from "./helpers.js";

/** A KAOS peer agent whose answer the test releases: it holds every delegated task until `release()`. */
async function heldPeer(): Promise<{ url: string; received: Promise<void>; release(): void; close(): Promise<void> }> {
  let markReceived!: () => void;
  const received = new Promise<void>((resolve) => {
    markReceived = resolve;
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const server: Server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    if (request.url?.startsWith("/.well-known/")) {
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify({ name: "slow", description: "holds its answer", url: "http://x", version: "1" }));
      return;
    }
    for await (const _chunk of request);
    markReceived();
    await released;
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify({ choices: [{ index: 0, message: { role: "assistant", content: "slow result" }, finish_reason: "stop" }] }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    release,
    close: () =>
      new Promise((resolve) => {
        release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The concatenated `delta.content` of an SSE chat completion stream. */
function contentOf(text: string): string {
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: {"))
    .map((line) => JSON.parse(line.slice(6)).choices?.[0]?.delta?.content ?? "")
    .join("");
}

/** Starts `agentloop serve` with a slow KAOS peer; its sessions go to a PostgreSQL schema of its own. */
function serveWithSlowPeer(peerUrl: string, graceMs: number) {
  const schema = uniqueSchema("serve");
  const cli = spawnCli(
    ["serve", "--port", "0", "--host", "127.0.0.1", "--json", "--grace-ms", String(graceMs)],
    cleanEnv({
      AGENT_NAME: "drainer",
      MEMORY_TYPE: "postgres",
      MEMORY_POSTGRES_URL: postgresUrl(),
      MEMORY_POSTGRES_SCHEMA: schema,
      AGENT_SUB_AGENTS: `slow:${peerUrl}`,
      DEBUG_MOCK_RESPONSES: JSON.stringify([JSON.stringify({ tool_calls: [{ id: "c1", name: "delegate_to_slow", arguments: { task: "work" } }] }), "All done."]),
    }),
  );
  /** The `drain` session's log as the server left it. */
  const loggedEvents = async () => {
    const store = await openPostgresStore({ url: postgresUrl(), schema });
    try {
      return (await store.events("drain")).map((event) => [event.event_type, event.content]);
    } finally {
      await store.close();
    }
  };
  return Object.assign(cli, { loggedEvents });
}

/** Starts a streamed request; resolves once the headers are in, with the body still arriving. */
async function startStream(url: string): Promise<{ text: Promise<string> }> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "go" }], stream: true, session_id: "drain" }),
  });
  assert.equal(response.status, 200);
  return { text: response.text() };
}

after(dropSchemas);

describe("agentloop serve: graceful shutdown on SIGTERM (a real child process)", () => {
  it("stops accepting, lets a running stream finish, then exits 0", async () => {
    const peer = await heldPeer();
    const cli = serveWithSlowPeer(peer.url, 10_000);
    try {
      const url = await readyUrl(cli);
      const body = await startStream(url);
      await peer.received;
      cli.child.kill("SIGTERM");
      await cli.waitFor(/shutting down: waiting up to 10000 ms for 1 request/, "stderr");
      await assert.rejects(fetch(`${url}/health`), "new connections are refused while draining");
      peer.release();
      const text = await body.text;
      assert.match(contentOf(text), /All done\.$/);
      assert.match(text, /data: \[DONE\]\n\n$/);
      const { code } = await cli.exited;
      assert.equal(code, 0);
      assert.match(cli.stderr(), /run \S+ session drain COMPLETED/);
      assert.match(cli.stderr(), /shut down/);
      // Everything the run did is in the log before the process exited.
      const logged = await cli.loggedEvents();
      assert.deepEqual(logged.at(-2), ["agent_response", "All done."]);
      assert.equal((logged[logged.length - 1][1] as { state: string }).state, "COMPLETED");
    } finally {
      cli.child.kill("SIGKILL");
      await peer.close();
    }
  });

  it("aborts what is still running when the grace period ends, and logs ABORTED", async () => {
    const peer = await heldPeer();
    const cli = serveWithSlowPeer(peer.url, 300);
    try {
      const [, url] = (await cli.waitFor(/"event":"listening".*"url":"([^"]+)"/)) as RegExpMatchArray;
      const body = await startStream(url);
      await peer.received;
      cli.child.kill("SIGTERM");
      const text = await body.text;
      assert.match(text, /data: \[DONE\]\n\n$/);
      assert.doesNotMatch(contentOf(text), /All done/);
      assert.match(text, /data: \{"error":\{"message":"[^"]*shutting down[^"]*","type":"server_error","param":null,"code":"aborted"\}\}/);
      const { code } = await cli.exited;
      assert.equal(code, 0);
      assert.match(cli.stderr(), /grace period over: aborting 1 request/);
      assert.match(cli.stderr(), /session drain ABORTED/);
      const logged = await cli.loggedEvents();
      assert.deepEqual(
        logged.map(([type]) => type),
        ["run_started", "user_message", "delegation_request", "delegation_response", "run_ended"],
      );
      assert.equal((logged[logged.length - 1][1] as { state: string }).state, "ABORTED");
    } finally {
      cli.child.kill("SIGKILL");
      await peer.close();
    }
  });

  it("fails at start with a message naming a bad setting", async () => {
    const cli = spawnCli(["serve", "--port", "0"], cleanEnv({ MEMORY_TYPE: "memory", DEBUG_MOCK_RESPONSES: '["x"]', AGENT_SUB_AGENTS: "broken" }));
    const { code } = await cli.exited;
    assert.equal(code, 2);
    assert.match(cli.stderr(), /agentloop: AGENT_SUB_AGENTS: entry "broken" must be name:url/);
  });
});
