// An MCP server's question to the user (elicitation), through the real CLI as a child process and a
// real MCP server process: `chat` asks it inline (answers read from the chat's input, checked by
// type); `run` is unattended and declines with the reason.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { elicitServerPath, everythingServerPath } from "../mcp/helpers.js";
import { cleanEnv, postChat, readyUrl, runCli, spawnCli } from "./helpers.js";

const book = JSON.stringify({ tool_calls: [{ id: "call_1", name: "book-table", arguments: {} }] });
const mcp = `${JSON.stringify(process.execPath)} ${JSON.stringify(elicitServerPath)}`;

describe("elicitation in the CLI", { concurrency: true }, () => {
  it("chat asks each field inline, re-asks a wrong answer, and the server gets the typed answers", async () => {
    const input = ["book a table", "4", "Ada", "maybe", "y", "terrace", "/exit", ""].join("\n");
    const result = await runCli(["chat", "--mcp", mcp, "--mock", JSON.stringify([book, "Booked."])], cleanEnv({ MEMORY_TYPE: "memory" }), input);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /\? MCP server "node-1" asks: How many guests, and may we text you\?/);
    assert.match(result.stderr, /Guests \(integer\): /);
    assert.match(result.stderr, /answer yes or no/);
    assert.match(result.stderr, /seating \[inside\/terrace\] optional: /);
    assert.match(result.stdout, /✓ book-table/);
    // (The renderer shortens the result line.)
    assert.match(result.stdout, /"action":"accept","content":\{"guests":4,"name":"Ada","texts":true,"seating":"t/);
    assert.match(result.stdout, /Booked\./);
  });

  it("chat: /decline refuses the question", async () => {
    const result = await runCli(["chat", "--mcp", mcp, "--mock", JSON.stringify([book, "Not booked."])], cleanEnv({ MEMORY_TYPE: "memory" }), "book\n/decline\n/exit\n");
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /"action":"decline"/);
  });

  it("run declines with the reason: nobody is there to ask", async () => {
    const result = await runCli(["run", "book a table", "--mcp", mcp, "--json", "--mock", JSON.stringify([book, "Could not book."])], cleanEnv({ MEMORY_TYPE: "memory" }));
    assert.equal(result.code, 0, result.stderr);
    const toolEnd = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .find((event) => event.type === "tool-end");
    assert.match(JSON.stringify(toolEnd), /decline.*no one to ask: this agent runs unattended/);
  });
});

// The reference server's own elicitation tool (@modelcontextprotocol/server-everything, stdio): a
// dozen fields of every kind (formats, defaults, titled choices, multi-select).
describe("elicitation in the CLI with @modelcontextprotocol/server-everything", { concurrency: 3 }, () => {
  const everything = `${JSON.stringify(process.execPath)} ${JSON.stringify(everythingServerPath)} stdio`;
  const trigger = JSON.stringify({ tool_calls: [{ id: "call_1", name: "trigger-elicitation-request", arguments: {} }] });

  it("chat asks its fields inline; skipped fields get the server's defaults; titled choices are picked by title", async () => {
    // name, check, firstLine, email (a bad one, re-asked, then skipped), homepage, birthdate, integer, number,
    // untitled single, untitled multi, titled single (by title), titled multi, legacy titled.
    const answers = ["Ada", "y", "", "not-an-email", "", "", "", "", "", "", "", "Wonder Woman", "Salmon, Tuna", "", "/exit", ""];
    const result = await runCli(["chat", "--json", "--mcp", everything, "--mock", JSON.stringify([trigger, "Thanks."])], cleanEnv({ MEMORY_TYPE: "memory" }), ["try it", ...answers].join("\n"));
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /\? MCP server "node-1" asks: Please provide inputs for the following fields:/);
    assert.match(result.stderr, /Integer \(integer, default 42\) optional: /);
    assert.match(result.stderr, /String with email format \(email\) optional: {3}not a valid email address/);
    assert.match(result.stderr, /Titled Single Select Enum \[Superman\/Green Lantern\/Wonder Woman\] \(default Superman\)/);
    // What the server received (its raw result echo): typed answers, choices by title as their values, defaults filled in.
    const toolEnd = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line))
      .find((event) => event.type === "tool-end");
    const raw = JSON.parse(/Raw result: ([\s\S]*)$/.exec(String(toolEnd.result.content))![1]!) as { action: string; content: Record<string, unknown> };
    assert.equal(raw.action, "accept");
    assert.equal(raw.content.name, "Ada");
    assert.equal(raw.content.check, true);
    assert.equal(raw.content.integer, 42);
    assert.equal(raw.content.titledSingleSelectEnum, "hero-3");
    assert.deepEqual(raw.content.titledMultipleSelectEnum, ["fish-2", "fish-1"]);
    assert.equal(raw.content.email, undefined);
    assert.match(result.stdout, /Thanks\./);
  });

  it("run declines the everything server's question with the reason", async () => {
    const result = await runCli(["run", "try it", "--json", "--mcp", everything, "--mock", JSON.stringify([trigger, "Nobody answered."])], cleanEnv({ MEMORY_TYPE: "memory" }));
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /User declined to provide the requested information/);
    assert.match(result.stdout, /no one to ask: this agent runs unattended/);
  });

  it("serve declines it too: nobody is at a server's console", async () => {
    const directory = await mkdtemp(join(tmpdir(), "agentloop-elicit-serve-"));
    const file = join(directory, "agent.yaml");
    await writeFile(file, `name: server-agent\nmcpServers:\n  - name: everything\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(everythingServerPath)}, stdio]\nmemory:\n  type: memory\n`);
    const cli = spawnCli(["serve", "--agent", file, "--port", "0", "--host", "127.0.0.1", "--json", "--mock", JSON.stringify([trigger, "Nobody answered."])], cleanEnv());
    try {
      const url = await readyUrl(cli);
      const response = await postChat(url, "try it", { session_id: "s1" });
      assert.equal(response.status, 200);
      assert.match(JSON.stringify(await response.json()), /Nobody answered\./);
      // The tool's result, as stored: the server was told why.
      const events = JSON.stringify(await (await fetch(`${url}/memory/events?session_id=s1`)).json());
      assert.match(events, /User declined to provide the requested information/);
      assert.match(events, /no one to ask: this agent runs unattended \(agentloop run or serve\)/);
    } finally {
      cli.child.kill("SIGTERM");
      await cli.exited;
      await rm(directory, { recursive: true, force: true });
    }
  });
});
