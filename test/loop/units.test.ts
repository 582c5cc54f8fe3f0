import assert from "node:assert/strict";
import { test } from "node:test";
import { callSignature, detectLoop, signatureName } from "../../src/loop/loop-detection.js";
import { parseToolArguments, truncateOutput } from "../../src/index.js";

test("parseToolArguments: plain, fenced, inside prose, braces in strings, trailing commas, never {} for garbage", () => {
  assert.deepEqual(parseToolArguments('{"a": 1}'), { ok: true, value: { a: 1 } });
  assert.deepEqual(parseToolArguments('```json\n{"a": 1}\n```'), { ok: true, value: { a: 1 } });
  assert.deepEqual(parseToolArguments('Sure! {"a": "}{"} is it'), { ok: true, value: { a: "}{" } });
  assert.deepEqual(parseToolArguments('{"a": [1, 2,], "b": {"c": 3,},}'), { ok: true, value: { a: [1, 2], b: { c: 3 } } });
  assert.deepEqual(parseToolArguments('{"s": "keep, ]"}'), { ok: true, value: { s: "keep, ]" } });
  assert.deepEqual(parseToolArguments('Sure {here it is: {"a": 1}'), { ok: true, value: { a: 1 } });
  assert.deepEqual(parseToolArguments(""), { ok: true, value: {} });
  const truncated = parseToolArguments('{"a": "unterminated');
  assert.equal(truncated.ok, false);
  assert.match(!truncated.ok ? truncated.error : "", /not valid JSON/);
  const array = parseToolArguments("[1, 2]");
  assert.deepEqual(array, { ok: false, error: "arguments must be a JSON object, got an array" });
  assert.equal(parseToolArguments("no json at all").ok, false);
});

test("truncateOutput leaves short output alone and marks what it removes", () => {
  assert.deepEqual(truncateOutput("short", "t"), { text: "short", truncated: false });
  const { text } = truncateOutput("abcdefghij", "t", { maxChars: 4, mode: "tail" });
  assert.equal(text, '[agentloop: 6 characters removed from the output of "t" (limit 4 characters, mode tail); the full output is in the tool-end event]\n\nghij');
  const lines = truncateOutput("1\n2\n3\n4\n5\n6", "t", { maxLines: 2 });
  assert.equal(lines.text, '1\n[agentloop: 4 lines removed from the output of "t" (limit 2 lines, mode head_tail); the full output is in the tool-end event]\n6');
});

test("truncateOutput at the limits: exactly maxChars or maxLines is kept whole, one more is cut", () => {
  assert.deepEqual(truncateOutput("abcd", "t", { maxChars: 4 }), { text: "abcd", truncated: false });
  assert.equal(truncateOutput("abcde", "t", { maxChars: 4 }).truncated, true);
  assert.deepEqual(truncateOutput("1\n2\n3", "t", { maxLines: 3 }), { text: "1\n2\n3", truncated: false });
  assert.equal(truncateOutput("1\n2\n3\n", "t", { maxLines: 3 }).truncated, true, "a trailing line break starts a fourth (empty) line");
  assert.deepEqual(truncateOutput("\n\n", "t", { maxLines: 3 }), { text: "\n\n", truncated: false });
  assert.equal(truncateOutput("x".repeat(20_001), "t").truncated, true);
  assert.equal(truncateOutput("\n".repeat(1_000), "t").truncated, true, "1001 lines by default");
  assert.equal(truncateOutput("\n".repeat(999), "t").truncated, false);
});

test("detectLoop finds periods 1, 2 and 3 over the whole window, and nothing otherwise", () => {
  const seq = (pattern: string, length: number) => Array.from({ length }, (_, index) => pattern[index % pattern.length]);
  assert.deepEqual(detectLoop(seq("a", 10)), ["a"]);
  assert.deepEqual(detectLoop(seq("ab", 10)), ["a", "b"]);
  assert.deepEqual(detectLoop(seq("abc", 10)), ["a", "b", "c"]);
  assert.deepEqual(detectLoop(["x", "y", ...seq("abc", 11)]), ["b", "c", "a"]);
  assert.equal(detectLoop(seq("abcd", 10)), undefined);
  assert.equal(detectLoop(seq("a", 9)), undefined, "needs a full window");
  assert.equal(callSignature("f", { a: 1, b: 2 }), callSignature("f", { b: 2, a: 1 }));
  assert.notEqual(callSignature("f", { a: 1 }), callSignature("f", { a: 2 }));
});

test("callSignature is exact (no hash): names and arguments with # or NUL never collide, the name is recovered", () => {
  assert.equal(callSignature("f", { b: { d: 1, c: [2, { y: 1, x: 0 }] }, a: "s" }), callSignature("f", { a: "s", b: { c: [2, { x: 0, y: 1 }], d: 1 } }));
  assert.notEqual(callSignature("a#b", { c: 1 }), callSignature("a", "b#c"));
  assert.notEqual(callSignature("a\u0000b", {}), callSignature("a", "b\u0000"));
  assert.notEqual(callSignature("f", { a: "1" }), callSignature("f", { a: 1 }));
  assert.notEqual(callSignature("f", [1, 2]), callSignature("f", { 0: 1, 1: 2 }));
  for (const name of ["plain", "with#hash", "nul\u0000inside"]) assert.equal(signatureName(callSignature(name, { text: "x\u0000#y" })), name);
});
