import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { mcpServersFromFlags, splitCommandLine, usesAgentOptions } from "../../src/cli/agent-setup.js";
import { cleanEnv, runCli } from "./helpers.js";

const everythingServerPath = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url));

describe("--mcp values", () => {
  it("reads a URL as an HTTP server and anything else as a stdio command line", () => {
    assert.deepEqual(mcpServersFromFlags(["http://tools.local:8000/mcp", `node "/path with space/server.js" stdio --flag='a b'`]), [
      { name: "tools-local", url: "http://tools.local:8000/mcp" },
      { name: "node-2", command: "node", args: ["/path with space/server.js", "stdio", "--flag='a", "b'"] },
    ]);
    assert.deepEqual(splitCommandLine(`npx -y '@scope/pkg' "x y"`), ["npx", "-y", "@scope/pkg", "x y"]);
  });
  it("rejects an empty value and a broken URL, naming the flag", () => {
    assert.throws(() => mcpServersFromFlags(["  "]), /--mcp: expects a URL or a command/);
    assert.throws(() => mcpServersFromFlags(["http://"]), /--mcp: "http:\/\/" is not a valid URL/);
  });
  it("says when the configured agent replaces the demo", () => {
    assert.equal(usesAgentOptions({}), false);
    assert.equal(usesAgentOptions({ mcp: [] }), false);
    assert.equal(usesAgentOptions({ agent: "a.yaml" }), true);
    assert.equal(usesAgentOptions({ session: "s" }), true);
    assert.equal(usesAgentOptions({ mcp: ["http://x"] }), true);
  });
});

describe("chat with --agent and --mcp (a real MCP server over stdio)", () => {
  it("uses the agent file's name and calls the MCP server's tool", async () => {
    const directory = await mkdtemp(join(tmpdir(), "agentloop-chat-agent-"));
    try {
      const agentFile = join(directory, "agent.yaml");
      await writeFile(agentFile, "name: file-agent\ninstructions: Use the echo tool.\nmemory:\n  type: memory\n");
      const script = JSON.stringify([JSON.stringify({ tool_calls: [{ id: "c1", name: "echo", arguments: { message: "via mcp" } }] }), "Echoed."]);
      const result = await runCli(
        ["chat", "--agent", agentFile, "--mcp", `${process.execPath} ${everythingServerPath} stdio`, "--mock", script],
        cleanEnv(),
        "echo something\n/exit\n",
      );
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, /^file-agent · session chat_/m);
      assert.match(result.stdout, /✓ echo \d+(\.\d+)? (ms|s) {2}Echo: via mcp/);
      assert.match(result.stdout, /Echoed\./);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });
});
