// Truncation (src/loop/truncate.ts) and loop detection (src/loop/loop-detection.ts) at their edges:
// what the model reads of a long output, which call sequences count as a loop. Written for the
// surviving mutants of `npm run mutation -- src/loop/truncate.ts src/loop/loop-detection.ts`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { callSignature, detectLoop, signatureName } from "../../src/loop/loop-detection.js";
import { Agent, defineTool, ScriptedModel, truncateOutput } from "../../src/index.js";
import { calls, eventsOf, ofType } from "./helpers.js";

const marker = (removed: number, unit: string, limit: number, mode: string) =>
  `[agentloop: ${removed} ${unit} removed from the output of "t" (limit ${limit} ${unit}, mode ${mode}); the full output is in the tool-end event]`;

test("head_tail by characters keeps the first half (rounded up) and the last half (rounded down), the marker between", () => {
  assert.deepEqual(truncateOutput("abcdefghij", "t", { maxChars: 5 }), { text: `abc\n\n${marker(5, "characters", 5, "head_tail")}\n\nij`, truncated: true });
  assert.deepEqual(truncateOutput("abcdefghij", "t", { maxChars: 4, mode: "head_tail" }), { text: `ab\n\n${marker(6, "characters", 4, "head_tail")}\n\nij`, truncated: true });
});

test("tail by lines keeps the last lines; characters are cut first, then the lines of what is left", () => {
  assert.deepEqual(truncateOutput("1\n2\n3\n4\n5", "t", { maxLines: 2, mode: "tail" }), { text: `${marker(3, "lines", 2, "tail")}\n4\n5`, truncated: true });
  assert.deepEqual(truncateOutput("1\n2\n3\n4\n5", "t", { maxLines: 3 }), { text: `1\n2\n${marker(2, "lines", 3, "head_tail")}\n5`, truncated: true });
  // 29 characters over 6 lines, at most 12 characters and 3 lines, tail: the last 12 characters
  // (with the character marker before them) are then cut to their last 3 lines.
  const both = truncateOutput("aaaa\nbbbb\ncccc\ndddd\neeee\nffff", "t", { maxChars: 12, maxLines: 3, mode: "tail" });
  const afterChars = `${marker(17, "characters", 12, "tail")}\n\ndd\neeee\nffff`;
  assert.equal(both.text, `${marker(afterChars.split("\n").length - 3, "lines", 3, "tail")}\ndd\neeee\nffff`);
  assert.equal(both.truncated, true);
});

test("line counting: as many line breaks as the limit make one line too many, however short the text", () => {
  assert.equal(truncateOutput("\n\n\n", "t", { maxLines: 3 }).truncated, true, "4 lines in 3 characters");
  assert.deepEqual(truncateOutput("\n\n\n", "t", { maxLines: 3, mode: "tail" }).text, `${marker(1, "lines", 3, "tail")}\n\n\n`);
  assert.equal(truncateOutput("\n\n", "t", { maxLines: 2 }).truncated, true);
  assert.equal(truncateOutput("ab\n", "t", { maxLines: 1 }).truncated, true);
  assert.equal(truncateOutput("abc", "t", { maxLines: 1 }).truncated, false);
  assert.equal(truncateOutput("", "t", { maxLines: 1, maxChars: 1 }).truncated, false);
});

test("detectLoop: a period is looked for only when the window holds it twice; the window is the last calls", () => {
  assert.equal(detectLoop(["a", "b", "a"], 3), undefined, "a, b, a is not a cycle of two in a window of 3");
  assert.equal(detectLoop(["a", "b", "c", "a", "b"], 5), undefined, "nor a cycle of three in a window of 5");
  assert.deepEqual(detectLoop(["a", "b", "a", "b"], 4), ["a", "b"]);
  assert.deepEqual(detectLoop(["a", "b", "c", "a", "b", "c"], 6), ["a", "b", "c"]);
  assert.deepEqual(detectLoop(["a", "a"], 2), ["a"]);
  assert.equal(detectLoop(["a"], 1), undefined, "one call is no loop... ");
  assert.deepEqual(detectLoop(["z", "x", "a", "a"], 2), ["a"], "only the last window counts");
  assert.equal(detectLoop(["a", "a", "b"], 2), undefined);
  assert.equal(detectLoop(["a", "b", "a", "c"], 4), undefined);
});

test("callSignature: arrays and nested values in order, undefined and missing values, the name without NUL", () => {
  assert.notEqual(callSignature("f", [1, 2]), callSignature("f", [2, 1]), "array order matters");
  assert.notEqual(callSignature("f", [1, [2, 3]]), callSignature("f", [[1, 2], 3]));
  assert.equal(callSignature("f", { a: [{ c: 1, b: 2 }] }), callSignature("f", { a: [{ b: 2, c: 1 }] }));
  assert.notEqual(callSignature("f", { a: 1, b: 2 }), callSignature("f", { a: 1 }));
  assert.notEqual(callSignature("f", { ab: 1 }), callSignature("f", { a: "b1" }));
  assert.equal(callSignature("f", undefined), callSignature("f", null));
  assert.notEqual(callSignature("f", {}), callSignature("f", []));
  assert.equal(signatureName("no separator"), "no separator");
  assert.equal(signatureName(callSignature("", {})), "");
  assert.equal(callSignature("f", { b: 1, a: 2, c: 3 }), callSignature("f", { a: 2, b: 1, c: 3 }), "a key out of order anywhere is sorted");
  assert.equal(callSignature("f", { a: 2, c: 3, b: 1 }), callSignature("f", { a: 2, b: 1, c: 3 }));
});

test("loop detection in a run: the pattern names the tools in call order; a new warning needs a new full window; off with false", async () => {
  const tools = ["ping", "pong"].map((name) => defineTool({ name, description: "", parameters: { type: "object" }, execute: () => "ok" }));
  const wave = calls(["ping", {}], ["pong", {}]);
  const script = () => new ScriptedModel([wave, wave, wave, "done"]);
  const run = new Agent({ model: script(), tools, loopDetection: { window: 4 } }).run("go");
  const events = await eventsOf(run);
  const warnings = ofType(events, "loop-warning");
  assert.deepEqual(
    warnings.map((event) => [event.pattern, event.warnings]),
    [[["ping", "pong"], 1]],
    "after the warning the third wave alone does not fill the window again",
  );
  assert.equal(warnings[0]!.message, "[agentloop] Loop detected: the last 4 tool calls repeat the pattern ping → pong. The results will not change. Try a different approach, or answer with what you have.");
  const off = new Agent({ model: script(), tools, loopDetection: false }).run("go");
  assert.equal(ofType(await eventsOf(off), "loop-warning").length, 0);
  const stopped = await new Agent({ model: script(), tools, loopDetection: { window: 4, maxWarnings: 1 } }).run("go");
  assert.equal(stopped.state, "LOOP_DETECTED");
  assert.equal(stopped.reason, "loop detected 1 time(s): ping → pong");
});

test("truncation at exactly a limit after the other cut: no empty cut, no `0 removed` marker; one line break in a long text is two lines", () => {
  // Exactly maxChars characters but too many lines: only the lines are cut.
  assert.deepEqual(truncateOutput("1\n2\n3", "t", { maxChars: 5, maxLines: 2, mode: "tail" }), { text: `${marker(1, "lines", 2, "tail")}\n2\n3`, truncated: true });
  // After the character cut the text (marker, blank line, kept part) has exactly maxLines lines: no line cut.
  assert.deepEqual(truncateOutput("abcdefgh", "t", { maxChars: 4, maxLines: 3, mode: "tail" }), { text: `${marker(4, "characters", 4, "tail")}\n\nefgh`, truncated: true });
  assert.deepEqual(truncateOutput("abcd\nefg", "t", { maxLines: 3 }), { text: "abcd\nefg", truncated: false });
  assert.equal(truncateOutput("1\n2\n3\n4\n5\n6", "t", { maxLines: 4 }).text, `1\n2\n${marker(2, "lines", 4, "head_tail")}\n5\n6`, "two lines kept at each end");
  assert.deepEqual(truncateOutput("abcdefghij\nk", "t", { maxLines: 2 }), { text: "abcdefghij\nk", truncated: false });
});
