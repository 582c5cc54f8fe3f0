import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { after, before, describe, test } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { connectMcp, type McpToolset } from "../../src/mcp/index.js";
import { freePort, type RunningHttpServer, startEverythingHttp, waitFor } from "./helpers.js";

// One everything server for the file (each start costs ~0.5 s of CPU): the tests that stop it start
// it again on the same port; a test that needs it running gets it from `running()`.
let server: RunningHttpServer;
let port: number;
before(async () => {
  port = await freePort();
  server = await startEverythingHttp(port);
});
after(async () => {
  await server.stop();
});
async function running(): Promise<RunningHttpServer> {
  if (server.process.exitCode !== null || server.process.signalCode !== null) server = await startEverythingHttp(port);
  return server;
}

describe("everything server over Streamable HTTP", () => {
  let toolset: McpToolset;

  before(async () => {
    await running();
    // KAOS style: no /mcp in the URL; the toolset appends it.
    toolset = await connectMcp({ name: "remote", url: `http://127.0.0.1:${port}`, allowedTools: ["echo", "get-sum", "get-structured-content"], reconnectDelayMs: 100, maxReconnectDelayMs: 500 });
  });
  after(async () => {
    await toolset.close();
  });

  test("lists and calls tools, with structured content", async () => {
    const tools = await toolset.tools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ["remote.echo", "remote.get-structured-content", "remote.get-sum"]);
    assert.deepEqual(await toolset.callTool("get-sum", { a: 1, b: 2 }), { content: "The sum of 1 and 2 is 3.", isError: false });
    const structured = await toolset.callTool("get-structured-content", { location: "Los Angeles" });
    assert.equal((structured.structured as { conditions: string }).conditions.length > 0, true);
  });

  test("a server that goes away and comes back is used again, every time", async () => {
    await server.stop();
    server = await startEverythingHttp(port);
    // The old session is unknown to the new server process: the toolset opens a new session and retries.
    assert.deepEqual(await toolset.callTool("echo", { message: "back" }), { content: "Echo: back", isError: false });
    assert.equal(toolset.reconnects, 1);

    await server.stop();
    const result = await toolset.callTool("echo", { message: "gone" });
    assert.equal(result.isError, true);
    assert.match(result.content as string, /MCP server "remote" is unavailable \(.*reconnecting/);
    assert.equal(toolset.status, "disconnected");
    assert.ok(toolset.failure);

    // Down for a while: the background attempts back off; when the server is back it is used again.
    server = await startEverythingHttp(port);
    await waitFor(() => toolset.status === "connected", 15_000, "the background reconnection");
    assert.deepEqual(await toolset.callTool("echo", { message: "again" }), { content: "Echo: again", isError: false });
    assert.equal(toolset.reconnects, 2);
    assert.equal(toolset.failure, undefined);
  });
});

describe("pings", () => {
  test("pingIntervalMs notices a server that went away without any call, and the toolset reconnects when it is back", async () => {
    await running();
    const toolset = await connectMcp({ name: "pinged", url: `http://127.0.0.1:${port}`, allowedTools: ["echo"], pingIntervalMs: 100, reconnectDelayMs: 100, maxReconnectDelayMs: 500 });
    try {
      await server.stop();
      await waitFor(() => toolset.status === "disconnected", 10_000, "a failed ping");
      assert.match(toolset.failure ?? "", /./);
      server = await startEverythingHttp(port);
      await waitFor(() => toolset.status === "connected", 15_000, "the background reconnection");
      assert.equal((await toolset.callTool("echo", { message: "pong" })).content, "Echo: pong");
    } finally {
      await toolset.close();
    }
  });
});

describe("HTTP connection failures", () => {
  test("an unreachable URL fails to connect with an error naming the server and the URL", async () => {
    const port = await freePort();
    await assert.rejects(connectMcp({ name: "nowhere", url: `http://127.0.0.1:${port}/api` }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "network");
      assert.match(error.message, /MCP server "nowhere"/);
      assert.match(error.message, new RegExp(`http://127\\.0\\.0\\.1:${port}/api/mcp`));
      return true;
    });
  });

  test("an HTTP endpoint that is not an MCP server fails to connect clearly", async () => {
    const plain: Server = createServer((_request, response) => {
      response.writeHead(404, { "content-type": "text/plain" }).end("not here");
    });
    await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
    const address = plain.address();
    const port = typeof address === "object" && address ? address.port : 0;
    try {
      await assert.rejects(connectMcp({ name: "plain", url: `http://127.0.0.1:${port}/mcp` }), /MCP server "plain".*could not connect/);
    } finally {
      await new Promise((resolve) => plain.close(resolve));
    }
    // Nothing listens there now: the error says why the fetch failed, not only that it did.
    await assert.rejects(connectMcp({ name: "plain", url: `http://127.0.0.1:${port}/mcp` }), /MCP server "plain".*could not connect: fetch failed: connect ECONNREFUSED 127\.0\.0\.1:\d+/);
  });

  test("headers are sent with every request", async () => {
    const seen: string[] = [];
    await running();
    // A tiny pass-through proxy that records the header and forwards to the real server.
    const proxy = createServer(async (request, response) => {
      seen.push(String(request.headers["x-tenant"]));
      const body = await new Promise<Buffer>((resolve) => {
        const chunks: Buffer[] = [];
        request.on("data", (chunk: Buffer) => chunks.push(chunk)).on("end", () => resolve(Buffer.concat(chunks)));
      });
      const upstream = await fetch(`http://127.0.0.1:${port}${request.url}`, {
        method: request.method,
        headers: Object.fromEntries(Object.entries(request.headers).filter(([key]) => key !== "host" && key !== "content-length")) as Record<string, string>,
        body: request.method === "POST" ? body : undefined,
      });
      response.writeHead(upstream.status, Object.fromEntries(upstream.headers));
      response.end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const address = proxy.address();
    const proxyPort = typeof address === "object" && address ? address.port : 0;
    let counter = 0;
    const toolset = await connectMcp({ name: "tenant", url: `http://127.0.0.1:${proxyPort}/mcp`, headers: () => ({ "x-tenant": `t${++counter}` }) });
    let fixed: McpToolset | undefined;
    try {
      assert.equal((await toolset.callTool("echo", { message: "x" })).content, "Echo: x");
      assert.ok(seen.length >= 3);
      assert.ok(seen.every((value) => /^t\d+$/.test(value)), seen.join(","));
      await toolset.close();
      seen.length = 0;
      fixed = await connectMcp({ name: "fixed", url: `http://127.0.0.1:${proxyPort}/mcp`, headers: { "x-tenant": "static" } });
      assert.equal((await fixed.callTool("echo", { message: "y" })).content, "Echo: y");
      assert.ok(seen.length >= 3 && seen.every((value) => value === "static"), seen.join(","));
    } finally {
      await toolset.close();
      await fixed?.close();
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});
