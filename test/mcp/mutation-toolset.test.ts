// An MCP toolset on the inputs the mutation run (npm run mutation -- src/mcp/toolset.ts) showed
// untested: which line of a dying server's stderr an error quotes, what the client tells the server
// about itself, and the connection's life as a user sees it (status, failure, reconnects, errors).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, isInitializeRequest, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { AgentLoopError } from "../../src/errors.js";
import { connectMcp, mcpToolset } from "../../src/mcp/index.js";
import { usefulStderrLine } from "../../src/mcp/toolset.js";
import { dynamicServerPath, freePort, waitFor } from "./helpers.js";

describe("usefulStderrLine: the line of a server's stderr an error message quotes", () => {
  test("a runtime's boilerplate after the message is skipped, line by line", () => {
    // With no error line, the last line that is not boilerplate: each kind of boilerplate after it is skipped.
    for (const boilerplate of [
      "    at start (/srv/server.js:3:9)",
      "Node.js v20.20.2",
      "  ^^^^^",
      "^",
      "}",
      "  ]",
      "{",
      "  code: 'ERR_BAD_CONFIG',",
      "  $errno: 2",
      "node:internal/modules/cjs/loader:1228",
      "  throw err;",
      "throw error;",
      "   ",
      "",
    ]) {
      assert.equal(usefulStderrLine(`bad token in config.json\n${boilerplate}\n`), "bad token in config.json", JSON.stringify(boilerplate));
    }
    // Lines that only look like boilerplate are kept.
    for (const line of ["at the end of the config", "Node.js is too old", "x^", "{ port: 1 }", "code: 'X' (not indented)", "see node:internal/x", "throw it; away", "throw err; now", "will throw err;", "},", "^ marks the spot", "requires Node.js v22", "failed at startup"]) {
      assert.equal(usefulStderrLine(`first\n${line}\n`), line, line);
    }
  });

  test("the last error line wins over later lines, in each language's form", () => {
    for (const line of [
      "Error: Cannot find module '/x.js'",
      "TypeError: x is not a function",
      "ModuleNotFoundError: No module named 'mcp'",
      "requests.exceptions.ConnectionError: refused",
      "java.lang.IllegalStateException: closed",
      "Exception in thread main",
      "error: unknown flag --foo",
      "ERROR bad things",
      "fatal: not a git repository",
      "  ConnectionError while starting",
      "  Fatal error in worker",
    ]) {
      assert.equal(usefulStderrLine(`starting\n${line}\nshutting down\n`), line.trim(), line);
    }
    assert.equal(usefulStderrLine("Error: first\nError: second\nbye\n"), "Error: second");
    // Words that merely start like an error are no error line.
    for (const line of ["Errors: 0", "errorless run", "fatalism", "Exceptional", "pre-fatal state", "no error found", "retrying after TimeoutError"]) assert.equal(usefulStderrLine(`${line}\nlast words\n`), "last words", line);
  });

  test("the line is trimmed; nothing useful is an empty string", () => {
    assert.equal(usefulStderrLine("   indented last   \n"), "indented last");
    assert.equal(usefulStderrLine("a\r\n  b  \r\n"), "b");
    assert.equal(usefulStderrLine(""), "");
    assert.equal(usefulStderrLine("\n  \n    at x (y.js:1:1)\nNode.js v22.1.0\n"), "");
  });
});

/**
 * A real Streamable HTTP MCP server in this process (the official SDK's low-level Server, on
 * 127.0.0.1) whose tool list comes in two pages, with tools described in each way the protocol
 * allows; its `whoami` tool answers with what the client said about itself and the headers it sent.
 */
async function probeServer(port = 0, options: { ping?: "slow" | "refused" } = {}) {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const tools = [
    { name: "whoami", description: "Who the client says it is", inputSchema: { type: "object" as const, properties: {} } },
    { name: "titled", title: "A title only", inputSchema: { type: "object" as const, properties: { x: { type: "string" } } } },
    { name: "bare", inputSchema: { type: "object" as const } },
    { name: "task-only", description: "Runs only as a task", inputSchema: { type: "object" as const }, execution: { taskSupport: "required" as const } },
    { name: "task-optional", description: "May run as a task", inputSchema: { type: "object" as const }, execution: { taskSupport: "optional" as const } },
  ];
  let lastHeaders: Record<string, unknown> = {};
  const listed: Array<string | undefined> = [];
  /** The sessions the client ended (DELETE), by id. */
  const ended: string[] = [];
  let brokenCalls = 0;
  let pings = 0;
  const serverFor = () => {
    const server = new Server({ name: "probe", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, (request) => {
      const cursor = request.params?.cursor;
      listed.push(cursor);
      return cursor === "page-2" ? { tools: tools.slice(2) } : { tools: tools.slice(0, 2), nextCursor: "page-2" };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      if (request.params.name === "slow") {
        // Longer than the client's request timeout, with progress notifications more often than it.
        const progressToken = request.params._meta?.progressToken;
        for (let step = 1; step <= 12; step++) {
          await new Promise((resolve) => setTimeout(resolve, 150));
          if (progressToken !== undefined) await extra.sendNotification({ method: "notifications/progress", params: { progressToken, progress: step, total: 12, message: `step ${step}` } });
        }
        return { content: [{ type: "text", text: "slow done" }] };
      }
      if (request.params.name !== "whoami") return { content: [{ type: "text", text: `called ${request.params.name}` }] };
      const answer = { client: server.getClientVersion(), capabilities: server.getClientCapabilities(), tenant: lastHeaders["x-tenant"] };
      return { content: [{ type: "text", text: JSON.stringify(answer) }] };
    });
    return server;
  };
  const http = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
    lastHeaders = request.headers;
    if (request.method === "DELETE") ended.push(String(request.headers["mcp-session-id"]));
    if (body?.method === "ping") {
      pings++;
      // A server busy for a moment (answers after 300 ms), or one that refuses pings with a protocol error: both alive.
      if (options.ping === "slow") await new Promise((resolve) => setTimeout(resolve, 300));
      if (options.ping === "refused") {
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: body.id, error: { code: -32601, message: "Method not found" } }));
        return;
      }
    }
    // The `broken` tool's calls fail at the HTTP level, as a proxy in trouble would answer.
    if (body?.method === "tools/call" && body.params?.name === "broken") {
      brokenCalls++;
      response.writeHead(502, { "content-type": "text/plain" }).end("bad gateway");
      return;
    }
    const sessionId = request.headers["mcp-session-id"];
    let transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
    if (!transport && request.method === "POST" && isInitializeRequest(body)) {
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id: string): void => {
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
  await new Promise<void>((resolve) => http.listen(port, "127.0.0.1", resolve));
  const address = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}/mcp`,
    listed,
    ended,
    get brokenCalls() {
      return brokenCalls;
    },
    get pings() {
      return pings;
    },
    sessions: transports,
    async close() {
      for (const transport of transports.values()) await transport.close();
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}

describe("a toolset over a real HTTP server", () => {
  test("what the client tells the server: its name, version and elicitation capability; headers per request", async () => {
    const probe = await probeServer();
    let tenant = 0;
    const toolset = await connectMcp({ name: "probe", url: probe.url, headers: () => ({ "x-tenant": `t${++tenant}` }) });
    try {
      const whoami = JSON.parse(String((await toolset.callTool("whoami", {})).content));
      assert.deepEqual(whoami.client, { name: "agentloop", version: "0.1.0" });
      assert.deepEqual(whoami.capabilities.elicitation, { form: { applyDefaults: true } });
      assert.match(whoami.tenant, /^t\d+$/);
      assert.equal(toolset.pid, undefined);
      // Closing ends the HTTP session politely.
      await toolset.close();
      assert.deepEqual(probe.ended, [...probe.sessions.keys()]);
      assert.equal(probe.ended.length, 1);
    } finally {
      await toolset.close();
      await probe.close();
    }
  });

  test("the tool list: every page, in order; a title or the name when there is no description; task-only tools left out", async () => {
    const probe = await probeServer();
    const toolset = mcpToolset({ name: "probe", url: probe.url, toolTimeoutMs: 1234, truncation: { maxChars: 99 }, sequential: true });
    try {
      assert.deepEqual(toolset.loadedTools, []);
      assert.equal(toolset.serverToolDescriptions.length, 0);
      assert.equal(toolset.toolsVersion, 0);
      assert.equal(toolset.status, "idle");
      assert.equal(toolset.failure, undefined);
      const tools = await toolset.tools();
      assert.deepEqual(probe.listed, [undefined, "page-2"]);
      assert.deepEqual(
        tools.map((tool) => [tool.name, tool.description]),
        [
          ["probe.whoami", "Who the client says it is"],
          ["probe.titled", "A title only"],
          ["probe.bare", "bare"],
          ["probe.task-optional", "May run as a task"],
        ],
      );
      assert.deepEqual(
        toolset.serverToolDescriptions.map((tool) => tool.name),
        ["whoami", "titled", "bare", "task-optional"],
      );
      assert.deepEqual(tools[1]!.parameters, { type: "object", properties: { x: { type: "string" } } });
      for (const tool of tools) {
        assert.deepEqual([tool.kind, tool.timeoutMs, tool.truncation, tool.sequential, tool.mcp], ["mcp", 1234, { maxChars: 99 }, true, { server: "probe", tool: tool.name.slice("probe.".length) }]);
      }
      // Connecting again while connected changes nothing: no new session, no new listing.
      assert.equal(await toolset.connect(), toolset);
      assert.deepEqual([probe.sessions.size, probe.listed.length], [1, 2]);
      // keepConnecting is for a toolset whose first connection failed: a connected one is left alone.
      toolset.keepConnecting();
      assert.equal(toolset.status, "connected");
      assert.equal(toolset.toolsVersion, 1);
      assert.equal(toolset.status, "connected");
      assert.equal(toolset.failure, undefined);
      // The tool runs through the loop's Tool shape too.
      assert.deepEqual(await tools[2]!.execute(undefined as never, { signal: new AbortController().signal, progress() {} } as never), { content: "called bare", isError: false });
      await toolset.refreshTools();
      assert.equal(toolset.toolsVersion, 2);
      assert.deepEqual(probe.listed, [undefined, "page-2", undefined, "page-2"]);
      // Without those settings a tool has none of them.
      const plain = await connectMcp({ name: "plain", url: probe.url, allowedTools: (name) => name.startsWith("t") });
      assert.deepEqual(
        plain.loadedTools.map((tool) => [tool.name, "timeoutMs" in tool, "truncation" in tool, "sequential" in tool]),
        [
          ["plain.titled", false, false, false],
          ["plain.task-optional", false, false, false],
        ],
      );
      await plain.close();
    } finally {
      await toolset.close();
      await probe.close();
    }
    assert.equal(toolset.status, "closed");
    assert.equal(toolset.failure, "the toolset was closed");
    assert.deepEqual(await toolset.refreshTools(), toolset.loadedTools);
    // tools() of a closed toolset is its last list: it does not try to connect again.
    assert.equal((await toolset.tools()).length, 4);
    await assert.rejects(toolset.connect(), { name: "AgentLoopError", kind: "configuration", message: 'MCP server "probe": toolset is closed' });
    assert.deepEqual(await toolset.callTool("whoami", {}), { content: 'MCP server "probe" is unavailable: the toolset was closed', isError: true });
  });
});

describe("the connection's life as a user sees it", () => {
  test("keepConnecting while the first connection is still under way: once it fails, attempts go on until the server is up", async () => {
    const port = await freePort();
    const toolset = mcpToolset({ name: "late", url: `http://127.0.0.1:${port}/mcp`, reconnectDelayMs: 50, maxReconnectDelayMs: 100 });
    let probe: Awaited<ReturnType<typeof probeServer>> | undefined;
    try {
      const first = toolset.connect();
      toolset.keepConnecting();
      await assert.rejects(first, /could not connect/);
      await waitFor(() => toolset.status === "disconnected", 5_000, "the toolset to keep trying");
      assert.match(String(toolset.failure), /could not connect|reconnecting failed/);
      probe = await probeServer(port);
      await waitFor(() => toolset.status === "connected", 10_000, "a background attempt to connect");
      assert.equal(toolset.toolsVersion, 1);
      assert.equal(toolset.failure, undefined);
      assert.equal((await toolset.callTool("bare", {})).content, "called bare");
    } finally {
      await toolset.close();
      await probe?.close();
    }
  });

  test("keepConnecting before any attempt: disconnected, the failure is a lost connection, calls say when the next attempt comes (the delay capped at 30 s by default)", async () => {
    const toolset = mcpToolset({ name: "later", url: "http://127.0.0.1:9/mcp", reconnectDelayMs: 60_000 });
    try {
      toolset.keepConnecting();
      assert.equal(toolset.status, "disconnected");
      assert.equal(toolset.failure, "connection lost");
      assert.deepEqual(await toolset.callTool("x", {}), { content: 'MCP server "later" is unavailable (connection lost; reconnecting, next attempt in 30 s)', isError: true });
    } finally {
      await toolset.close();
    }
  });

  test("a call failing at the HTTP level is tried once more on a new connection, then is an error result", async () => {
    const probe = await probeServer();
    const toolset = await connectMcp({ name: "probe", url: probe.url });
    try {
      const result = await toolset.callTool("broken", {});
      assert.equal(result.isError, true);
      assert.equal(result.content, 'MCP server "probe": connection lost during the call to "broken": Streamable HTTP error: Error POSTing to endpoint: bad gateway');
      assert.equal(probe.brokenCalls, 2);
      assert.equal(toolset.reconnects, 1);
    } finally {
      await toolset.close();
      await probe.close();
    }
  });

  test("a server gone for good: each failed attempt named, the wait between attempts doubling, the reconnect limit", async () => {
    const probe = await probeServer();
    const toolset = await connectMcp({ name: "probe", url: probe.url, maxReconnects: 3, reconnectDelayMs: 1_500 });
    const limited = await connectMcp({ name: "limited", url: probe.url, maxReconnects: 1 });
    try {
      await probe.close();
      // With one reconnection allowed: the call's own failure, the one attempt, then the limit.
      const last = await limited.callTool("bare", {});
      assert.match(String(last.content), /^MCP server "limited" is unavailable \(reconnecting failed: fetch failed.*; reconnect limit 1 reached\)$/);
      assert.equal(limited.status, "failed");
      const unavailable = (next: string) => new RegExp(`^MCP server "probe" is unavailable \\(reconnecting failed: fetch failed.*; ${next}\\)$`);
      // The call's own failure, then one attempt at once: it fails, the next waits 1.5 s.
      assert.match(String((await toolset.callTool("bare", {})).content), unavailable("reconnecting, next attempt in 2 s"));
      assert.equal(toolset.status, "disconnected");
      // The background attempt fails too: the wait doubles (3 s).
      // (A call while the wait lasts makes no attempt; one after it makes the attempt itself.)
      let answer = "";
      for (const started = Date.now(); !/next attempt in 3 s/.test(answer) && Date.now() - started < 15_000; ) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = String((await toolset.callTool("bare", {})).content);
      }
      assert.match(answer, unavailable("reconnecting, next attempt in 3 s"));
      assert.equal(toolset.status, "disconnected");
      assert.match(String(toolset.failure), /^reconnecting failed: fetch failed/);
    } finally {
      await limited.close();
      await toolset.close();
    }
  });

  test("pings: a server slower than the interval but within a second, or refusing pings, stays connected", async () => {
    for (const ping of ["slow", "refused"] as const) {
      const probe = await probeServer(0, { ping });
      const toolset = await connectMcp({ name: "probe", url: probe.url, pingIntervalMs: 100 });
      try {
        await waitFor(() => probe.pings >= 3, 10_000, "three pings");
        assert.equal(toolset.status, "connected", ping);
        assert.equal(toolset.reconnects, 0, ping);
      } finally {
        await toolset.close();
        await probe.close();
      }
    }
  });

  test("progress notifications reset the request timeout, and reach the caller", async () => {
    const probe = await probeServer();
    const toolset = await connectMcp({ name: "probe", url: probe.url, requestTimeoutMs: 1_000 });
    try {
      const seen: unknown[] = [];
      assert.deepEqual(await toolset.callTool("slow", {}, { onProgress: (progress) => seen.push(progress) }), { content: "slow done", isError: false });
      assert.equal(seen.length, 12);
      assert.deepEqual(seen[11], { progress: 12, total: 12, message: "step 12" });
    } finally {
      await toolset.close();
      await probe.close();
    }
  });

  test("a connection that cannot open: the error is a network error whose cause is the fetch's", async () => {
    await assert.rejects(connectMcp({ name: "nowhere", url: "http://127.0.0.1:9/mcp" }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "network");
      assert.ok(error.cause instanceof Error, String(error.cause));
      assert.match(error.message, new RegExp(`could not connect: ${(error.cause as Error).message.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`));
      return true;
    });
  });

  test("closed while connecting: the connection is dropped and connect() says so", async () => {
    const probe = await probeServer();
    const toolset = mcpToolset({ name: "probe", url: probe.url });
    try {
      const connecting = toolset.connect();
      await toolset.close();
      await assert.rejects(connecting, { message: `MCP server "probe" (http: ${probe.url}): could not connect: toolset was closed while connecting` });
      assert.equal(toolset.status, "closed");
      assert.deepEqual(toolset.loadedTools, []);
    } finally {
      await probe.close();
    }
  });

  test("an aborted signal: the call is refused before anything connects", async () => {
    const probe = await probeServer();
    const toolset = mcpToolset({ name: "probe", url: probe.url });
    try {
      await assert.rejects(toolset.callTool("whoami", {}, { signal: AbortSignal.abort("stop") }), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "aborted");
      assert.equal(toolset.status, "idle");
      assert.equal(probe.sessions.size, 0);
      // Without the abort, the lazy toolset's first call connects and goes through.
      assert.deepEqual(await toolset.callTool("bare", {}), { content: "called bare", isError: false });
      assert.equal(toolset.status, "connected");
    } finally {
      await toolset.close();
      await probe.close();
    }
  });

  test("a stdio server that died: disconnected, its failure named; refreshing keeps the last list", async () => {
    const toolset = await connectMcp({ name: "dynamic", command: process.execPath, args: [dynamicServerPath], reconnectDelayMs: 60_000 });
    try {
      const names = toolset.loadedTools.map((tool) => tool.name);
      process.kill(toolset.pid!, "SIGKILL");
      await waitFor(() => toolset.status === "disconnected", 10_000, "the loss to be noticed");
      assert.equal(toolset.failure, "server process exited");
      assert.deepEqual(
        (await toolset.refreshTools()).map((tool) => tool.name),
        names,
      );
      assert.equal(toolset.toolsVersion, 1);
      // A call reconnects at once; connect() meanwhile waits for that attempt.
      const call = toolset.callTool("remove-tool", { name: "none" });
      await toolset.connect();
      assert.equal(toolset.status, "connected");
      assert.equal((await call).content, "removed none");
      assert.equal(toolset.reconnects, 1);
    } finally {
      await toolset.close();
    }
  });

  test("a stdio server's stderr: the last 4 KB are kept for the error; `ignore` keeps none", async () => {
    // An error line, then more than 4 KB of other output: the error line is no longer in the tail.
    const long = "console.error('Error: early failure'); for (let i = 0; i < 100; i++) console.error('log line ' + 'x'.repeat(60)); console.error('last words'); process.exit(3)";
    await assert.rejects(connectMcp({ name: "long", command: process.execPath, args: ["-e", long] }), (error: Error) => {
      assert.match(error.message, /could not connect: .* \(server stderr: last words\)$/);
      return true;
    });
    const short = "console.error('Error: early failure'); console.error('last words'); process.exit(3)";
    await assert.rejects(connectMcp({ name: "short", command: process.execPath, args: ["-e", short] }), /\(server stderr: Error: early failure\)$/);
    // A command without args is named alone.
    await assert.rejects(connectMcp({ name: "ghost", command: "/nonexistent/agentloop-mcp" }), /^AgentLoopError: MCP server "ghost" \(stdio: \/nonexistent\/agentloop-mcp\): could not connect/);
    await assert.rejects(connectMcp({ name: "quiet", command: process.execPath, args: ["-e", short], stderr: "ignore" }), (error: Error) => {
      assert.doesNotMatch(error.message, /server stderr/);
      return true;
    });
  });
});
