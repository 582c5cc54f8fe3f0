// An MCP server that cannot start or connect: `run` fails at start (exit 2, naming the server and
// the reason); `chat` and `serve` go on without it and say which (serve: on `/ready`). Real child processes.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { cleanEnv, runCli, spawnCli } from "./helpers.js";

let directory: string;
before(async () => {
  directory = await mkdtemp(join(tmpdir(), "agentloop-mcp-start-"));
});
after(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe("an MCP server that cannot start", { concurrency: 2 }, () => {
  it("run --mcp fails at start, exit 2, naming the server and the reason", async () => {
    const result = await runCli(["run", "hi", "--mock", '["never"]', "--mcp", "/nonexistent/mcp-server --stdio"], cleanEnv());
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^agentloop: MCP server "mcp-server-1" \(stdio: \/nonexistent\/mcp-server --stdio\): could not connect: spawn \/nonexistent\/mcp-server ENOENT\n$/);
    assert.doesNotMatch(result.stdout, /never/);
  });

  it("run --agent with a server that exits at once fails the same way", async () => {
    const file = join(directory, "broken-mcp.yaml");
    await writeFile(file, `name: broken\nmcpServers:\n  - name: quitter\n    command: ${process.execPath}\n    args: ["-e", "process.exit(3)"]\n`);
    const result = await runCli(["run", "hi", "--agent", file, "--mock", '["never"]'], cleanEnv());
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^agentloop: MCP server "quitter" .*could not connect/);
  });

  it("chat keeps going without it and says which server is unavailable", async () => {
    const result = await runCli(["chat", "--mock", '["Still here."]', "--mcp", "/nonexistent/mcp-server"], cleanEnv({ MEMORY_TYPE: "memory" }), "hi\n/exit\n");
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /unavailable: mcp mcp-server-1 \(.*ENOENT\)/);
    assert.match(result.stdout, /Still here\./);
  });

  it("serve keeps going, /ready names the server, and the action protocol answers under --tool-call-mode", async () => {
    const file = join(directory, "serve-broken.yaml");
    await writeFile(file, "name: server-agent\nmcpServers:\n  - name: ghost\n    command: /nonexistent/ghost-server\nmemory:\n  type: memory\n");
    const cli = spawnCli(
      ["serve", "--agent", file, "--port", "0", "--host", "127.0.0.1", "--json", "--tool-call-mode", "action", "--max-steps", "2", "--mock", JSON.stringify(["{}", "Hello from the action protocol."])],
      cleanEnv(),
    );
    try {
      const [, url] = (await cli.waitFor(/"event":"listening".*"url":"([^"]+)"/, "stdout", 60_000)) as RegExpMatchArray;
      await cli.waitFor(/"event":"ready","status":"degraded"/, "stdout", 60_000);
      const ready = (await (await fetch(`${url}/ready`)).json()) as { status: string; unavailable: Array<{ kind: string; name: string; reason: string }> };
      assert.equal(ready.status, "degraded");
      assert.deepEqual(
        ready.unavailable.map(({ kind, name }) => ({ kind, name })),
        [{ kind: "mcp", name: "ghost" }],
      );
      assert.match(ready.unavailable[0].reason, /ENOENT/);
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }),
      });
      const body = (await response.json()) as { choices: Array<{ message: { content: string } }> };
      assert.equal(body.choices[0].message.content, "Hello from the action protocol.");
    } finally {
      cli.child.kill("SIGTERM");
      await cli.exited;
    }
  });
});
