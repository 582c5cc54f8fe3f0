// src/server/server.ts's lifecycle edges as an embedder or an operator sees them: a server that
// cannot listen closes what it opened (`startAgentServer`), `listen` on `::` answers a URL a client
// can use, a process that did not ask for `handleSignals` dies of its signal as any node process,
// a request whose body was still arriving when the shutdown ended is refused naming the shutdown, and
// KAOS's card of an agent with sub-agents that could not be built still offers delegation.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";
import pg from "pg";
import { AgentLoopError, ScriptedModel } from "../../src/index.js";
import { createAgentServer, startAgentServer } from "../../src/server/index.js";
import { type CliProcess, spawnNode } from "../cli/helpers.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { tsChild } from "../ts-child.js";
import { echoTool } from "./helpers.js";

const signalsChild = join(fileURLToPath(new URL(".", import.meta.url)), "signals-child.ts");
const started: CliProcess[] = [];
after(async () => {
  for (const { child } of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await dropSchemas();
});

describe("startAgentServer on a port already in use", () => {
  it("rejects naming the port, and closes the PostgreSQL store it opened: none of its connections is left", async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
    const port = (busy.address() as AddressInfo).port;
    const schema = uniqueSchema("unlistened");
    const observer = new pg.Client({ connectionString: postgresUrl() });
    await observer.connect();
    // The store's connections are the ones named after its schema (`application_name` in its URL).
    const url = new URL(postgresUrl());
    url.searchParams.set("application_name", schema);
    const connections = async () => Number((await observer.query("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1", [schema])).rows[0].n);
    try {
      const logs: string[] = [];
      await assert.rejects(
        startAgentServer({
          env: { AGENT_NAME: "unlistened", MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: url.href, MEMORY_POSTGRES_SCHEMA: schema },
          build: { model: new ScriptedModel(["hi"]) },
          host: "127.0.0.1",
          port,
          log: (line) => logs.push(line),
        }),
        (error: unknown) => {
          assert.ok(AgentLoopError.isInstance(error));
          assert.equal(error.message, `AGENT_PORT: port ${port} is already in use`);
          return true;
        },
      );
      // A backend leaves pg_stat_activity a moment after its client said goodbye.
      const deadline = Date.now() + 5000;
      while ((await connections()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(await connections(), 0, "the store opened for the server is closed");
    } finally {
      await observer.end();
      await new Promise((resolve) => busy.close(resolve));
    }
  });
});

describe("listen on ::", () => {
  it("answers 127.0.0.1 as its URL, which a client can use", async () => {
    const server = await createAgentServer({ env: { AGENT_NAME: "dual", MEMORY_TYPE: "memory" }, build: { model: new ScriptedModel(["hi"]) }, log: () => undefined });
    try {
      const url = await server.listen(0, "::");
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal((await fetch(`${url}/health`)).status, 200);
    } finally {
      await server.close({ graceMs: 0 });
    }
  });
});

describe("startAgentServer without handleSignals", () => {
  it("leaves the signals to the process: SIGTERM ends it as it ends any node process, with no drain", async () => {
    const server = spawnNode(await tsChild(signalsChild), { ...process.env, HANDLE_SIGNALS: "no" });
    started.push(server);
    await server.waitFor(/listening (\S+)\n/);
    server.child.kill("SIGTERM");
    const { code, signal } = await server.exited;
    assert.deepEqual({ code, signal }, { code: null, signal: "SIGTERM" }, server.stderr());
    assert.doesNotMatch(server.stderr(), /shutting down/);
  });
});

describe("a request whose body was still arriving when the shutdown ended", () => {
  it("through AgentServer.fetch: its run is refused, naming the shutdown", async () => {
    const logs: string[] = [];
    const server = await createAgentServer({ env: { AGENT_NAME: "late" }, memory: false, build: { model: new ScriptedModel(["never sent"]) }, log: (line) => logs.push(line) });
    const encoder = new TextEncoder();
    let push!: ReadableStreamDefaultController<Uint8Array>;
    let reading!: () => void;
    const read = new Promise<void>((resolve) => (reading = resolve));
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        push = controller;
        controller.enqueue(encoder.encode('{"messages":[{"role":"user",'));
      },
      pull() {
        reading();
      },
    });
    const answer = server.fetch(new Request("http://agent.test/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body, duplex: "half" } as RequestInit));
    await read;
    await server.close({ graceMs: 0 });
    push.enqueue(encoder.encode('"content":"hi"}]}'));
    push.close();
    const response = await answer;
    assert.equal(response.status, 503);
    assert.deepEqual(await response.json(), { error: { message: "aborted: server shut down", type: "server_error", param: null, code: "aborted" } });
    assert.ok(logs.some((line) => /^\[late\] run \S+ session \S+ ABORTED: aborted: server shut down$/.test(line)), logs.join("\n"));
  });
});

describe("KAOS's card of an agent with sub-agents that could not be built", () => {
  it("still offers delegation (it has no tools to list)", async () => {
    // Two tools of one name: the build fails after the peer's card was asked for (refused at once).
    const server = await createAgentServer({
      env: { AGENT_NAME: "coordinating", AGENT_SUB_AGENTS: "away:http://127.0.0.1:1", MEMORY_TYPE: "memory" },
      build: { model: new ScriptedModel(["hi"]), tools: [echoTool, echoTool] },
      log: () => undefined,
    });
    try {
      assert.equal((await server.ready()).status, "failed");
      const card = (await (await server.fetch(new Request("http://agent/.well-known/agent"))).json()) as { skills: unknown[]; capabilities: string[] };
      assert.deepEqual(card.skills, []);
      assert.deepEqual(card.capabilities, ["message_processing", "task_execution", "task_delegation"]);
    } finally {
      await server.close({ graceMs: 0 });
    }
  });
});
