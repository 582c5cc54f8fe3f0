import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { codeFenceBodies, extractJsonObjects, parseLenientJson, stripCodeFence } from "./index.js";

describe("lenient JSON extraction", () => {
  it("finds every top-level object in prose, in order, with their spans", () => {
    const text = 'a {"x": 1} b {"y": {"z": [1, 2]}} c';
    const { objects, unterminatedAt } = extractJsonObjects(text);
    assert.deepEqual(
      objects.map((object) => object.value),
      [{ x: 1 }, { y: { z: [1, 2] } }],
    );
    assert.equal(text.slice(objects[0].start, objects[0].end), '{"x": 1}');
    assert.equal(unterminatedAt, undefined);
  });

  it("respects braces and escaped quotes inside strings", () => {
    const { objects } = extractJsonObjects('{"text": "a } \\" { b"}');
    assert.deepEqual(objects[0].value, { text: 'a } " { b' });
  });

  it("searches inside a balanced span that is not JSON, and skips prose braces that never close", () => {
    assert.deepEqual(
      extractJsonObjects('{prose {"a": 1}}').objects.map((object) => object.value),
      [{ a: 1 }],
    );
    const stray = extractJsonObjects('Use { to open. {"b": 2}');
    assert.deepEqual(
      stray.objects.map((object) => object.value),
      [{ b: 2 }],
    );
    assert.equal(stray.unterminatedAt, undefined);
  });

  it("reports a truncated JSON object and takes nothing inside it", () => {
    const text = 'ok {"tool_calls": [{"name": "a", "arguments": {}}';
    assert.deepEqual(extractJsonObjects(text), { objects: [], unterminatedAt: 3 });
  });

  it("drops trailing commas", () => {
    assert.deepEqual(parseLenientJson('{"a": [1, 2,], "b": "x,]",}'), { value: { a: [1, 2], b: "x,]" } });
    assert.equal(parseLenientJson("{nope}"), undefined);
  });

  it("reads code fences", () => {
    assert.equal(stripCodeFence('```json\n{"a": 1}\n```'), '{"a": 1}');
    assert.equal(stripCodeFence("  plain  "), "plain");
    assert.deepEqual(codeFenceBodies("x ```json\n{}\n``` y ```\nz\n```"), ["{}", "z"]);
  });

  it("stays linear on 200 KB of braces that never close, or nest without being JSON", () => {
    // Each `{` used to be scanned to the end of the text: 200,000 scans of 200 KB (minutes). Now one pass.
    const size = 200_000;
    const shapes = {
      unclosed: "{".repeat(size),
      quoted: '{"'.repeat(size / 2),
      nested: `${"{".repeat(size / 2)}${"}".repeat(size / 2)}`,
      keys: `${'{"a" '.repeat(size / 5)}${"}".repeat(size / 5)}`,
      commas: `${'{"a": 1, '.repeat(size / 9)}`,
    };
    for (const [name, text] of Object.entries(shapes)) {
      const started = performance.now();
      const result = extractJsonObjects(text);
      const elapsed = performance.now() - started;
      assert.equal(result.objects.length, name === "nested" ? 1 : 0, name); // nested: the innermost `{}`
      // Linear takes milliseconds; quadratic took minutes. A generous bound for a busy machine.
      assert.ok(elapsed < 2_000, `${name}: ${Math.round(elapsed)} ms for 200 KB`);
    }
    // What is still found around such noise.
    assert.deepEqual(extractJsonObjects(`${"{".repeat(1_000)} {"a": 1}`).objects.map((object) => object.value), [{ a: 1 }]);
    assert.equal(extractJsonObjects(`x {"a": ${"{".repeat(1_000)}`).unterminatedAt, 2);
    assert.deepEqual(extractJsonObjects('{"a": [1, 2,],}').objects.map((object) => object.value), [{ a: [1, 2] }]);
  });
});
