import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { Agent, ScriptedModel, textOf } from "../../src/index.js";
import { calls, eventsOf, ofType, waitingTool } from "./helpers.js";

const Weather = z.object({ city: z.string(), celsius: z.number() });

test("a zod output schema: result.output is the parsed, validated answer; a model without native support gets the schema as a system message of its own", async () => {
  const model = new ScriptedModel(['{"city":"Oslo","celsius":5}']);
  const agent = new Agent({ model, instructions: "You report weather.", output: Weather });
  const result = await agent.run("Weather in Oslo?");
  assert.equal(result.state, "COMPLETED");
  // Typed from the schema: this line would not compile if output were unknown.
  const city: string | undefined = result.output?.city;
  assert.equal(city, "Oslo");
  assert.deepEqual(result.output, { city: "Oslo", celsius: 5 });
  assert.equal(result.text, '{"city":"Oslo","celsius":5}');
  const sent = model.requests[0]!;
  assert.equal(sent.responseFormat, undefined);
  assert.deepEqual(sent.messages[0], { role: "system", content: "You report weather." });
  assert.equal(sent.messages[1]!.role, "system");
  assert.equal(textOf(sent.messages[sent.inputStart!]!), "Weather in Oslo?");
  assert.match(textOf(sent.messages[1]!), /only a JSON value that matches this JSON Schema[\s\S]*"celsius":\{"type":"number"\}/);
  // The instruction is part of the request only, not of the transcript.
  assert.equal(result.messages.filter((message) => message.role === "system").length, 1);
});

test("a plain JSON Schema works too, and a fenced JSON answer is accepted", async () => {
  const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"], additionalProperties: false };
  const result = await new Agent({ model: new ScriptedModel(['```json\n{"ok":true}\n```']), output: schema }).run("go");
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(result.output, { ok: true });
});

test("an answer that fails validation is asked again once, naming the failing field, and the second answer is used", async () => {
  const model = new ScriptedModel(['{"city":"Oslo","celsius":"cold"}', '{"city":"Oslo","celsius":-3}']);
  const result = await new Agent({ model, output: Weather }).run("Weather?");
  assert.equal(result.state, "COMPLETED");
  assert.deepEqual(result.output, { city: "Oslo", celsius: -3 });
  assert.equal(model.requests.length, 2);
  const reask = model.requests[1]!.messages.at(-1)!;
  assert.equal(reask.role, "user");
  assert.match(textOf(reask), /does not match the required output schema: field "celsius"/);
  assert.equal(model.requests[1]!.toolChoice, undefined);
});

test("a second invalid answer fails the run with kind output_validation, after exactly two calls", async () => {
  const model = new ScriptedModel(["not json at all", '{"city":"Oslo"}', "never asked"]);
  const run = new Agent({ model, output: Weather }).run("Weather?");
  const events = await eventsOf(run);
  const result = await run;
  assert.equal(result.state, "FAILED");
  assert.equal(result.error?.kind, "output_validation");
  assert.match(result.reason, /field "celsius"/);
  assert.equal(result.output, undefined);
  assert.equal(model.requests.length, 2);
  assert.match(textOf(model.requests[1]!.messages.at(-1)!), /the answer is not JSON/);
  assert.equal(ofType(events, "error").at(-1)?.error.kind, "output_validation");
});

test("tools run first; only the final answer must match", async () => {
  const { tool } = waitingTool("lookup", 0);
  const model = new ScriptedModel([calls(["lookup", { value: "Oslo" }]), '{"city":"Oslo","celsius":5}']);
  const result = await new Agent({ model, tools: [tool], output: Weather }).run("go");
  assert.equal(result.state, "COMPLETED");
  assert.equal(result.toolCalls, 1);
  assert.deepEqual(result.output, { city: "Oslo", celsius: 5 });
});

test("a run stopped by a limit with onLimit final-answer still produces a structured answer", async () => {
  const { tool } = waitingTool("lookup", 0);
  const model = new ScriptedModel([calls(["lookup", { value: 1 }]), calls(["lookup", { value: 2 }]), '{"city":"Oslo","celsius":1}']);
  const result = await new Agent({ model, tools: [tool], output: Weather, maxTurns: 2, onLimit: "final-answer" }).run("go");
  assert.equal(result.state, "TURN_LIMIT");
  assert.match(result.reason, /final answer given without tools/);
  assert.deepEqual(result.output, { city: "Oslo", celsius: 1 });
  assert.equal(model.requests.at(-1)!.toolChoice, "none");
});

test("the final answer of a limit is validated too: invalid twice fails with output_validation", async () => {
  const { tool } = waitingTool("lookup", 0);
  const model = new ScriptedModel([calls(["lookup", { value: 1 }]), "sorry", "still not"]);
  const result = await new Agent({ model, tools: [tool], output: Weather, maxTurns: 1, onLimit: "final-answer" }).run("go");
  assert.equal(result.state, "FAILED");
  assert.equal(result.error?.kind, "output_validation");
});

test("with a text tool-calling protocol the schema goes in the instructions and the answer is validated", async () => {
  const { tool, log } = waitingTool("lookup", 0);
  const model = new ScriptedModel(['{"tool": "lookup", "arguments": {"value": "x"}}', "{}", '{"city":"Bergen","celsius":9}']);
  const result = await new Agent({ model, tools: [tool], output: Weather, toolCallMode: "action" }).run("go");
  assert.equal(result.state, "COMPLETED", result.reason);
  assert.equal(log.length, 1);
  assert.deepEqual(result.output, { city: "Bergen", celsius: 9 });
  assert.ok(model.requests.every((request) => request.responseFormat === undefined));
  assert.ok(model.requests.at(-1)!.messages.some((message) => /only a JSON value that matches this JSON Schema/.test(textOf(message))));
});

test("an output that is not a schema is refused at construction", () => {
  assert.throws(() => new Agent({ model: new ScriptedModel([]), output: 42 as never }), /output must be a zod schema or a JSON Schema object, got number/);
});

test("a per-run output schema (RunOptions.output) applies to that run only; a bad one throws at run()", async () => {
  const model = new ScriptedModel(['{"ok":true}']);
  const agent = new Agent({ model });
  const result = await agent.run("go", { output: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] } });
  assert.deepEqual(result.output, { ok: true });
  const plain = await agent.run("go");
  assert.equal(plain.output, undefined);
  assert.throws(() => agent.run("go", { output: "json" as never }), /agent.run: options.output must be a zod schema or a JSON Schema object, got string/);
});
