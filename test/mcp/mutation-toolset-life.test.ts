// An MCP toolset's connection life where the mutation run of src/mcp/toolset.ts left survivors:
// several callers at once while reconnecting, close() racing a reconnection or a call, hung
// servers (handshake, tool list, pings, session end), pings never piling up, one listing per
// list_changed, a group of toolsets, the elicitation handler's signal. One real Streamable HTTP
// MCP server in this process (the official SDK's low-level Server on 127.0.0.1) per describe,
// whose behaviour each test switches (a request kind left unanswered, an initialize refused, ...).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, isInitializeRequest, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { connectMcp, type McpToolset, mcpToolset } from "../../src/mcp/index.js";
import { startOAuthServer } from "./fixtures/oauth-server.js";
import { dynamicServerPath, freePort, waitFor } from "./helpers.js";

/** The server, and what it saw. `hang` holds the request kinds it leaves unanswered: a JSON-RPC method, or `DELETE`. */
async function stage() {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const hung: ServerResponse[] = [];
  const state = {
    url: "",
    hang: new Set<string>(),
    /** Initialize requests still to answer with 503. */
    refuseInitialize: 0,
    /** Sessions opened. */
    sessions: 0,
    listed: 0,
    /** Sessions ended with DELETE, by id. */
    ended: [] as string[],
    /** GET event streams open now. */
    openStreams: 0,
    pings: 0,
    pingDelayMs: 0,
    pingsInFlight: 0,
    mostPingsInFlight: 0,
    /** Called when a tools/list or a `hold` call arrives; a tools/list then waits for `listGate`. */
    onList: undefined as (() => void) | undefined,
    listGate: undefined as Promise<void> | undefined,
    onHold: undefined as (() => void) | undefined,
    reset() {
      state.hang.clear();
      state.refuseInitialize = 0;
      state.pingDelayMs = 0;
      state.onList = state.onHold = undefined;
      state.listGate = undefined;
    },
    close: async () => {},
  };
  const tools = ["bare", "broken", "hold", "ask", "change"].map((name) => ({ name, description: `The ${name} tool`, inputSchema: { type: "object" as const } }));
  const serverFor = () => {
    const server = new Server({ name: "stage", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });
      switch (request.params.name) {
        case "hold":
          // Until the request is cancelled or the session ends.
          await new Promise<void>((resolve) => {
            extra.signal.addEventListener("abort", () => resolve(), { once: true });
            state.onHold?.();
          });
          return text("released");
        case "ask": {
          const outcome = await server.elicitInput({ message: "Still there?", requestedSchema: { type: "object", properties: {} } }, { relatedRequestId: extra.requestId }).then(
            (answer) => answer.action,
            () => "no answer",
          );
          return text(outcome);
        }
        case "change":
          // On the call's own stream (the client's GET stream may not be open yet).
          await extra.sendNotification({ method: "notifications/tools/list_changed" });
          return text("changed");
        default:
          return text(`called ${request.params.name}`);
      }
    });
    return server;
  };
  const http = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    const kind = request.method === "POST" ? String(body?.method) : String(request.method);
    if (kind === "DELETE") state.ended.push(String(request.headers["mcp-session-id"]));
    if (state.hang.has(kind)) {
      hung.push(response);
      return;
    }
    if (kind === "initialize" && state.refuseInitialize > 0) {
      state.refuseInitialize--;
      response.writeHead(503, { "content-type": "text/plain" }).end("starting up");
      return;
    }
    // The `broken` tool's calls fail at the HTTP level, as a proxy in trouble would answer.
    if (kind === "tools/call" && body.params?.name === "broken") {
      response.writeHead(502, { "content-type": "text/plain" }).end("bad gateway");
      return;
    }
    if (kind === "tools/list") {
      state.listed++;
      state.onList?.();
      await state.listGate;
    }
    if (kind === "ping") {
      state.pings++;
      state.pingsInFlight++;
      state.mostPingsInFlight = Math.max(state.mostPingsInFlight, state.pingsInFlight);
      await new Promise((resolve) => setTimeout(resolve, state.pingDelayMs));
      state.pingsInFlight--;
    }
    if (kind === "GET") {
      state.openStreams++;
      response.once("close", () => state.openStreams--);
    }
    const sessionId = request.headers["mcp-session-id"];
    let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
    if (!transport && request.method === "POST" && isInitializeRequest(body)) {
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id: string): void => {
          state.sessions++;
          transports.set(id, created);
        },
      });
      transport = created;
      await serverFor().connect(created);
    }
    if (!transport) {
      response.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "unknown session" }, id: null }));
      return;
    }
    await transport.handleRequest(request, response, body);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  state.close = async () => {
    for (const transport of transports.values()) await transport.close();
    for (const response of hung) response.destroy();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  };
  return state;
}

type Stage = Awaited<ReturnType<typeof stage>>;

/** Settles with `promise`, or rejects after `ms` (a safety net: the awaited thing is an event, not a delay). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

const texts = async (calls: Array<Promise<{ content: unknown }>>) => (await Promise.all(calls)).map((result) => String(result.content));

describe("several callers while the server is away", () => {
  let deadUrl = "";
  before(async () => {
    deadUrl = `http://127.0.0.1:${await freePort()}/mcp`;
  });

  test("three calls at once: one attempt at a time, the second caller tries again, the third joins its attempt; the budget counts attempts", async () => {
    const failed = (next: string) => new RegExp(`^MCP server "gone" is unavailable \\(reconnecting failed: fetch failed.*; ${next}\\)$`);
    // Three attempts allowed: the first caller's attempt fails, the second's too, the third caller waits for the second's: one left.
    const three = mcpToolset({ name: "gone", url: deadUrl, reconnectDelayMs: 0, maxReconnects: 3 });
    try {
      three.keepConnecting();
      const answers = await texts([three.callTool("bare", {}), three.callTool("bare", {}), three.callTool("bare", {})]);
      for (const answer of answers) assert.match(answer, failed("reconnecting"));
      assert.equal(three.status, "disconnected");
    } finally {
      await three.close();
    }
    // Two allowed: the second caller's attempt is the last; the third caller and every later call get the limit.
    const two = mcpToolset({ name: "gone", url: deadUrl, reconnectDelayMs: 0, maxReconnects: 2 });
    try {
      two.keepConnecting();
      const answers = await texts([two.callTool("bare", {}), two.callTool("bare", {}), two.callTool("bare", {})]);
      assert.match(answers[0]!, failed("reconnecting"));
      assert.match(answers[1]!, failed("reconnect limit 2 reached"));
      assert.match(answers[2]!, failed("reconnect limit 2 reached"));
      assert.equal(two.status, "failed");
      assert.match(String((await two.callTool("bare", {})).content), failed("reconnect limit 2 reached"));
    } finally {
      await two.close();
    }
  });

  test("a lazy first call to a server that is not there: the connection error, still idle, no reconnection counted", async () => {
    const toolset = mcpToolset({ name: "lazy", url: deadUrl });
    try {
      const result = await toolset.callTool("bare", {});
      assert.equal(result.isError, true);
      assert.match(String(result.content), new RegExp(`^MCP server "lazy" \\(http: ${deadUrl.replace(/[.?]/g, "\\$&")}\\): could not connect: fetch failed`));
      assert.equal(toolset.status, "idle");
      assert.equal(toolset.reconnects, 0);
    } finally {
      await toolset.close();
    }
  });

  test("keepConnecting while the first connection is under way changes nothing until that attempt fails", async () => {
    const toolset = mcpToolset({ name: "soon", url: deadUrl, reconnectDelayMs: 60_000 });
    try {
      const first = toolset.connect();
      toolset.keepConnecting();
      assert.equal(toolset.status, "idle");
      assert.equal(toolset.failure, undefined);
      await assert.rejects(first, /could not connect: fetch failed/);
      assert.equal(toolset.status, "disconnected");
    } finally {
      await toolset.close();
    }
  });

  test("connection errors name the real cause: a stdio command that cannot start, an HTTP server that is not there", async () => {
    await assert.rejects(connectMcp({ name: "ghost", command: "/nonexistent/agentloop-mcp" }), {
      message: 'MCP server "ghost" (stdio: /nonexistent/agentloop-mcp): could not connect: spawn /nonexistent/agentloop-mcp ENOENT',
    });
    await assert.rejects(connectMcp({ name: "nowhere", url: deadUrl }), (error: Error) => {
      assert.match(error.message, /could not connect: fetch failed/);
      assert.doesNotMatch(error.message, /undefined/);
      return true;
    });
  });
});

describe("a toolset over a server that misbehaves", () => {
  let server: Stage;
  before(async () => {
    server = await stage();
  });
  after(async () => {
    await server.close();
  });

  test("three calls at once after a refused attempt: the second caller connects, the third uses that connection", async () => {
    server.reset();
    server.refuseInitialize = 1;
    const sessions = server.sessions;
    const toolset = mcpToolset({ name: "stage", url: server.url, reconnectDelayMs: 0 });
    try {
      toolset.keepConnecting();
      const [first, second, third] = await Promise.all([toolset.callTool("bare", {}), toolset.callTool("bare", {}), toolset.callTool("bare", {})]);
      assert.equal(first!.isError, true);
      assert.match(String(first!.content), /^MCP server "stage" is unavailable \(reconnecting failed: .*starting up; reconnecting\)$/);
      assert.deepEqual([second, third], [
        { content: "called bare", isError: false },
        { content: "called bare", isError: false },
      ]);
      assert.equal(toolset.reconnects, 1);
      assert.equal(server.sessions - sessions, 1);
    } finally {
      await toolset.close();
    }
  });

  test("closed while a reconnection starts: it stays closed, the call says so, no new session is opened", async () => {
    server.reset();
    const toolset = await connectMcp({ name: "stage", url: server.url, maxReconnects: 2, reconnectDelayMs: 60_000 });
    try {
      // The broken call loses the connection twice (its retry reconnects once): disconnected, one reconnection left.
      assert.equal((await toolset.callTool("broken", {})).isError, true);
      assert.equal(toolset.status, "disconnected");
      const sessions = server.sessions;
      const call = toolset.callTool("bare", {});
      await toolset.close();
      assert.deepEqual(await call, { content: 'MCP server "stage" is unavailable: the toolset was closed', isError: true });
      assert.equal(toolset.status, "closed");
      assert.equal(toolset.failure, "the toolset was closed");
      assert.equal(server.sessions, sessions);
    } finally {
      await toolset.close();
    }
  });

  test("a reconnection closes the old connection: its event stream ends", async () => {
    server.reset();
    const toolset = await connectMcp({ name: "stage", url: server.url, reconnectDelayMs: 60_000 });
    try {
      await waitFor(() => server.openStreams === 1, 5_000, "the client's event stream");
      await toolset.callTool("broken", {});
      assert.deepEqual(await toolset.callTool("bare", {}), { content: "called bare", isError: false });
      assert.equal(toolset.reconnects, 2);
      await waitFor(() => server.openStreams === 1, 5_000, "the old connections' event streams to end");
    } finally {
      await toolset.close();
    }
  });

  test("a call in flight when the toolset closes: an error result, and the toolset stays closed", async () => {
    server.reset();
    const held = new Promise<void>((resolve) => {
      server.onHold = resolve;
    });
    const toolset = await connectMcp({ name: "stage", url: server.url });
    const call = toolset.callTool("hold", {});
    await held;
    await toolset.close();
    const result = await call;
    assert.equal(result.isError, true);
    assert.equal(toolset.status, "closed");
    assert.equal(toolset.failure, "the toolset was closed");
  });

  test("closed during the handshake: the server is not asked for its tools", async () => {
    server.reset();
    const listed = server.listed;
    const toolset = mcpToolset({ name: "stage", url: server.url });
    const connecting = toolset.connect();
    await toolset.close();
    await assert.rejects(connecting, /toolset was closed while connecting/);
    assert.equal(server.listed, listed);
  });

  test("closed while the first tool list loads: connect() fails, no tools, the toolset stays closed", async () => {
    server.reset();
    let release = () => {};
    server.listGate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const listing = new Promise<void>((resolve) => {
      server.onList = resolve;
    });
    const toolset = mcpToolset({ name: "stage", url: server.url });
    const connecting = toolset.connect();
    await listing;
    const closing = toolset.close();
    release();
    await closing;
    await assert.rejects(connecting, { message: `MCP server "stage" (http: ${server.url}): could not connect: toolset was closed while connecting` });
    assert.equal(toolset.status, "closed");
    assert.deepEqual(toolset.loadedTools, []);
    assert.equal(toolset.toolsVersion, 0);
  });

  test("a server that hangs: the handshake and the first list within connectTimeoutMs, a later list within requestTimeoutMs, the session's end within the request timeout", async () => {
    server.reset();
    server.hang.add("initialize");
    await within(assert.rejects(connectMcp({ name: "stage", url: server.url, connectTimeoutMs: 200 }), /could not connect: MCP error -32001: Request timed out/), 10_000, "the handshake's timeout");
    server.reset();
    // Answers the handshake, then nothing: the failed connection is dropped without a DELETE (it would hang too).
    server.hang.add("tools/list").add("DELETE");
    const ended = server.ended.length;
    await within(assert.rejects(connectMcp({ name: "stage", url: server.url, connectTimeoutMs: 200 }), /could not connect: MCP error -32001: Request timed out/), 10_000, "the first list's timeout");
    assert.equal(server.ended.length, ended);
    server.reset();
    const toolset = await connectMcp({ name: "stage", url: server.url, requestTimeoutMs: 200 });
    server.hang.add("tools/list").add("DELETE");
    await within(assert.rejects(toolset.refreshTools(), /Request timed out/), 10_000, "a later list's timeout");
    // The DELETE that ends the session gets no answer: close() gives up on it after the request timeout.
    await within(toolset.close(), 3_000, "close() of a hung server");
    assert.equal(toolset.status, "closed");
  });

  test("pings: never two at once to a slow server; a server that stops answering them is found lost after the ping timeout", async () => {
    server.reset();
    server.pingDelayMs = 150;
    const slow = await connectMcp({ name: "stage", url: server.url, pingIntervalMs: 50 });
    try {
      const pings = server.pings;
      await waitFor(() => server.pings >= pings + 3, 10_000, "three pings");
      assert.equal(server.mostPingsInFlight, 1);
      assert.equal(slow.status, "connected");
    } finally {
      await slow.close();
    }
    server.reset();
    const toolset = await connectMcp({ name: "stage", url: server.url, pingIntervalMs: 100, reconnectDelayMs: 60_000 });
    try {
      server.hang.add("ping");
      // The ping's timeout is the interval, at least 1 s.
      await waitFor(() => toolset.status === "disconnected", 5_000, "the unanswered ping to time out");
      assert.match(String(toolset.failure), /Request timed out/);
    } finally {
      server.reset();
      await toolset.close();
    }
  });

  test("a list_changed notification: one listing of the tools, then onToolsChanged", async () => {
    server.reset();
    const changes: string[][] = [];
    const toolset = await connectMcp({ name: "stage", url: server.url, onToolsChanged: (names) => changes.push(names) });
    try {
      const listed = server.listed;
      assert.equal(toolset.loadedTools[0]!.action, "tool_call");
      await toolset.callTool("change", {});
      await waitFor(() => changes.length === 1, 5_000, "the list to be reloaded");
      assert.equal(server.listed - listed, 1);
      assert.equal(toolset.toolsVersion, 2);
      assert.deepEqual(changes[0], ["stage.bare", "stage.broken", "stage.hold", "stage.ask", "stage.change"]);
    } finally {
      await toolset.close();
    }
  });

  test("the elicitation handler's signal aborts when the toolset closes while the user is being asked", async () => {
    server.reset();
    let asked = () => {};
    const asking = new Promise<void>((resolve) => {
      asked = resolve;
    });
    let aborted = false;
    const toolset = await connectMcp({
      name: "stage",
      url: server.url,
      onElicitation: (_request, { signal }) =>
        new Promise((resolve) => {
          signal.addEventListener("abort", () => {
            aborted = true;
            resolve({ action: "cancel" });
          });
          asked();
        }),
    });
    const call = toolset.callTool("ask", {});
    await asking;
    await toolset.close();
    assert.equal(aborted, true);
    assert.equal((await call).isError, true);
  });

  test("a group: its name lists the servers; disposing it closes each; connectMcp closes the connected ones when one fails", async () => {
    server.reset();
    const ended = server.ended.length;
    const group = await connectMcp([
      { name: "one", url: server.url },
      { name: "two", url: server.url },
    ]);
    assert.equal(group.name, "one, two");
    await group[Symbol.asyncDispose]();
    assert.deepEqual(
      group.toolsets.map((toolset: McpToolset) => toolset.status),
      ["closed", "closed"],
    );
    assert.equal(server.ended.length - ended, 2);
    const single = await connectMcp({ name: "single", url: server.url });
    await single[Symbol.asyncDispose]();
    assert.equal(single.status, "closed");
    assert.equal(server.ended.length - ended, 3);
    await assert.rejects(
      connectMcp([
        { name: "good", url: server.url },
        { name: "bad", url: `http://127.0.0.1:${await freePort()}/mcp` },
      ]),
      /MCP server "bad"/,
    );
    assert.equal(server.ended.length - ended, 4);
  });
});

test("a stdio server whose stderr is ignored connects", async () => {
  const toolset = await connectMcp({ name: "dynamic", command: process.execPath, args: [dynamicServerPath], stderr: "ignore" });
  try {
    assert.ok(toolset.loadedTools.some((tool) => tool.name === "dynamic.add-tool"));
  } finally {
    await toolset.close();
  }
});

test("signed in (authorization code), then the server goes away: a call is a connection error, not a new sign-in", async () => {
  const oauth = await startOAuthServer();
  const tokenDir = await mkdtemp(join(tmpdir(), "agentloop-oauth-gone-"));
  const printed: string[] = [];
  const toolset = await connectMcp({
    name: "mine",
    url: oauth.mcpUrl,
    reconnectDelayMs: 60_000,
    auth: {
      type: "authorization_code",
      tokenDir,
      // A wrong sign-in wait would end after 3 s with its own error.
      timeoutMs: 3_000,
      onAuthorizationUrl: async (url) => {
        printed.push(url);
        // The browser: the authorization page redirects back to the loopback callback.
        const location = (await fetch(url, { redirect: "manual" })).headers.get("location");
        await (await fetch(String(location))).text();
      },
    },
  });
  try {
    assert.equal(printed.length, 1);
    await oauth.close();
    const result = await toolset.callTool("whoami", {});
    assert.match(String(result.content), /^MCP server "mine" is unavailable \(reconnecting failed: fetch failed.*; reconnecting, next attempt in 30 s\)$/);
    assert.equal(printed.length, 1);
  } finally {
    await toolset.close();
    await rm(tokenDir, { recursive: true, force: true });
  }
});

test("an event stream that cannot be resumed: two attempts with Last-Event-ID, then the call waits out its timeout", async () => {
  // A server with resumable streams (an event store, retry 50 ms) whose tool closes its call's
  // stream, and which refuses the first two resumptions; a third would get the answer.
  const transports = new Map<string, StreamableHTTPServerTransport>();
  let resumptions = 0;
  const http = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    if (request.method === "GET" && request.headers["last-event-id"] && ++resumptions <= 2) {
      response.writeHead(503, { "content-type": "text/plain" }).end("busy");
      return;
    }
    const sessionId = request.headers["mcp-session-id"];
    let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
    if (!transport && request.method === "POST" && isInitializeRequest(body)) {
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: new InMemoryEventStore(),
        retryInterval: 50,
        onsessioninitialized: (id: string): void => {
          transports.set(id, created);
        },
      });
      transport = created;
      const server = new Server({ name: "resumable", version: "1.0.0" }, { capabilities: { tools: {} } });
      server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [{ name: "interrupted", inputSchema: { type: "object" as const } }] }));
      server.setRequestHandler(CallToolRequestSchema, async (_request, extra) => {
        extra.closeSSEStream?.();
        await new Promise((resolve) => setTimeout(resolve, 100));
        return { content: [{ type: "text" as const, text: "late answer" }] };
      });
      await server.connect(created);
    }
    if (!transport) {
      response.writeHead(404).end();
      return;
    }
    await transport.handleRequest(request, response, body);
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const toolset = await connectMcp({ name: "resumable", url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, requestTimeoutMs: 600 });
  try {
    assert.deepEqual(await toolset.callTool("interrupted", {}), { content: 'MCP server "resumable", tool "interrupted": MCP error -32001: Request timed out', isError: true });
    assert.equal(resumptions, 2);
    assert.equal(toolset.status, "connected");
  } finally {
    await toolset.close();
    for (const transport of transports.values()) await transport.close();
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  }
});
