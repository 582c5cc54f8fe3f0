// Property-based fuzzing (fast-check) of the parsers that read what a model or an operator wrote:
// the tool-argument parser and the scripted model's script reader. Any input gives a value or a
// clear error; nothing throws, nothing hangs, and hostile shapes (braces that never close, long
// comma runs) stay linear. Runs are bounded (a few hundred cases, well under a second each).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { ModelEvent } from "../../src/model/model.js";
import { parseMockResponses, parseScriptEntry, ScriptedModel } from "../../src/model/scripted.js";
import { dropTrailingCommas, firstBalancedObject, parseToolArguments } from "../../src/tools/parse-arguments.js";
import { seeded } from "./seed.js";

const isPlainObject = (value: unknown) => typeof value === "object" && value !== null && !Array.isArray(value);

/** Text a model might put around or inside its arguments. */
const noisyText = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.array(fc.constantFrom("{", "}", "[", "]", '"', "\\", ",", ":", "```", "json", " ", "\n", "a", "1", "null"), { maxLength: 120 }).map((parts) => parts.join("")),
);

describe("fuzz: parseToolArguments", () => {
  test("any text: an object, or ok:false with a message; never throws", (t) => {
    fc.assert(
      fc.property(fc.oneof(noisyText, fc.constant(undefined), fc.constant(null)), (raw) => {
        const result = parseToolArguments(raw);
        if (result.ok) assert.ok(isPlainObject(result.value), `ok with a non-object for ${JSON.stringify(raw)}`);
        else {
          assert.equal(typeof result.error, "string");
          assert.ok(result.error.length > 0);
          // The message quotes at most a preview of the input.
          assert.ok(result.error.length < 400, `error message of ${result.error.length} chars`);
        }
      }),
      seeded(t, 400),
    );
  });

  test("a JSON object, plain, fenced, with prose around it or trailing commas, reads back equal", (t) => {
    const objects = fc.dictionary(fc.string({ maxLength: 12 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 });
    fc.assert(
      fc.property(objects, fc.constantFrom("plain", "fenced", "prose", "commas"), (value, form) => {
        const json = JSON.stringify(value);
        const raw =
          form === "plain"
            ? json
            : form === "fenced"
              ? `\`\`\`json\n${json}\n\`\`\``
              : form === "prose"
                ? `Sure, here you go: ${json} Hope that helps.`
                : json.replace(/}$/, ",}");
        const result = parseToolArguments(raw);
        assert.ok(result.ok, `${form}: ${JSON.stringify(raw)} → ${JSON.stringify(result)}`);
        // JSON.stringify drops -0 and the like: compare through JSON.
        assert.deepEqual(JSON.parse(JSON.stringify(result.value)), JSON.parse(json));
      }),
      seeded(t, 300),
    );
  });

  test("a JSON value that is not an object is refused naming what it is", (t) => {
    fc.assert(
      fc.property(
        // (An object nested in an array is found and taken, leniently: only values without one here.)
        fc.jsonValue({ maxDepth: 2 }).filter((value) => !JSON.stringify(value).includes("{")),
        (value) => {
          const result = parseToolArguments(JSON.stringify(value));
          assert.equal(result.ok, false);
          if (!result.ok) assert.match(result.error, /must be a JSON object|not valid JSON/);
        },
      ),
      seeded(t, 200),
    );
  });

  test("the helpers never throw, and a balanced span they find is balanced", (t) => {
    fc.assert(
      fc.property(noisyText, fc.nat(50), (text, from) => {
        const span = firstBalancedObject(text, from);
        if (span) {
          assert.equal(text[span.start], "{");
          assert.equal(text[span.end - 1], "}");
          assert.ok(span.start >= from && span.end <= text.length);
        }
        const dropped = dropTrailingCommas(text);
        assert.ok(dropped.length <= text.length);
      }),
      seeded(t, 400),
    );
  });

  test("hostile shapes of 300 KB stay fast (linear, not a rescan per brace)", () => {
    const size = 300_000;
    for (const raw of ["{".repeat(size), `{"a":"${"{".repeat(size)}`, ",".repeat(size), `{${", ".repeat(size / 2)}`, "```".repeat(size / 3), `{"a":${"[".repeat(size)}`]) {
      const started = performance.now();
      const result = parseToolArguments(raw);
      const ms = performance.now() - started;
      assert.equal(result.ok, false);
      // A quadratic scan of 300 KB takes minutes (20 KB of `{` took 1.4 s before); linear work takes milliseconds (generous bound for a busy machine).
      assert.ok(ms < 30_000, `${JSON.stringify(raw.slice(0, 12))}… took ${Math.round(ms)} ms`);
    }
  });
});

/** The events of one turn of a scripted model, read to the end. */
async function oneTurn(model: ScriptedModel): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of model.stream({ messages: [{ role: "user", content: "go" }] })) events.push(event);
  return events;
}

describe("fuzz: the scripted model's script (DEBUG_MOCK_RESPONSES)", () => {
  /** Scripts an operator might write, right or wrong. */
  const toolCallish = fc.record(
    {
      tool_calls: fc.oneof(
        fc.array(fc.record({ id: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }), name: fc.oneof(fc.string({ maxLength: 10 }), fc.integer()), arguments: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }), { maxLength: 3 }),
        fc.jsonValue({ maxDepth: 1 }),
      ),
      content: fc.oneof(fc.string({ maxLength: 20 }), fc.jsonValue({ maxDepth: 1 })),
    },
    { requiredKeys: [] },
  );
  const scripts = fc.oneof(
    fc.string({ maxLength: 200 }),
    fc.json({ maxDepth: 3 }),
    fc.array(fc.oneof(fc.string({ maxLength: 40 }), toolCallish.map((entry) => JSON.stringify(entry)), toolCallish, fc.jsonValue({ maxDepth: 2 })), { maxLength: 4 }).map((list) => JSON.stringify(list)),
  );

  test("any script: entries are strings, each turn ends with exactly one finish, nothing throws", async (t) => {
    await fc.assert(
      fc.asyncProperty(scripts, async (script) => {
        const entries = parseMockResponses(script);
        // (`[]` is an empty script: the model then answers that it has no more responses.)
        assert.ok(Array.isArray(entries));
        for (const entry of entries) {
          assert.equal(typeof entry, "string");
          const parsed = parseScriptEntry(entry);
          assert.equal(typeof parsed.content, "string");
          for (const call of parsed.toolCalls) assert.equal(typeof call.name, "string");
        }
        const events = await oneTurn(new ScriptedModel(script));
        const terminal = events.filter((event) => event.type === "finish" || event.type === "error");
        assert.equal(terminal.length, 1, JSON.stringify(events));
        assert.equal(events.at(-1), terminal[0]);
      }),
      seeded(t, 200),
    );
  });
});
