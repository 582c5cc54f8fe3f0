import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, type LoopEvent, type Model, type Tool } from "../../src/index.js";
import type { Toolset } from "../../src/loop/types.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { calls } from "./helpers.js";

function echo(name: string): Tool {
  return {
    name,
    description: `echoes as ${name}`,
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    execute: (args) => `${name}:${(args as { text: string }).text}`,
  };
}

/** A plain toolset: what an MCP toolset looks like to the agent. */
class ListToolset implements Toolset {
  toolsVersion = 0;
  loadedTools: Tool[];
  /** How often the agent read `loadedTools`. */
  reads = 0;
  constructor(
    readonly name: string,
    tools: Tool[],
  ) {
    const list = tools;
    this.loadedTools = list;
    // Count reads, so the test can see that an unchanged version is not re-read.
    Object.defineProperty(this, "loadedTools", {
      get: () => {
        this.reads++;
        return list;
      },
    });
  }
  set(tools: Tool[]): void {
    Object.defineProperty(this, "loadedTools", {
      get: () => {
        this.reads++;
        return tools;
      },
    });
    this.toolsVersion++;
  }
}

/** A scripted model that runs `before(callIndex)` as each model call starts. */
function hookedModel(script: string[], before: (call: number) => void): { model: Model; requests: ScriptedModel["requests"] } {
  const inner = new ScriptedModel(script);
  let count = 0;
  const model: Model = {
    provider: inner.provider,
    modelId: inner.modelId,
    stream(request) {
      before(count++);
      return inner.stream(request);
    },
  };
  return { model, requests: inner.requests };
}

const names = (request: { tools?: Array<{ name: string }> }) => (request.tools ?? []).map((tool) => tool.name);

test("a toolset's tools are read again only when its version changed; tools and toolsets keep their order", async () => {
  const toolset = new ListToolset("live", [echo("a")]);
  const { model, requests } = hookedModel([calls(["a", { text: "1" }]), calls(["b", { text: "2" }]), "done"], (call) => {
    if (call === 1) toolset.set([echo("a"), echo("b")]);
  });
  const agent = new Agent({ model, tools: [echo("first"), toolset, echo("last")] });
  const readsAtConstruction = toolset.reads;
  const result = await agent.run("go");
  assert.equal(result.state, "COMPLETED", result.reason);
  assert.deepEqual(names(requests[0]!), ["first", "a", "last"]);
  // The change happened while the second model call started: the third call (and the wave) see it.
  assert.deepEqual(names(requests[1]!), ["first", "a", "last"]);
  assert.deepEqual(names(requests[2]!), ["first", "a", "b", "last"]);
  assert.equal(result.messages.filter((message) => message.role === "tool").length, 2);
  assert.equal(toolset.reads - readsAtConstruction, 1, "read once, after the one change");
});

test("a call to a tool that left its toolset after the model answered gets the Unknown tool error result", async () => {
  const toolset = new ListToolset("live", [echo("gone"), echo("stays")]);
  // The model's answer names "gone"; the toolset drops it while the model streams that answer.
  const { model } = hookedModel([calls(["gone", { text: "x" }, "c1"], ["stays", { text: "y" }, "c2"]), "ok"], (call) => {
    if (call === 0) toolset.set([echo("stays")]);
  });
  const run = new Agent({ model, tools: [toolset] }).run("go");
  const events: LoopEvent[] = [];
  for await (const event of run) events.push(event);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  const ends = events.filter((event): event is Extract<LoopEvent, { type: "tool-end" }> => event.type === "tool-end");
  const gone = ends.find((event) => event.toolCallId === "c1")!;
  assert.equal(gone.isError, true);
  assert.equal(gone.errorKind, "unknown_tool");
  assert.equal(gone.output, "Unknown tool: gone. Available tools: stays");
  assert.equal(ends.find((event) => event.toolCallId === "c2")!.output, "stays:y");
});

test("a toolset change that makes two tools share a name fails the run with an error naming the tool", async () => {
  const toolset = new ListToolset("live", []);
  const { model, requests } = hookedModel([calls(["local", { text: "1" }]), "never"], () => undefined);
  const local: Tool = { ...echo("local"), execute: () => {
      toolset.set([echo("local")]);
      return "changed";
    },
  };
  const run = new Agent({ model, tools: [local, toolset] }).run("go");
  const events: LoopEvent[] = [];
  for await (const event of run) events.push(event);
  const result = await run;
  assert.equal(result.state, "FAILED");
  assert.equal(result.error?.kind, "configuration");
  assert.equal(result.reason, 'agent "agent": two tools are named "local" (from toolset "live")');
  assert.equal(requests.length, 1);
  const error = events.find((event) => event.type === "error");
  assert.ok(error && error.type === "error" && error.fatal);
  assert.equal(events.filter((event) => event.type === "run-end").length, 1);
  // The transcript stays valid: the tool result of the first wave is there.
  assert.equal(result.messages.at(-1)?.role, "tool");
});

test("a clash found before a wave cancels the wave's calls and fails the run", async () => {
  const toolset = new ListToolset("live", [echo("remote")]);
  const { model } = hookedModel([calls(["remote", { text: "1" }, "c1"]), "never"], (call) => {
    if (call === 0) toolset.set([echo("remote"), echo("local")]);
  });
  let ran = false;
  const local: Tool = { ...echo("local"), execute: () => {
      ran = true;
      return "ran";
    },
  };
  const result = await new Agent({ model, tools: [local, toolset] }).run("go");
  assert.equal(result.state, "FAILED");
  assert.match(result.reason, /two tools are named "local" \(from toolset "live"\)/);
  assert.equal(ran, false);
  const last = result.messages.at(-1)!;
  assert.equal(last.role, "tool");
  assert.ok(last.role === "tool" && last.isError);
});

test("the Agent checks toolsets when built: shape and duplicate names", () => {
  const model = new ScriptedModel(["x"]);
  assert.throws(() => new Agent({ model, tools: [echo("a"), new ListToolset("live", [echo("a")])] }), {
    name: "TypeError",
    message: 'Agent config: two tools are named "a" (from toolset "live")',
  });
  assert.throws(() => new Agent({ model, tools: [{ toolsVersion: 1 } as unknown as Toolset] }), /every toolset a numeric toolsVersion and a loadedTools array/);
  assert.throws(
    () => new Agent({ model, tools: [new ListToolset("broken", [{ name: "nameless" } as unknown as Tool])] }),
    /every tool needs a name and an execute function \(got "nameless" \(from toolset "broken"\)\)/,
  );
  // Plain tools behave as before.
  assert.throws(() => new Agent({ model, tools: [echo("a"), echo("a")] }), { message: 'Agent config: two tools are named "a"' });
  const agent = new Agent({ model, tools: [echo("a"), new ListToolset("live", [echo("b")])] });
  assert.deepEqual(
    agent.toolDefinitions().map((definition) => definition.name),
    ["a", "b"],
  );
});
