import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { cleanEnv, runCli } from "./helpers.js";

const everythingServerPath = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url));
const postgresUrl = process.env.AGENTLOOP_TEST_PG_URL;

describe("agentloop run --agent / --mcp / --session", () => {
  it("runs the agent file's agent with an MCP server's tools", async () => {
    const directory = await mkdtemp(join(tmpdir(), "agentloop-run-agent-"));
    try {
      const agentFile = join(directory, "agent.yaml");
      await writeFile(agentFile, "name: file-agent\ninstructions: Use the echo tool.\n");
      const script = JSON.stringify([JSON.stringify({ tool_calls: [{ id: "c1", name: "echo", arguments: { message: "from run" } }] }), "Echoed."]);
      const result = await runCli(["run", "echo it", "--agent", agentFile, "--mcp", `${process.execPath} ${everythingServerPath} stdio`, "--mock", script], cleanEnv());
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /✓ echo .* {2}Echo: from run/);
      assert.match(result.stdout, /Echoed\./);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("continues a session: the second run sees the first in its log", { skip: postgresUrl ? false : "set AGENTLOOP_TEST_PG_URL (the CI does)" }, async () => {
    const memoryEnv = { MEMORY_TYPE: "postgres", MEMORY_POSTGRES_URL: postgresUrl!, MEMORY_POSTGRES_SCHEMA: `run_${Date.now()}` };
    const session = `run-${Date.now()}`;
    assert.equal((await runCli(["run", "first", "--session", session, "--mock", '["one"]'], cleanEnv(memoryEnv))).code, 0);
    assert.equal((await runCli(["run", "second", "--session", session, "--mock", '["two"]'], cleanEnv(memoryEnv))).code, 0);
    const events = await runCli(["events", session, "--json"], cleanEnv(memoryEnv));
    const body = JSON.parse(events.stdout) as { events: Array<{ event_type: string; content: unknown }> };
    assert.deepEqual(
      body.events.filter((event) => event.event_type === "user_message").map((event) => event.content),
      ["first", "second"],
    );
  });

  it("rejects a bad --mcp or --session value, naming the flag", async () => {
    const result = await runCli(["run", "x", "--mcp", "http://", "--mock", '["x"]'], cleanEnv({ MEMORY_TYPE: "memory" }));
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--mcp: "http:\/\/" is not a valid URL/);
  });
});
