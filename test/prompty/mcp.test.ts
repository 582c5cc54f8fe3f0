import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import type { LoopEvent } from "../../src/loop/events.js";
import type { ModelRequest } from "../../src/model/model.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { registerToolHandler, startAgent } from "../../src/prompty/index.js";
import { everythingServerPath } from "../mcp/helpers.js";

const fixture = join(fileURLToPath(new URL(".", import.meta.url)), "fixtures", "mcp.prompty");
const env = {
  ...process.env,
  NODE_BINARY: process.execPath,
  EVERYTHING_SERVER: everythingServerPath,
};

describe("prompty mcp tools", () => {
  it("connects to the declared MCP server (stdio), exposes its allowed tools and calls them", async () => {
    const requests: ModelRequest[] = [];
    const scripted = new ScriptedModel([
      JSON.stringify({ tool_calls: [{ id: "c1", name: "everything.echo", arguments: { message: "hello mcp" } }] }),
      "Echoed.",
    ]);
    const model = {
      provider: "scripted",
      modelId: "recorder",
      stream(request: ModelRequest) {
        requests.push(request);
        return scripted.stream(request);
      },
    };
    const { run } = await startAgent(fixture, {}, undefined, { model, env });
    const events: LoopEvent[] = [];
    for await (const event of run) events.push(event);
    const result = await run;
    assert.equal(result.text, "Echoed.");
    assert.deepEqual(
      requests[0].tools?.map((tool) => tool.name),
      ["everything.echo"],
    );
    const end = events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>;
    assert.equal(end.isError, false);
    assert.equal(end.output, "Echo: hello mcp");
  });

  it("uses a registered mcp kind handler instead of connecting", async () => {
    const off = registerToolHandler("mcp", (tool, args) => `handled ${tool.name} ${JSON.stringify(args)}`);
    try {
      const model = new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "c1", name: "everything", arguments: { x: 1 } }] }), "ok"]);
      const { run } = await startAgent(fixture, {}, undefined, { model, env: { NODE_BINARY: "/nonexistent", EVERYTHING_SERVER: "/nonexistent" } });
      const events: LoopEvent[] = [];
      for await (const event of run) events.push(event);
      const end = events.find((event) => event.type === "tool-end") as Extract<LoopEvent, { type: "tool-end" }>;
      assert.equal(end.output, 'handled everything {"x":1}');
    } finally {
      off();
    }
  });

  it("fails clearly when the MCP server cannot start", async () => {
    const model = new ScriptedModel(["never"]);
    await assert.rejects(
      startAgent(fixture, {}, undefined, { model, env: { NODE_BINARY: "/nonexistent/node", EVERYTHING_SERVER: "x" } }),
      /MCP server "everything".*could not connect/,
    );
  });
});
