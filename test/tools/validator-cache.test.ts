// Tool validators are compiled once per schema text, not once per schema object: a tool built per
// request or per agent (the same client tool sent with every chat request, an MCP server's tools
// listed again) does not pay ajv's compile again, and ajv's cache stays bounded.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defineTool, type JsonSchema } from "../../src/index.js";
import { schemaProblem, validateArguments, validateArgumentsNow, validatorCache, validatorReady } from "../../src/tools/validate.js";

const toolWith = (parameters: JsonSchema) => defineTool({ name: "t", description: "d", parameters, execute: async () => "ok" });
const city = (): JsonSchema => ({ type: "object", properties: { city: { type: "string", minLength: 2 } }, required: ["city"] });

describe("tool validators by schema text", () => {
  it("a new tool whose schema equals a compiled one's is ready at once and validates synchronously", async () => {
    const first = toolWith(city());
    await validatorReady(first);
    const second = toolWith(city());
    assert.notEqual(second.parameters, first.parameters);
    assert.equal(validatorReady(second) === undefined, true, "an equal schema already compiled: nothing to wait for");
    assert.deepEqual(validateArgumentsNow(toolWith(city()), { city: "Oslo" }), { ok: true, value: { city: "Oslo" } });
    assert.deepEqual(validateArgumentsNow(toolWith(city()), {}), { ok: false, error: 'missing required field "city"' });
    assert.deepEqual(validateArgumentsNow(toolWith({ $schema: "https://json-schema.org/draft/2020-12/schema", ...city() }), { city: "X" }), {
      ok: false,
      error: 'field "city" must NOT have fewer than 2 characters',
    });
  });

  it("schemas that differ in any detail get their own validators", async () => {
    const number = toolWith({ type: "object", properties: { city: { type: "number" } }, required: ["city"] });
    assert.deepEqual(await validateArguments(number, { city: 3 }), { ok: true, value: { city: 3 } });
    assert.deepEqual(await validateArguments(toolWith(city()), { city: 3 }), { ok: false, error: 'field "city" must be string' });
  });

  it("a schema with an $id can be used by many tools (ajv refuses a second compile of one $id)", async () => {
    const withId = (): JsonSchema => ({ $id: "https://example.com/city", ...city() });
    for (let i = 0; i < 3; i++) assert.deepEqual(await validateArguments(toolWith(withId()), { city: "Rome" }), { ok: true, value: { city: "Rome" } });
  });

  it("a schema ajv refuses is an error for every tool that has it, each time", async () => {
    const broken = (): JsonSchema => ({ type: "object", properties: { a: { type: "no-such-type" } } });
    for (let i = 0; i < 2; i++) assert.match((await schemaProblem(broken())) ?? "", /type must be JSON Schema type|no-such-type|must be equal to one of the allowed values/);
    await assert.rejects(validateArguments(toolWith(broken()), { a: 1 }));
  });

  it("past the limit (500; 20 here) the oldest is dropped and compiled again when it comes back, still right ($id included)", async (t) => {
    assert.equal(validatorCache.limit, 500);
    validatorCache.limit = 20;
    t.after(() => {
      validatorCache.limit = 500;
    });
    const numbered = (index: number): JsonSchema => ({ $id: `https://example.com/n${index}`, type: "object", properties: { n: { const: index } } });
    await validatorReady(toolWith(numbered(0)));
    for (let index = 1; index <= 25; index++) await validatorReady(toolWith(numbered(index)));
    const again = toolWith(numbered(0));
    assert.equal(validatorReady(again) === undefined, false, "dropped: compiled again");
    assert.deepEqual(await validateArguments(again, { n: 0 }), { ok: true, value: { n: 0 } });
    assert.deepEqual(await validateArguments(again, { n: 1 }), { ok: false, error: 'field "n" must be equal to constant' });
    assert.equal(validatorReady(toolWith(numbered(25))) === undefined, true, "the newest is kept");
  });
});
