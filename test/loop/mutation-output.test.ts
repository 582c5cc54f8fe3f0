// Structured output (src/loop/output.ts) as a model and a user see it: the native response format
// (its name and strictness), the instruction's place in the request, which answers parse, what the
// re-ask says, which schemas are refused. Written for the surviving mutants of
// `npm run mutation -- src/loop/output.ts`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { z } from "zod";
import { Agent, type Model, type ModelRequest, ScriptedModel, textOf } from "../../src/index.js";

/** A model with native structured output that answers `answer` and records its requests. */
function nativeModel(answer: string): Model & { requests: ModelRequest[] } {
  const requests: ModelRequest[] = [];
  return {
    provider: "native",
    modelId: "json",
    supportsStructuredOutput: true,
    requests,
    async *stream(request) {
      requests.push(request);
      yield { type: "text-delta", id: "t", delta: answer };
      yield { type: "finish", reason: { unified: "stop" } };
    },
  };
}

async function formatOf(output: unknown) {
  const model = nativeModel('{"a":"x"}');
  await new Agent({ model, output: output as never }).run("go");
  const request = model.requests[0]!;
  assert.ok(request.messages.every((message) => message.role !== "system"), "no instruction when the format is native");
  return request.responseFormat as { type: string; name: string; schema: Record<string, unknown>; strict: boolean };
}

test("a native model gets the schema as its response format: named from the title (made safe, at most 64 characters) or `output`, without $schema", async () => {
  const closed = { type: "object", properties: { a: { type: "string" } }, required: ["a"], additionalProperties: false };
  assert.deepEqual(await formatOf({ $schema: "https://json-schema.org/draft/2020-12/schema", title: "Weather report!", ...closed }), {
    type: "json_schema",
    name: "Weather_report_",
    schema: { title: "Weather report!", ...closed },
    strict: true,
  });
  assert.equal((await formatOf(closed)).name, "output");
  assert.equal((await formatOf({ ...closed, title: "" })).name, "output");
  assert.equal((await formatOf({ ...closed, title: 7 })).name, "output");
  assert.equal((await formatOf({ ...closed, title: "a  b?!c" })).name, "a_b_c", "a run of other characters is one underscore");
  assert.equal((await formatOf({ ...closed, title: `a-b_c ${"x".repeat(100)}` })).name, `a-b_c_${"x".repeat(58)}`);
  const zod = await formatOf(z.object({ a: z.string() }).meta({ title: "Zod one" }));
  assert.equal(zod.name, "Zod_one");
  assert.equal(zod.schema.$schema, undefined);
  assert.equal(zod.strict, true);
});

test("strict only when every object is closed and every property required, however deep; enum, const, default and examples are values", async () => {
  const object = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: "object", properties, required: Object.keys(properties), additionalProperties: false, ...extra });
  const strict = async (schema: unknown) => (await formatOf(schema)).strict;
  assert.equal(await strict(object({ a: { type: "string" } })), true);
  assert.equal(await strict({ type: "object", properties: { a: { type: "string" } }, required: ["a"] }), false, "open object");
  assert.equal(await strict({ type: "object", properties: { a: { type: "string" } }, additionalProperties: false }), false, "a property not required");
  assert.equal(await strict({ type: "object", properties: { a: { type: "string" } }, required: "a", additionalProperties: false }), false, "required not a list");
  assert.equal(await strict({ properties: { a: { type: "string" } }, required: ["a"] }), false, "properties without type object");
  assert.equal(await strict({ type: "object", additionalProperties: false }), true, "a closed object without properties");
  assert.equal(await strict(object({ a: { type: "object" } })), false, "an open object without properties");
  assert.equal(await strict(object({ a: object({ b: { type: "number" } }) })), true);
  assert.equal(await strict(object({ a: { type: "object", properties: { b: {} }, additionalProperties: false } })), false, "deep");
  assert.equal(await strict(object({ a: { type: "array", items: { type: "object", properties: {} } } })), false, "in items");
  assert.equal(await strict(object({ a: { anyOf: [{ type: "string" }, { type: "object", properties: {} }] } })), false, "in a list");
  assert.equal(await strict(object({ a: { anyOf: [{ type: "string" }, { type: "null" }] } })), true);
  const values = { type: "object", properties: {}, required: [] };
  assert.equal(await strict(object({ a: { type: "object", enum: [values], const: values, default: values, examples: [values], additionalProperties: false } })), true);
  assert.equal(await strict(object({ a: { type: "string", description: null } })), true, "null is a value, not a schema");
});

test("a model without native output: the instruction comes after the system messages, and the input moves with it", async () => {
  const model = new ScriptedModel(['{"ok":true}']);
  const schema = { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] };
  const result = await new Agent({ model, instructions: "first", output: schema }).run("go", { history: [{ role: "system", content: "second" }] });
  assert.deepEqual(result.output, { ok: true });
  const sent = model.requests[0]!;
  assert.deepEqual(
    sent.messages.map((message) => [message.role, textOf(message).slice(0, 20)]),
    [
      ["system", "first"],
      ["system", "second"],
      ["system", "When you give your f"],
      ["user", "go"],
    ],
  );
  assert.equal(
    textOf(sent.messages[2]!),
    `When you give your final answer (a turn without tool calls), answer with only a JSON value that matches this JSON Schema: no other text, no code fences.\n${JSON.stringify(schema)}`,
  );
  assert.equal(sent.inputStart, 3);
  const bare = new ScriptedModel(['{"ok":true}']);
  await new Agent({ model: bare, output: schema }).run("go");
  assert.deepEqual(
    bare.requests[0]!.messages.map((message) => message.role),
    ["system", "user"],
  );
  assert.equal(bare.requests[0]!.inputStart, 1);
});

test("answers: a fence with or without `json` and spaces around is read; text around a fence, or two values, is not JSON; the re-ask names the error", async () => {
  const schema = { type: "object", properties: { n: { type: "number" } }, required: ["n"] };
  const outputOf = async (answer: string) => (await new Agent({ model: new ScriptedModel([answer, "never"]), output: schema }).run("go")).output;
  assert.deepEqual(await outputOf('```\n{"n":1}\n```'), { n: 1 });
  assert.deepEqual(await outputOf('  ```json\n{"n":2}```  '), { n: 2 });
  assert.deepEqual(await outputOf('\n {"n":3} \n'), { n: 3 });
  assert.deepEqual(await outputOf('```json  \n{\n  "n": 7\n}\n```'), { n: 7 }, "spaces after the language, a value over several lines");
  assert.equal(await outputOf('```json\n{"n":6}\n``` and some words after'), undefined, "text after a fence: not the answer (asked again, then failed)");
  const model = new ScriptedModel(['Here it is: ```json\n{"n":4}\n```', '{"n":5}']);
  const result = await new Agent({ model, output: schema }).run("go");
  assert.deepEqual(result.output, { n: 5 }, "asked again: prose around a fence is not the answer");
  const reask = textOf(model.requests[1]!.messages.at(-1)!);
  assert.match(reask, /^\[agentloop\] Your answer does not match the required output schema: the answer is not JSON \(.+\)\. Answer again with only the corrected JSON value\.$/);
});

test("refused outputs name what they got: null, an array, a zod schema without toJSONSchema", () => {
  const model = new ScriptedModel([]);
  assert.throws(() => new Agent({ model, output: null as never }), /^TypeError: Agent config: output must be a zod schema or a JSON Schema object, got null$/);
  assert.throws(() => new Agent({ model, output: [] as never }), /output must be a zod schema or a JSON Schema object, got object/);
  const zod3 = { safeParse: () => ({ success: true, data: 1 }) };
  assert.throws(() => new Agent({ model, output: zod3 as never }), /^TypeError: Agent config: output: only zod v4 schemas \(with toJSONSchema\) are supported$/);
  assert.doesNotThrow(() => new Agent({ model, output: undefined }));
});
