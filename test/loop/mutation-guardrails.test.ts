// Guardrails (src/loop/guardrails.ts) at their edges, as a user of the public API sees them: how a
// denial reads, how a verdict is named in the reason, which rules match which tools, which settings
// are refused. Written for the surviving mutants of `npm run mutation -- src/loop/guardrails.ts`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, defineTool, type Model, type ModelEvent, type RunResult, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType } from "./helpers.js";

function tool(name: string) {
  const ran: string[] = [];
  return {
    ran,
    tool: defineTool({
      name,
      description: name,
      parameters: { type: "object", properties: {} },
      execute: () => {
        ran.push(name);
        return `${name} ran`;
      },
    }),
  };
}

function results(result: RunResult): Array<[string, unknown]> {
  return result.messages.filter((message): message is ToolResultMessage => message.role === "tool").map((message) => [message.toolCallId, message.content]);
}

/** The result a tool guardrail's verdict gives one call. */
async function toolVerdict(verdict: () => unknown): Promise<string> {
  const read = tool("read");
  const result = await new Agent({ model: new ScriptedModel([calls(["read", {}, "c"]), "done"]), tools: [read.tool], guardrails: { tool: verdict as never } }).run("go");
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(read.ran, []);
  return String(results(result)[0]![1]);
}

test("a denial without a reason (or an empty one) says which guardrail denied", async () => {
  assert.equal(await toolVerdict(() => ({ allow: false })), "Tool denied by guardrail: denied by the tool guardrail");
  assert.equal(await toolVerdict(() => ({ allow: false, reason: "" })), "Tool denied by guardrail: denied by the tool guardrail");
  assert.equal(await toolVerdict(() => ({ allow: false, reason: 42 })), "Tool denied by guardrail: denied by the tool guardrail");
  const input = await new Agent({ model: new ScriptedModel(["x"]), guardrails: { input: () => ({ allow: false }) as never } }).run("hi");
  assert.equal(input.reason, "input guardrail: denied by the input guardrail");
  const output = await new Agent({ model: new ScriptedModel(["x"]), guardrails: { output: () => ({ allow: false, reason: "" }) } }).run("hi");
  assert.equal(output.reason, "output guardrail: denied by the output guardrail");
});

test("a guardrail that throws something not an Error, or answers a function, a cycle or a long value: the reason names it readably", async () => {
  assert.equal(
    await toolVerdict(() => {
      throw "no reason given";
    }),
    "Tool denied by guardrail: the tool guardrail failed: no reason given",
  );
  assert.equal(await toolVerdict(() => () => true), "Tool denied by guardrail: the tool guardrail returned a malformed verdict a function, not { allow: true } or { allow: false, reason }");
  const cycle: Record<string, unknown> = { allow: "maybe" };
  cycle.self = cycle;
  assert.equal(await toolVerdict(() => cycle), "Tool denied by guardrail: the tool guardrail returned a malformed verdict [object Object], not { allow: true } or { allow: false, reason }");
  const long = await toolVerdict(() => ({ allow: "no", note: "x".repeat(500) }));
  const shown = /malformed verdict (.*), not \{ allow: true \}/.exec(long)?.[1];
  assert.equal(shown, `${JSON.stringify({ allow: "no", note: "x".repeat(500) }).slice(0, 200)}…`, "cut at 200 characters");
  const exact = { allow: "no", note: "" };
  exact.note = "x".repeat(200 - JSON.stringify(exact).length);
  assert.equal(/malformed verdict (.*), not \{ allow: true \}/.exec(await toolVerdict(() => exact))?.[1], JSON.stringify(exact), "200 characters are shown whole");
});

test("input and output guardrails may not rewrite: an allow with arguments is malformed, naming what they may answer", async () => {
  const input = await new Agent({ model: new ScriptedModel(["x"]), guardrails: { input: () => ({ allow: true, arguments: {} }) as never } }).run("hi");
  assert.equal(input.state, "GUARDRAIL");
  assert.equal(input.reason, 'input guardrail: the input guardrail returned a malformed verdict {"allow":true,"arguments":{}}, not { allow: true } without arguments');
  const output = await new Agent({ model: new ScriptedModel(["x"]), guardrails: { output: () => ({ allow: true, arguments: { a: 1 } }) as never } }).run("hi");
  assert.equal(output.state, "GUARDRAIL");
  assert.match(output.reason, /^output guardrail: the output guardrail returned a malformed verdict .* without arguments$/);
  // `arguments: undefined` is still arguments given.
  const tool = await toolVerdict(() => ({ allow: true, arguments: undefined }));
  assert.match(tool, /malformed verdict \{"allow":true\}, not \{ allow: true, arguments: \{ … \} \} with an object of arguments$/);
});

test("deniedTools globs: `*` and `?` are the only wildcards; regex characters in a name are literal; the whole name must match", async () => {
  const names = ["fs.read", "fsxread", "net_get", "net_gets", "shell", "my_shell", "a+b", "aab"];
  const tools = names.map(tool);
  const wave = JSON.stringify({ tool_calls: names.map((name) => ({ id: name, name, arguments: {} })) });
  const agent = new Agent({
    model: new ScriptedModel([wave, "done"]),
    tools: tools.map((entry) => entry.tool),
    guardrails: { deniedTools: [{ tools: "fs.read", reason: "dot" }, { tools: ["net_?et", "shell"], reason: "net or shell" }, { tools: "a+b", reason: "plus" }] },
  });
  const run = agent.run("go");
  const events = await eventsOf(run);
  await run;
  assert.deepEqual(
    ofType(events, "tool-error").map((event) => [event.toolCallId, event.message]),
    [
      ["fs.read", "Tool denied by guardrail: dot"],
      ["net_get", "Tool denied by guardrail: net or shell"],
      ["shell", "Tool denied by guardrail: net or shell"],
      ["a+b", "Tool denied by guardrail: plus"],
    ],
  );
  assert.deepEqual(
    tools.flatMap((entry) => entry.ran),
    ["fsxread", "net_gets", "my_shell", "aab"],
  );
});

test("bad guardrail settings: each shape is refused at construction, naming it; undefined entries are allowed", () => {
  const model = new ScriptedModel([]);
  const refused: Array<[unknown, RegExp]> = [
    [null, /guardrails must be an object \{ input\?, output\?, tool\?, deniedTools\? \}/],
    ["strict", /guardrails must be an object/],
    [{ tool: "deny" }, /guardrails\.tool must be a function returning \{ allow: true \} or \{ allow: false, reason \}/],
    [{ output: {} }, /guardrails\.output must be a function/],
    [{ deniedTools: { tools: "x", reason: "r" } }, /guardrails\.deniedTools must be a list of \{ tools, reason \}/],
    [{ deniedTools: [{ tools: [], reason: "r" }] }, /each guardrails\.deniedTools entry needs tools .* got \{"tools":\[\],"reason":"r"\}/],
    [{ deniedTools: [{ tools: ["x", ""], reason: "r" }] }, /deniedTools entry needs tools/],
    [{ deniedTools: [{ tools: [7], reason: "r" }] }, /deniedTools entry needs tools/],
    [{ deniedTools: [{ tools: "x", reason: "" }] }, /deniedTools entry needs tools .* and a reason/],
    [{ deniedTools: [{ tools: "x", reason: 3 }] }, /deniedTools entry needs tools .* and a reason/],
    [{ deniedTools: [null] }, /deniedTools entry needs tools .* got null/],
  ];
  for (const [guardrails, message] of refused) assert.throws(() => new Agent({ model, guardrails: guardrails as never }), message, JSON.stringify(guardrails));
  for (const guardrails of [undefined, {}, { input: undefined, tool: undefined }, { deniedTools: [] }, { deniedTools: [{ tools: "x", reason: "r" }] }]) {
    assert.doesNotThrow(() => new Agent({ model, guardrails: guardrails as never }), JSON.stringify(guardrails));
  }
});

test("with an output guardrail, reasoning streams at once while the answer waits for the verdict", async () => {
  const order: string[] = [];
  const model: Model = {
    provider: "played",
    modelId: "events",
    async *stream() {
      yield* [
        { type: "reasoning-delta", id: "r", delta: "thinking" },
        { type: "text-delta", id: "t", delta: "the answer" },
        { type: "finish", reason: { unified: "stop" } },
      ] as ModelEvent[];
    },
  };
  const guardrails = {
    output: () => {
      order.push("verdict");
      return { allow: true as const };
    },
  };
  const run = new Agent({ model, guardrails }).run("hi", { onEvent: (event) => void ((event.type === "reasoning-delta" || event.type === "text-delta") && order.push(event.type)) });
  const result = await run;
  assert.equal(result.text, "the answer");
  assert.deepEqual(order, ["reasoning-delta", "verdict", "text-delta"]);
});

test("an MCP tool is matched by any of its names: deniedTools and needsApproval globs on `<server>.<tool>` or the bare tool name", async () => {
  const mcpTool = (name: string, server: string, tool: string) => {
    const ran: string[] = [];
    return {
      ran,
      tool: defineTool({ name, description: name, parameters: { type: "object" }, mcp: { server, tool }, execute: () => {
          ran.push(name);
          return "ok";
        },
      }),
    };
  };
  const remove = mcpTool("fs_delete", "fs", "delete");
  const write = mcpTool("fs_write", "fs", "write");
  const read = mcpTool("fs_read", "fs", "read");
  const wave = calls(["fs_delete", {}, "d"], ["fs_write", {}, "w"], ["fs_read", {}, "r"]);
  const agent = new Agent({
    model: new ScriptedModel([wave, "done"]),
    tools: [remove.tool, write.tool, read.tool],
    guardrails: { deniedTools: [{ tools: "fs.del*", reason: "no deleting" }] },
    needsApproval: ["write"],
  });
  const run = agent.run("go", { onEvent: (event) => event.type === "approval-request" && run.approve(event.toolCallId) });
  const events = await eventsOf(run);
  await run;
  assert.deepEqual(
    ofType(events, "tool-error").map((event) => [event.toolCallId, event.message]),
    [["d", "Tool denied by guardrail: no deleting"]],
  );
  assert.deepEqual(
    ofType(events, "approval-request").map((event) => event.toolCallId),
    ["w"],
  );
  assert.deepEqual([...remove.ran, ...write.ran, ...read.ran], ["fs_write", "fs_read"]);
});

test("with an output guardrail, text streamed before the turn's tool calls is released as commentary, never as answer text", async () => {
  const look = tool("look");
  const turns: ModelEvent[][] = [
    [
      { type: "text-delta", id: "t", delta: "Let me " },
      { type: "text-delta", id: "t", delta: "look." },
      { type: "tool-call-start", id: "c1", name: "look" },
      { type: "tool-call-end", id: "c1", name: "look", arguments: "{}" },
      { type: "finish", reason: { unified: "tool-calls" } },
    ],
    [
      { type: "text-delta", id: "t", delta: "Found it." },
      { type: "finish", reason: { unified: "stop" } },
    ],
  ];
  let turn = 0;
  const model: Model = {
    provider: "played",
    modelId: "events",
    async *stream() {
      yield* turns[turn++]!;
    },
  };
  const run = new Agent({ model, tools: [look.tool], guardrails: { output: () => ({ allow: true }) } }).run("go");
  const events = await eventsOf(run);
  assert.equal((await run).text, "Found it.");
  assert.deepEqual(
    events.filter((event) => event.type === "commentary-delta" || event.type === "text-delta").map((event) => [event.type, "delta" in event ? event.delta : ""]),
    [
      ["commentary-delta", "Let me "],
      ["commentary-delta", "look."],
      ["text-delta", "Found it."],
    ],
  );
});

test("a verdict that is a function carrying `allow` is still not a verdict", async () => {
  assert.match(await toolVerdict(() => Object.assign(() => true, { allow: true })), /returned a malformed verdict a function/);
  assert.match(await toolVerdict(() => Object.assign(() => true, { allow: false, reason: "r" })), /returned a malformed verdict a function/);
});
