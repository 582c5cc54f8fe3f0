// Elicitation (a server's question to the user) against a real MCP server process: the client
// declares the capability; a handler answers; without one the question is declined with a reason.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { connectMcp, type McpElicitation } from "../../src/mcp/index.js";
import { elicitServerPath } from "./helpers.js";

const server = { command: process.execPath, args: [elicitServerPath] };

describe("elicitation", () => {
  test("a handler's answer reaches the server; the handler sees the server, the message and the fields", async () => {
    const asked: McpElicitation[] = [];
    const toolset = await connectMcp({
      name: "restaurant",
      ...server,
      onElicitation: async (request) => {
        asked.push(request);
        return { action: "accept", content: { guests: 4, name: "Ada", texts: true, seating: "terrace" } };
      },
    });
    try {
      const result = await toolset.callTool("book-table", {});
      assert.equal(result.isError, false);
      assert.deepEqual(JSON.parse(result.content as string), { action: "accept", content: { guests: 4, name: "Ada", texts: true, seating: "terrace" } });
      assert.equal(asked.length, 1);
      assert.equal(asked[0]!.server, "restaurant");
      assert.equal(asked[0]!.message, "How many guests, and may we text you?");
      assert.deepEqual(Object.keys((asked[0]!.requestedSchema as { properties: object }).properties), ["guests", "name", "texts", "seating"]);
    } finally {
      await toolset.close();
    }
  });

  test("a handler that declines or cancels: the server gets exactly that", async () => {
    const toolset = await connectMcp({ name: "restaurant", ...server, onElicitation: async () => ({ action: "cancel" }) });
    try {
      assert.deepEqual(JSON.parse((await toolset.callTool("book-table", {})).content as string), { action: "cancel" });
    } finally {
      await toolset.close();
    }
  });

  test("without a handler (run, serve) the question is declined with the reason, not 'Method not found'", async () => {
    const toolset = await connectMcp({ name: "restaurant", ...server });
    try {
      const result = await toolset.callTool("book-table", {});
      assert.equal(result.isError, false, String(result.content));
      const answer = JSON.parse(result.content as string) as { action: string; _meta?: Record<string, string> };
      assert.equal(answer.action, "decline");
      assert.match(answer._meta?.["agentloop/reason"] ?? "", /no one to ask: this agent runs unattended.*How many guests/);
    } finally {
      await toolset.close();
    }
  });
});
