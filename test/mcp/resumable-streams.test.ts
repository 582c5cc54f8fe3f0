// Resumable streams (MCP spec, Streamable HTTP): a server that closes a tools/call event stream
// after an event with an id and a `retry` is reconnected to with Last-Event-ID, and the call gets
// its answer. A real server process (the official SDK with an event store).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { connectMcp, type McpToolset } from "../../src/mcp/index.js";
import { type RunningHttpServer, resumableServerPath, startHttpServerScript } from "./helpers.js";

describe("resumable streams (sse-retry)", () => {
  let server: RunningHttpServer;
  let toolset: McpToolset;
  before(async () => {
    server = await startHttpServerScript(resumableServerPath);
    toolset = await connectMcp({ name: "resumable", url: `http://127.0.0.1:${server.port}/mcp`, requestTimeoutMs: 10_000 });
  });
  after(async () => {
    await toolset.close();
    await server.stop();
  });

  test("a tools/call stream closed after an event with an id is resumed with Last-Event-ID and answers", async () => {
    const started = performance.now();
    const result = await toolset.callTool("interrupted-echo", { message: "resumed" });
    const elapsed = performance.now() - started;
    assert.deepEqual(result, { content: "Echo: resumed", isError: false });
    // The server's retry is 100 ms: nowhere near the 10 s request timeout.
    assert.ok(elapsed < 5_000, `answered after ${Math.round(elapsed)} ms`);
    const resumptions = await toolset.callTool("resumptions", {});
    assert.ok(Number(resumptions.content) >= 1, `the server saw ${resumptions.content} GET with Last-Event-ID`);
    assert.equal(toolset.status, "connected");
  });
});
