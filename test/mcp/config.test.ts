import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { connectMcp, exposedToolName, type McpServerConfig, mapCallResult, mcpToolset, normalizeMcpUrl } from "../../src/mcp/index.js";
import { everythingStdio } from "./helpers.js";

function configurationError(pattern: RegExp) {
  return (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "configuration" && pattern.test(error.message);
}

describe("config validation", () => {
  test("names the problem", () => {
    assert.throws(() => mcpToolset({ command: "x" } as unknown as McpServerConfig), configurationError(/non-empty `name`/));
    assert.throws(() => mcpToolset({ name: "a" } as McpServerConfig), configurationError(/"a": needs `command` \(stdio\) or `url`/));
    assert.throws(() => mcpToolset({ name: "a", command: "x", url: "http://h" } as unknown as McpServerConfig), configurationError(/not both/));
    assert.throws(() => mcpToolset({ name: "a", command: "" }), configurationError(/`command` must be a non-empty string/));
    assert.throws(() => mcpToolset({ name: "a", command: "x", args: [1] as unknown as string[] }), configurationError(/`args` must be an array of strings/));
    assert.throws(() => mcpToolset({ name: "a", url: "not a url" }), configurationError(/"a": `url` is not a valid URL/));
    assert.throws(() => mcpToolset({ name: "a", url: "ftp://host/x" }), configurationError(/must be http or https/));
    assert.throws(() => mcpToolset({ name: "a", command: "x", maxReconnects: -1 }), configurationError(/maxReconnects/));
    assert.throws(() => mcpToolset({ name: "a", command: "x", requestTimeoutMs: 0 }), configurationError(/"a": `requestTimeoutMs` must be a positive number of milliseconds/));
    assert.throws(() => mcpToolset({ name: "a", command: "x", connectTimeoutMs: Number.NaN }), configurationError(/`connectTimeoutMs` must be a positive/));
  });

  test("two servers with one name are refused", async () => {
    await assert.rejects(
      connectMcp([
        { name: "same", command: "x" },
        { name: "same", command: "y" },
      ]),
      configurationError(/"same" is used twice/),
    );
  });
});

describe("URL and naming rules", () => {
  test("KAOS style: /mcp is appended when the path lacks it", () => {
    assert.equal(normalizeMcpUrl("http://mcp-server:8000").href, "http://mcp-server:8000/mcp");
    assert.equal(normalizeMcpUrl("http://mcp-server:8000/").href, "http://mcp-server:8000/mcp");
    assert.equal(normalizeMcpUrl("http://host/mcp").href, "http://host/mcp");
    assert.equal(normalizeMcpUrl("http://host/mcp/").href, "http://host/mcp/");
    assert.equal(normalizeMcpUrl("http://host/api?x=1").href, "http://host/api/mcp?x=1");
    assert.equal(normalizeMcpUrl("http://host/custom", false).href, "http://host/custom");
  });

  test("tool names", () => {
    assert.equal(exposedToolName("fs", "read"), "fs.read");
    assert.equal(exposedToolName("fs", "read", { separator: "_" }), "fs_read");
    assert.equal(exposedToolName("fs", "read", { prefix: "files" }), "files.read");
    assert.equal(exposedToolName("fs", "read", { prefix: false }), "read");
    assert.equal(exposedToolName("fs", "read", { prefix: "" }), "read");
  });
});

describe("result mapping", () => {
  test("text joined, structured rendered when there is no text, other blocks described", () => {
    assert.deepEqual(
      mapCallResult({
        content: [
          { type: "text", text: "a" },
          { type: "text", text: "b" },
        ],
      }),
      { content: "a\nb", isError: false },
    );
    assert.deepEqual(mapCallResult({ content: [], structuredContent: { x: 1 } }), { content: '{"x":1}', isError: false, structured: { x: 1 } });
    assert.deepEqual(mapCallResult({ content: [{ type: "text", text: "bad" }], isError: true }), { content: "bad", isError: true });
    assert.equal(
      mapCallResult({
        content: [
          { type: "resource_link", uri: "file:///a", name: "a" },
          { type: "resource", resource: { uri: "file:///b", text: "inline" } },
          { type: "audio", data: "", mimeType: "audio/wav" },
        ],
      }).content,
      "[resource link file:///a a]\ninline\n[audio audio/wav]",
    );
    assert.deepEqual(mapCallResult({ toolResult: { legacy: true } }), { content: '{"legacy":true}', isError: false });
  });
});

describe("stdio connection failures", () => {
  test("a command that does not exist fails with an error naming the server and the command", async () => {
    await assert.rejects(connectMcp({ name: "ghost", command: "/nonexistent/agentloop-mcp-server", args: ["--x"] }), (error: unknown) => {
      assert.ok(AgentLoopError.isInstance(error));
      assert.equal(error.kind, "network");
      assert.match(error.message, /MCP server "ghost" \(stdio: \/nonexistent\/agentloop-mcp-server --x\): could not connect/);
      return true;
    });
  });

  test("a process that exits at once reports its stderr", async () => {
    await assert.rejects(
      connectMcp({ name: "crasher", command: process.execPath, args: ["-e", "console.error('missing API key'); process.exit(3)"] }),
      /MCP server "crasher".*could not connect.*missing API key/,
    );
  });

  test("a lazy toolset whose server cannot start returns error results from its calls", async () => {
    const toolset = mcpToolset({ name: "ghost", command: "/nonexistent/agentloop-mcp-server" });
    const result = await toolset.callTool("echo", {});
    assert.equal(result.isError, true);
    assert.match(result.content as string, /MCP server "ghost"/);
    await toolset.close();
  });

  test("connectMcp with several servers returns a group, and closes the others when one fails", async () => {
    const group = await connectMcp([
      { name: "one", ...everythingStdio(), allowedTools: ["echo"] },
      { name: "two", ...everythingStdio(), allowedTools: ["get-sum"] },
    ]);
    try {
      assert.deepEqual(
        group.tools.map((tool) => tool.name),
        ["one.echo", "two.get-sum"],
      );
      assert.equal(group.get("two")?.status, "connected");
    } finally {
      await group.close();
    }
    assert.equal(group.get("one")?.status, "closed");
    await assert.rejects(
      connectMcp([
        { name: "good", ...everythingStdio() },
        { name: "bad", command: "/nonexistent/agentloop-mcp-server" },
      ]),
      /MCP server "bad"/,
    );
  });
});
