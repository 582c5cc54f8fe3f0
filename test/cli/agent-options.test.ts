// --agent, --session and --mcp, shared by `agentloop run` and `agentloop chat`.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { mcpServersFromFlags, splitCommandLine } from "../../src/cli/agent-setup.js";
import { openPostgresStore } from "../../src/memory/postgres.js";
import { dropSchemas, postgresUrl, uniqueSchema } from "../memory/postgres-server.js";
import { everythingServerPath } from "../mcp/helpers.js";
import { cleanEnv, runCli } from "./helpers.js";

/** The everything reference MCP server as a stdio command line for --mcp. */
const everythingCommand = `${process.execPath} ${everythingServerPath} stdio`;
/** A script in which the model calls the MCP server's echo tool, then answers. */
const echoScript = (message: string) => JSON.stringify([JSON.stringify({ tool_calls: [{ id: "c1", name: "echo", arguments: { message } }] }), "Echoed."]);

let directory: string;
let agentFile: string;
before(async () => {
  directory = await mkdtemp(join(tmpdir(), "agentloop-agent-options-"));
  agentFile = join(directory, "agent.yaml");
  await writeFile(agentFile, "name: file-agent\ninstructions: Use the echo tool.\nmemory:\n  type: memory\n");
});
after(async () => {
  await rm(directory, { recursive: true, force: true });
  await dropSchemas();
});

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
});

describe("agentloop run and chat with --agent and --mcp (a real MCP server over stdio)", () => {
  it("run: uses the agent file's agent and calls the MCP server's tool", async () => {
    const result = await runCli(["run", "echo it", "--agent", agentFile, "--mcp", everythingCommand, "--mock", echoScript("from run")], cleanEnv());
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /✓ echo .* {2}Echo: from run/);
    assert.match(result.stdout, /Echoed\./);
  });

  it("chat: uses the agent file's name and calls the MCP server's tool", async () => {
    const result = await runCli(["chat", "--agent", agentFile, "--mcp", everythingCommand, "--mock", echoScript("via mcp")], cleanEnv(), "echo something\n/exit\n");
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /^file-agent · session chat_/m);
    assert.match(result.stdout, /✓ echo \d+(\.\d+)? (ms|s) {2}Echo: via mcp/);
    assert.match(result.stdout, /Echoed\./);
  });
});

describe("agentloop run --session", () => {
  it("continues a session: the second run gets the first as history and is appended to its log", async () => {
    const schema = uniqueSchema("run");
    const memoryEnv = { MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl(), MEMORY_POSTGRES_SCHEMA: schema };
    const session = `run-${Date.now()}`;
    const first = "first: remember the number 4242, please";
    assert.equal((await runCli(["run", first, "--session", session, "--mock", '["one"]'], cleanEnv(memoryEnv))).code, 0);
    const second = await runCli(["run", "second", "--session", session, "--mock", '["two"]'], cleanEnv(memoryEnv));
    assert.equal(second.code, 0, second.stderr);
    const store = await openPostgresStore({ url: postgresUrl(), schema });
    try {
      const events = await store.events(session, { types: ["user_message", "agent_response"] });
      assert.deepEqual(
        events.map((event) => event.content),
        [first, "one", "second", "two"],
      );
      // The scripted model counts the tokens it was sent: the second request carried the first exchange.
      const sent = (await store.events(session, { types: ["run_ended"] })).map((event) => (event.metadata.usage as { inputTokens: number }).inputTokens);
      assert.ok(sent[1] > sent[0], `second run sent ${sent[1]} tokens, the first ${sent[0]}`);
    } finally {
      await store.close();
    }
  });
});
