import assert from "node:assert/strict";
import { test } from "node:test";
import type { LoopEvent } from "../../src/loop/events.js";
import { Agent } from "../../src/loop/agent.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { connectMcp } from "../../src/mcp/index.js";
import { everythingStdio, waitFor } from "./helpers.js";

const calls = (...list: Array<{ id: string; name: string; arguments: unknown }>) => JSON.stringify({ tool_calls: list });

test("an Agent calls MCP tools end to end: parallel wave, structured content, image, error result", async () => {
  const toolset = await connectMcp({ name: "everything", ...everythingStdio() });
  try {
    const model = new ScriptedModel([
      calls(
        { id: "c1", name: "everything.echo", arguments: { message: "hello" } },
        { id: "c2", name: "everything.get-structured-content", arguments: { location: "Chicago" } },
        { id: "c3", name: "everything.get-tiny-image", arguments: {} },
        { id: "c4", name: "everything.get-sum", arguments: { a: 1 } },
      ),
      "All done.",
    ]);
    const agent = new Agent({ name: "mcp-user", model, tools: await toolset.tools() });
    const run = agent.run("use the tools");
    const result = await run;
    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "All done.");
    const ends = new Map<string, Extract<LoopEvent, { type: "tool-end" }>>();
    for await (const event of run) if (event.type === "tool-end") ends.set(event.toolCallId, event);

    assert.equal(ends.get("c1")!.output, "Echo: hello");
    assert.equal(ends.get("c1")!.isError, false);
    assert.deepEqual(Object.keys(ends.get("c2")!.structured as object).sort(), ["conditions", "humidity", "temperature"]);
    const image = ends.get("c3")!.result.content;
    assert.ok(Array.isArray(image) && image.some((part) => part.type === "image" && part.mediaType === "image/png"));
    // The agent validates arguments against the MCP input schema before calling the server.
    assert.equal(ends.get("c4")!.isError, true);
    assert.match(ends.get("c4")!.output, /^Invalid arguments for tool everything\.get-sum: missing required field "b"/);

    // The second model request carried the MCP results back, in call order.
    const toolMessages = model.requests[1].messages.filter((message) => message.role === "tool");
    assert.deepEqual(
      toolMessages.map((message) => message.toolCallId),
      ["c1", "c2", "c3", "c4"],
    );
    const starts: LoopEvent[] = [];
    for await (const event of run) if (event.type === "tool-start") starts.push(event);
    assert.ok(starts.every((event) => event.type === "tool-start" && event.kind === "mcp"));
  } finally {
    await toolset.close();
  }
});

test("an MCP server that dies twice with maxReconnects 1: the run continues with an error result naming the server", async () => {
  const toolset = await connectMcp({ name: "everything", ...everythingStdio(), allowedTools: ["echo"], maxReconnects: 1 });
  try {
    const tools = await toolset.tools();
    process.kill(toolset.pid!, "SIGKILL");
    await waitFor(() => toolset.status === "disconnected");
    const first = await new Agent({
      name: "a",
      model: new ScriptedModel([calls({ id: "c1", name: "everything.echo", arguments: { message: "one" } }), "ok"]),
      tools,
    }).run("go");
    assert.equal(first.state, "COMPLETED");
    assert.equal(first.newMessages.find((message) => message.role === "tool")?.content, "Echo: one");

    process.kill(toolset.pid!, "SIGKILL");
    await waitFor(() => toolset.status === "disconnected");
    const model = new ScriptedModel([calls({ id: "c2", name: "everything.echo", arguments: { message: "two" } }), "The server is down, sorry."]);
    const second = await new Agent({ name: "b", model, tools }).run("go");
    assert.equal(second.state, "COMPLETED");
    assert.equal(second.text, "The server is down, sorry.");
    const result = second.newMessages.find((message) => message.role === "tool");
    assert.equal(result?.role === "tool" && result.isError, true);
    assert.match(String(result?.content), /MCP server "everything" is unavailable/);
  } finally {
    await toolset.close();
  }
});

test("aborting the run cancels an MCP call in flight", async () => {
  const toolset = await connectMcp({ name: "everything", ...everythingStdio(), allowedTools: ["trigger-long-running-operation", "echo"] });
  try {
    const agent = new Agent({
      name: "patient",
      model: new ScriptedModel([calls({ id: "long", name: "everything.trigger-long-running-operation", arguments: { duration: 30, steps: 300 } }), "never"]),
      tools: await toolset.tools(),
    });
    const run = agent.run("wait");
    const started = Date.now();
    for await (const event of run) {
      if (event.type === "tool-progress") {
        run.abort("enough");
        break;
      }
    }
    const result = await run;
    assert.equal(result.state, "ABORTED");
    assert.ok(Date.now() - started < 5000);
    assert.equal((await toolset.callTool("echo", { message: "alive" })).content, "Echo: alive");
  } finally {
    await toolset.close();
  }
});
