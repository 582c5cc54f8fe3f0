// What a store gives back is what JSON makes of the event (the SQL stores keep JSON text), with
// NUL characters replaced. The in-process store copies plain data directly and everything else
// through JSON: both must give exactly what the JSON round trip gives.
import assert from "node:assert/strict";
import { test } from "node:test";
import { InMemoryStore } from "../../src/memory/index.js";

class Point {
  constructor(
    readonly x: number,
    readonly y: number,
  ) {}
}

const viaJson = (value: unknown) => JSON.parse(JSON.stringify(value));

const cases: Array<[string, unknown]> = [
  ["a string", "plain text"],
  ["a number", 42.5],
  ["negative zero", -0],
  ["a boolean", false],
  ["null", null],
  ["a nested plain object", { run_id: "run_1", turn: 3, tags: ["a", "b"], nested: { ok: true, list: [1, { deep: "x" }] } }],
  ["undefined and functions in an object", { kept: 1, dropped: undefined, fn: () => 1 }],
  ["undefined and functions in an array", [1, undefined, () => 1, "x"]],
  ["non-finite numbers", { nan: Number.NaN, inf: Number.POSITIVE_INFINITY, list: [Number.NEGATIVE_INFINITY] }],
  ["a Date", { at: new Date("2026-11-21T10:00:00Z") }],
  ["a class instance", { point: new Point(1, 2) }],
  ["a Map", { map: new Map([["k", 1]]) }],
  ["an object with toJSON", { custom: { toJSON: () => ({ replaced: true }) } }],
  ["integer-like keys (JSON orders them first)", { b: 1, 2: "two", a: 3, 1: "one" }],
  ["an own __proto__ key", JSON.parse('{"__proto__": {"polluted": true}, "safe": 1}')],
  ["deep nesting", Array.from({ length: 40 }).reduce<unknown>((inner) => ({ inner }), "bottom")],
  ["unicode", { text: "grüße 👋 \u2028" }],
];

test("stored content and metadata equal their JSON round trip, whatever they hold", async () => {
  const store = new InMemoryStore();
  for (const [name, value] of cases) {
    const [stored] = await store.append("copies", [{ event_type: "probe", content: value, metadata: { value } }]);
    assert.deepEqual(stored.content, viaJson(value), `content: ${name}`);
    assert.deepEqual(stored.metadata, viaJson({ value }), `metadata: ${name}`);
    assert.deepEqual(Object.keys(stored.metadata.value ?? {}), Object.keys(viaJson(value) ?? {}), `key order: ${name}`);
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined, "no prototype was polluted");
  await store.close();
});

test("NUL characters in values and keys are replaced, and a literal backslash-u sequence is kept", async () => {
  const store = new InMemoryStore();
  const [stored] = await store.append("nul", [{ event_type: "probe", content: { "a\u0000b": "x\u0000y", literal: "\\u0000 stays text" }, metadata: {} }]);
  assert.deepEqual(stored.content, { "a\uFFFDb": "x\uFFFDy", literal: "\\u0000 stays text" });
  await store.close();
});

test("a value JSON cannot write is refused, naming the field", async () => {
  const store = new InMemoryStore();
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  await assert.rejects(store.append("bad", [{ event_type: "probe", content: cyclic }]), /content is not JSON-serializable/);
  await assert.rejects(store.append("bad", [{ event_type: "probe", content: { big: 10n } }]), /content is not JSON-serializable/);
  await store.close();
});
