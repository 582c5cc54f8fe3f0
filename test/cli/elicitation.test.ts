// An MCP server's question to the user (elicitation), through the real CLI as a child process and a
// real MCP server process: `chat` asks it inline (answers read from the chat's input, checked by
// type); `run` is unattended and declines with the reason.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { elicitServerPath } from "../mcp/helpers.js";
import { cleanEnv, runCli } from "./helpers.js";

const book = JSON.stringify({ tool_calls: [{ id: "call_1", name: "book-table", arguments: {} }] });
const mcp = `${JSON.stringify(process.execPath)} ${JSON.stringify(elicitServerPath)}`;

describe("elicitation in the CLI", () => {
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
