import assert from "node:assert/strict";
import { test } from "node:test";
import { connectMcp } from "../../src/mcp/index.js";
import { dynamicServerPath, waitFor } from "./helpers.js";

test("the cached tool list is refreshed when the server sends tools/list_changed", async () => {
  const changes: string[][] = [];
  const toolset = await connectMcp({
    name: "dynamic",
    command: process.execPath,
    args: [dynamicServerPath],
    onToolsChanged: (names) => changes.push(names),
  });
  try {
    const tools = await toolset.tools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ["dynamic.add-tool", "dynamic.remove-tool"]);

    await toolset.callTool("add-tool", { name: "greet" });
    await waitFor(() => tools.some((tool) => tool.name === "dynamic.greet"), 5000, "the new tool to appear");
    // The same array is updated in place, so an agent holding it sees the new tool.
    const greet = tools.find((tool) => tool.name === "dynamic.greet")!;
    assert.equal(greet.description, "Added at runtime: greet");
    assert.equal((await toolset.callTool("greet", {})).content, "hello from greet");
    assert.ok(changes.some((names) => names.includes("dynamic.greet")));

    // An explicit refresh lists the same tools again.
    assert.deepEqual((await toolset.refreshTools()).map((tool) => tool.name).sort(), ["dynamic.add-tool", "dynamic.greet", "dynamic.remove-tool"]);

    await toolset.callTool("remove-tool", { name: "greet" });
    await waitFor(() => !tools.some((tool) => tool.name === "dynamic.greet"), 5000, "the tool to disappear");
    assert.deepEqual((await toolset.tools()).length, 2);
  } finally {
    await toolset.close();
  }
});

test("allowedTools also filters tools added later", async () => {
  const toolset = await connectMcp({ name: "dynamic", command: process.execPath, args: [dynamicServerPath], allowedTools: ["add-tool", "wanted"] });
  try {
    const tools = await toolset.tools();
    await toolset.callTool("add-tool", { name: "unwanted" });
    await toolset.callTool("add-tool", { name: "wanted" });
    await waitFor(() => tools.some((tool) => tool.name === "dynamic.wanted"), 5000, "the allowed tool");
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ["dynamic.add-tool", "dynamic.wanted"]);
  } finally {
    await toolset.close();
  }
});

test("the tool list belongs to the connection: a restarted server's list replaces the old one", async () => {
  const toolset = await connectMcp({ name: "dynamic", command: process.execPath, args: [dynamicServerPath] });
  try {
    const tools = await toolset.tools();
    await toolset.callTool("add-tool", { name: "ephemeral" });
    await waitFor(() => tools.some((tool) => tool.name === "dynamic.ephemeral"), 5000, "the added tool");
    process.kill(toolset.pid!, "SIGKILL");
    await waitFor(() => toolset.status === "disconnected", 5000, "the toolset to notice the exit");
    // The next call reconnects to a fresh server process, which never had the added tool.
    assert.equal((await toolset.callTool("add-tool", { name: "other" })).content, "added other");
    assert.equal(toolset.reconnects, 1);
    await waitFor(() => tools.some((tool) => tool.name === "dynamic.other"), 5000, "the tool added after the restart");
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ["dynamic.add-tool", "dynamic.other", "dynamic.remove-tool"]);
  } finally {
    await toolset.close();
  }
});
