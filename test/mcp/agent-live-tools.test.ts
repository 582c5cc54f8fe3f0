import assert from "node:assert/strict";
import { test } from "node:test";
import type { LoopEvent } from "../../src/loop/events.js";
import { Agent } from "../../src/loop/agent.js";
import { connectMcp } from "../../src/mcp/index.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import type { Tool } from "../../src/tools/tool.js";
import { dynamicServerPath, waitFor } from "./helpers.js";

const calls = (...list: Array<{ id: string; name: string; arguments: unknown }>) => JSON.stringify({ tool_calls: list });
const toolNames = (request: { tools?: Array<{ name: string }> }) => (request.tools ?? []).map((tool) => tool.name).sort();

test("an Agent given an MCP toolset sees tools the server adds during the run (tools/list_changed)", async () => {
  const toolset = await connectMcp({ name: "dynamic", command: process.execPath, args: [dynamicServerPath] });
  try {
    const versionBefore = toolset.toolsVersion;
    // The list_changed notification arrives after add-tool's result (and is debounced): this local
    // tool waits for the refreshed list, so the third model call deterministically follows it.
    const settle: Tool = {
      name: "settle",
      description: "waits for the server's new tool list",
      parameters: { type: "object", properties: {} },
      execute: async () => {
        await waitFor(() => toolset.toolsVersion > versionBefore, 5000, "the refreshed tool list");
        return "settled";
      },
    };
    const model = new ScriptedModel([
      calls({ id: "c1", name: "dynamic.add-tool", arguments: { name: "greet" } }),
      calls({ id: "c2", name: "settle", arguments: {} }),
      calls({ id: "c3", name: "dynamic.greet", arguments: {} }),
      "Greeted.",
    ]);
    const agent = new Agent({ model, tools: [settle, toolset] });
    assert.deepEqual(
      agent.currentTools().map((tool) => tool.name),
      ["settle", "dynamic.add-tool", "dynamic.remove-tool"],
    );
    const run = agent.run("add a greeting tool and use it");
    const result = await run;
    assert.equal(result.state, "COMPLETED", result.reason);
    assert.equal(result.text, "Greeted.");

    assert.deepEqual(toolNames(model.requests[0]!), ["dynamic.add-tool", "dynamic.remove-tool", "settle"]);
    assert.deepEqual(toolNames(model.requests[2]!), ["dynamic.add-tool", "dynamic.greet", "dynamic.remove-tool", "settle"]);
    const greet = model.requests[2]!.tools!.find((tool) => tool.name === "dynamic.greet")!;
    assert.equal(greet.description, "Added at runtime: greet");

    const ends = new Map<string, Extract<LoopEvent, { type: "tool-end" }>>();
    for await (const event of run) if (event.type === "tool-end") ends.set(event.toolCallId, event);
    assert.equal(ends.get("c3")!.isError, false);
    assert.equal(ends.get("c3")!.output, "hello from greet");

    // A removed tool leaves the next run's requests too.
    await toolset.callTool("remove-tool", { name: "greet" });
    await waitFor(() => !toolset.loadedTools.some((tool) => tool.name === "dynamic.greet"), 5000, "the tool to disappear");
    const second = new ScriptedModel(["Fine."]);
    const later = new Agent({ model: second, tools: [toolset] });
    assert.equal((await later.run("hi")).state, "COMPLETED");
    assert.deepEqual(toolNames(second.requests[0]!), ["dynamic.add-tool", "dynamic.remove-tool"]);
    assert.deepEqual(
      agent.currentTools().map((tool) => tool.name),
      ["settle", "dynamic.add-tool", "dynamic.remove-tool"],
    );
  } finally {
    await toolset.close();
  }
});

test("a server's new tool that clashes with a local tool's name fails the next model call, naming the tool", async () => {
  const toolset = await connectMcp({ name: "dynamic", command: process.execPath, args: [dynamicServerPath], naming: { prefix: false } });
  try {
    const versionBefore = toolset.toolsVersion;
    const lookup: Tool = {
      name: "lookup",
      description: "a local tool",
      parameters: { type: "object", properties: {} },
      execute: async () => {
        await waitFor(() => toolset.toolsVersion > versionBefore, 5000, "the refreshed tool list");
        return "looked up";
      },
    };
    const model = new ScriptedModel([
      calls({ id: "c1", name: "add-tool", arguments: { name: "lookup" } }, { id: "c2", name: "lookup", arguments: {} }),
      "never reached",
    ]);
    const agent = new Agent({ model, tools: [lookup, toolset] });
    const run = agent.run("clash");
    const result = await run;
    assert.equal(result.state, "FAILED");
    assert.match(result.reason, /two tools are named "lookup" \(from toolset "dynamic"\)/);
    assert.equal(result.error?.kind, "configuration");
    assert.equal(model.requests.length, 1, "the second model call is not made");
    const errors: LoopEvent[] = [];
    for await (const event of run) if (event.type === "error" || event.type === "run-end") errors.push(event);
    assert.deepEqual(
      errors.map((event) => event.type),
      ["error", "run-end"],
    );
    // The public accessors say the same.
    assert.throws(() => agent.toolDefinitions(), /two tools are named "lookup"/);

    // Once the server drops the clashing tool, the same agent works again.
    await toolset.callTool("remove-tool", { name: "lookup" });
    await waitFor(() => !toolset.loadedTools.some((tool) => tool.name === "lookup"), 5000, "the clashing tool to go");
    const recovered = new Agent({ model: new ScriptedModel(["ok"]), tools: [lookup, toolset] });
    assert.equal((await recovered.run("again")).state, "COMPLETED");
    assert.deepEqual(
      agent.currentTools().map((tool) => tool.name),
      ["lookup", "add-tool", "remove-tool"],
    );
  } finally {
    await toolset.close();
  }
});

test("McpToolsetGroup is a toolset too: its version follows every server's list", async () => {
  const group = await connectMcp([
    { name: "one", command: process.execPath, args: [dynamicServerPath] },
    { name: "two", command: process.execPath, args: [dynamicServerPath] },
  ]);
  try {
    const model = new ScriptedModel(["first", "second"]);
    const agent = new Agent({ model, tools: [group] });
    assert.equal((await agent.run("a")).state, "COMPLETED");
    const before = group.toolsVersion;
    await group.get("two")!.callTool("add-tool", { name: "extra" });
    await waitFor(() => group.toolsVersion > before, 5000, "the group's version to change");
    assert.equal((await agent.run("b")).state, "COMPLETED");
    assert.deepEqual(toolNames(model.requests[0]!), ["one.add-tool", "one.remove-tool", "two.add-tool", "two.remove-tool"]);
    assert.deepEqual(toolNames(model.requests[1]!), ["one.add-tool", "one.remove-tool", "two.add-tool", "two.extra", "two.remove-tool"]);
  } finally {
    await group.close();
  }
});

test("an agent built from settings (agentloop serve) follows its MCP servers' tool lists, and so does runtime.tools", async () => {
  const { buildAgentRuntime } = await import("../../src/config/build-agent.js");
  const { settingsFrom } = await import("../../src/config/settings.js");
  const settings = settingsFrom({ name: "live", mcpServers: [{ name: "dynamic", command: process.execPath, args: [dynamicServerPath] }] }, {});
  const model = new ScriptedModel([calls({ id: "c1", name: "add-tool", arguments: { name: "greet" } }), "added"]);
  const runtime = await buildAgentRuntime(settings, { model, env: {} });
  try {
    assert.deepEqual(runtime.unavailable, []);
    assert.deepEqual(runtime.tools.map((tool) => tool.name).sort(), ["add-tool", "remove-tool"]);
    assert.equal((await runtime.agent.run("add greet")).state, "COMPLETED");
    await waitFor(() => runtime.tools.some((tool) => tool.name === "greet"), 5000, "runtime.tools to list greet");
    // The same agent's next run: its first model call (the scripted model restarts per run) lists greet.
    await runtime.agent.run("again");
    assert.deepEqual(toolNames(model.requests[0]!), ["add-tool", "remove-tool"]);
    assert.deepEqual(toolNames(model.requests[2]!), ["add-tool", "greet", "remove-tool"]);
  } finally {
    await runtime.close();
  }
});
