import assert from "node:assert/strict";
import { test } from "node:test";
import { Agent, defineTool, ScriptedModel, type ToolResultMessage } from "../../src/index.js";
import { calls, eventsOf, ofType } from "./helpers.js";

function counter(name: string, options: { parameters?: Record<string, unknown> } = {}) {
  const ran: Array<Record<string, unknown>> = [];
  const tool = defineTool({
    name,
    description: name,
    parameters: options.parameters ?? { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    execute: async (args) => {
      ran.push(args);
      return `${name} ran with ${JSON.stringify(args)}`;
    },
  });
  return { tool, ran };
}

function resultsOf(messages: readonly unknown[]): ToolResultMessage[] {
  return (messages as Array<{ role: string }>).filter((message): message is ToolResultMessage => message.role === "tool");
}

test("input guardrail: a deny ends the run GUARDRAIL before any model call", async () => {
  const model = new ScriptedModel(["should never be said"]);
  const agent = new Agent({
    model,
    guardrails: { input: async ({ input }) => (input.includes("password") ? { allow: false, reason: "no secrets please" } : { allow: true }) },
  });
  const run = agent.run("my password is hunter2");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "GUARDRAIL");
  assert.equal(result.reason, "input guardrail: no secrets please");
  assert.equal(result.text, "");
  assert.equal(model.requests.length, 0, "no model call");
  assert.equal(ofType(events, "turn-start").length, 0);
  assert.deepEqual(
    ofType(events, "guardrail").map((event) => [event.guardrail, event.allowed, event.reason]),
    [["input", false, "no secrets please"]],
  );
  const allowed = await agent.run("hello");
  assert.equal(allowed.state, "COMPLETED");
  assert.equal(allowed.text, "should never be said");
});

test("input guardrail runs for a follow-up too, and one that throws denies (fail closed)", async () => {
  const agent = new Agent({
    model: new ScriptedModel(["first answer", "second answer"]),
    guardrails: {
      input: ({ input }) => {
        if (input === "boom") throw new Error("checker offline");
        return { allow: true };
      },
    },
  });
  const run = agent.run("hi");
  run.followUp("boom");
  const result = await run;
  assert.equal(result.state, "GUARDRAIL");
  assert.equal(result.reason, "input guardrail: the input guardrail failed: checker offline");
  assert.equal(result.text, "", "the follow-up got no answer");
});

test("output guardrail: a denied answer is never streamed as answer text, nor kept in the transcript", async () => {
  const model = new ScriptedModel(["the secret code is 1234"]);
  const agent = new Agent({
    model,
    guardrails: { output: ({ text }) => (/\d{4}/.test(text) ? { allow: false, reason: "leaks a code" } : { allow: true }) },
  });
  const run = agent.run("tell me");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "GUARDRAIL");
  assert.equal(result.reason, "output guardrail: leaks a code");
  assert.equal(result.text, "");
  assert.equal(ofType(events, "text-delta").length, 0, "nothing of the denied answer streamed");
  assert.ok(!JSON.stringify(result.messages).includes("1234"), "the denied text is not in the transcript");
  assert.equal(ofType(events, "guardrail")[0]?.guardrail, "output");
});

test("output guardrail: an allowed answer streams in its original chunks; tool-turn text stays commentary", async () => {
  const { tool } = counter("read_file");
  const model = new ScriptedModel([
    JSON.stringify({ content: "Let me look.", tool_calls: [{ name: "read_file", arguments: { path: "a" } }] }),
    "All good here.",
  ]);
  let checked = 0;
  const agent = new Agent({
    model,
    tools: [tool],
    guardrails: {
      output: ({ text }) => {
        checked++;
        assert.equal(text, "All good here.");
        return { allow: true };
      },
    },
  });
  const run = agent.run("check");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.equal(checked, 1, "checked once, on the answer only");
  assert.equal(ofType(events, "text-delta").map((event) => event.delta).join(""), "All good here.");
  assert.ok(ofType(events, "text-delta").length > 1, "streamed as several deltas");
  assert.equal(ofType(events, "commentary-delta").map((event) => event.delta).join(""), "Let me look.");
});

test("output guardrail covers the final answer of onLimit: final-answer", async () => {
  const { tool } = counter("read_file");
  const agent = new Agent({
    model: new ScriptedModel([calls(["read_file", { path: "a" }]), "forbidden final words"]),
    tools: [tool],
    maxTurns: 1,
    onLimit: "final-answer",
    guardrails: { output: () => ({ allow: false, reason: "nope" }) },
  });
  const result = await agent.run("go");
  assert.equal(result.state, "GUARDRAIL");
  assert.equal(result.text, "");
});

test("tool guardrail in a parallel wave: the denied call never runs, gets the error result and a tool-error; the other runs", async () => {
  const read = counter("read_file");
  const remove = counter("delete_file");
  let started = 0;
  const agent = new Agent({
    model: new ScriptedModel([calls(["delete_file", { path: "/etc" }, "c1"], ["read_file", { path: "notes" }, "c2"]), "done"]),
    tools: [remove.tool, read.tool],
    guardrails: {
      tool: async ({ toolName, arguments: args }) => {
        // Before any call of the wave starts: nothing has run while the guardrail decides.
        assert.equal(read.ran.length + remove.ran.length, 0);
        started++;
        return toolName === "delete_file" ? { allow: false, reason: `deleting ${String(args.path)} is not allowed` } : { allow: true };
      },
    },
  });
  const run = agent.run("clean up");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "COMPLETED");
  assert.equal(started, 2);
  assert.equal(remove.ran.length, 0, "the denied call did not run");
  assert.equal(read.ran.length, 1);
  const results = resultsOf(result.messages);
  assert.deepEqual(
    results.map((message) => [message.toolCallId, message.content, message.isError ?? false]),
    [
      ["c1", "Tool denied by guardrail: deleting /etc is not allowed", true],
      ["c2", 'read_file ran with {"path":"notes"}', false],
    ],
  );
  const errors = ofType(events, "tool-error");
  assert.deepEqual(
    errors.map((event) => [event.toolCallId, event.kind]),
    [["c1", "guardrail"]],
  );
});

test("tool guardrail rewrites arguments: validated again, the call runs with the new ones; invalid ones deny", async () => {
  const read = counter("read_file");
  const agent = new Agent({
    model: new ScriptedModel([calls(["read_file", { path: "../../secret" }, "a"], ["read_file", { path: "x" }, "b"]), "done"]),
    tools: [read.tool],
    guardrails: {
      tool: ({ toolCallId, arguments: args }) =>
        toolCallId === "a" ? { allow: true, arguments: { path: String(args.path).replaceAll("../", "") } } : { allow: true, arguments: { path: 42 } },
    },
  });
  const result = await agent.run("read");
  assert.deepEqual(read.ran, [{ path: "secret" }]);
  const results = resultsOf(result.messages);
  assert.equal(results[0]!.content, 'read_file ran with {"path":"secret"}');
  assert.match(String(results[1]!.content), /^Tool denied by guardrail: rewritten arguments are invalid: .*path/);
});

test("declarative deniedTools: names and globs with a reason", async () => {
  const shell = counter("shell_exec");
  const read = counter("read_file");
  const agent = new Agent({
    model: new ScriptedModel([calls(["shell_exec", { path: "rm" }, "s"], ["read_file", { path: "a" }, "r"]), "ok"]),
    tools: [shell.tool, read.tool],
    guardrails: { deniedTools: [{ tools: ["shell_*", "net_?et"], reason: "no shell access in this agent" }] },
  });
  const result = await agent.run("go");
  assert.equal(shell.ran.length, 0);
  assert.equal(read.ran.length, 1);
  assert.equal(resultsOf(result.messages)[0]!.content, "Tool denied by guardrail: no shell access in this agent");
});

test("bad guardrail settings throw at construction, naming the problem", () => {
  const model = new ScriptedModel([]);
  assert.throws(() => new Agent({ model, guardrails: { input: "yes" as never } }), /guardrails\.input must be a function/);
  assert.throws(() => new Agent({ model, guardrails: { inptu: () => ({ allow: true }) } as never }), /guardrails\.inptu is not a guardrail/);
  assert.throws(() => new Agent({ model, guardrails: { deniedTools: [{ tools: "x" }] as never } }), /deniedTools entry needs tools .* and a reason/);
  assert.throws(() => new Agent({ model, onApproval: "later" as never }), /onApproval must be "wait" or "interrupt"/);
});

// Issue 27, item 2: a verdict that is not one fails closed, and the reason names what came back.
const malformed: Array<[label: string, verdict: unknown, named: RegExp]> = [
  ["an empty object", {}, /returned a malformed verdict \{\}/],
  ['allow as the string "false"', { allow: "false" }, /returned a malformed verdict \{"allow":"false"\}/],
  ['allow as the string "true"', { allow: "true" }, /returned a malformed verdict \{"allow":"true"\}/],
  ["null", null, /returned a malformed verdict null/],
  ["undefined", undefined, /returned a malformed verdict undefined/],
  ["a string", "yes", /returned a malformed verdict "yes"/],
  ["a boolean", true, /returned a malformed verdict true/],
  ["a BigInt inside", { allow: 1n }, /returned a malformed verdict \{"allow":"1n"\}/],
];

test("tool guardrail: a malformed verdict denies the call with a tool error naming it; the other calls run", async () => {
  for (const [label, verdict, named] of malformed) {
    const read = counter("read_file");
    const agent = new Agent({
      model: new ScriptedModel([calls(["read_file", { path: "a" }, "bad"], ["read_file", { path: "b" }, "good"]), "done"]),
      tools: [read.tool],
      guardrails: { tool: ({ toolCallId }) => (toolCallId === "bad" ? (verdict as never) : { allow: true }) },
    });
    const run = agent.run("read");
    const events = await eventsOf(run);
    const result = await run;
    assert.equal(result.state, "COMPLETED", label);
    assert.deepEqual(read.ran, [{ path: "b" }], `${label}: the call with the malformed verdict did not run`);
    const [error] = ofType(events, "tool-error");
    assert.equal(error?.toolCallId, "bad", label);
    assert.equal(error?.kind, "guardrail", label);
    assert.match(error!.message, /^Tool denied by guardrail: the tool guardrail returned a malformed verdict/, label);
    assert.match(error!.message, named, label);
    assert.equal(resultsOf(result.messages)[0]!.content, error!.message, label);
  }
});

test("tool guardrail: rewritten arguments that are not an object deny, naming the verdict", async () => {
  for (const args of [undefined, null, "path=x", ["x"]]) {
    const read = counter("read_file");
    const agent = new Agent({ model: new ScriptedModel([calls(["read_file", { path: "a" }, "c"]), "done"]), tools: [read.tool], guardrails: { tool: () => ({ allow: true, arguments: args }) as never } });
    const result = await agent.run("read");
    assert.equal(result.state, "COMPLETED");
    assert.deepEqual(read.ran, [], JSON.stringify(args));
    assert.match(String(resultsOf(result.messages)[0]!.content), /^Tool denied by guardrail: the tool guardrail returned a malformed verdict \{"allow":true.*with an object of arguments$/);
  }
});

test("input and output guardrails: a malformed verdict ends the run GUARDRAIL naming it; nothing of the answer is sent", async () => {
  for (const [label, verdict, named] of malformed) {
    const inputModel = new ScriptedModel(["never asked"]);
    const input = await new Agent({ model: inputModel, guardrails: { input: () => verdict as never } }).run("hi");
    assert.equal(input.state, "GUARDRAIL", label);
    assert.match(input.reason, /^input guardrail: the input guardrail returned a malformed verdict /, label);
    assert.match(input.reason, named, label);
    assert.equal(inputModel.requests.length, 0, `${label}: no model call`);

    const run = new Agent({ model: new ScriptedModel(["the answer"]), guardrails: { output: () => verdict as never } }).run("hi");
    const events = await eventsOf(run);
    const output = await run;
    assert.equal(output.state, "GUARDRAIL", label);
    assert.match(output.reason, /^output guardrail: the output guardrail returned a malformed verdict /, label);
    assert.match(output.reason, named, label);
    assert.equal(ofType(events, "text-delta").length, 0, `${label}: the answer was not streamed`);
    assert.equal(output.text, "", label);
  }
});
