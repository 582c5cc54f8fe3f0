// mapCallResult (agentloop/mcp): every kind of MCP content block and its missing fields, images
// beside text, structured content beside text or alone, the legacy `toolResult` answer, and
// `isError` only when it is `true`. The cases the mutation run (npm run mutation -- src/mcp/result.ts)
// showed untested; what the model is sent for each is the behaviour.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { mapCallResult } from "../../src/mcp/index.js";

describe("mapCallResult", () => {
  test("each block kind, with its optional fields missing", () => {
    const content = (block: Record<string, unknown>) => mapCallResult({ content: [block, { type: "text", text: "end" }] }).content;
    assert.equal(content({ type: "text" }), "\nend");
    assert.equal(content({ type: "text", text: 7 }), "7\nend");
    assert.equal(content({ type: "audio", data: "" }), "[audio ]\nend");
    assert.equal(content({ type: "resource_link", uri: "file:///a" }), "[resource link file:///a]\nend");
    assert.equal(content({ type: "resource_link", name: 7 }), "[resource link ]\nend");
    assert.equal(content({ type: "resource", resource: { uri: "file:///b", mimeType: "application/pdf", blob: "AAAA" } }), "[resource file:///b (application/pdf)]\nend");
    assert.equal(content({ type: "resource", resource: { uri: "file:///c", mimeType: 3 } }), "[resource file:///c]\nend");
    assert.equal(content({ type: "resource", resource: { text: "" } }), "\nend");
    assert.equal(content({ type: "resource" }), "[resource ]\nend");
    assert.equal(content({ type: "future-kind", value: 1 }), '{"type":"future-kind","value":1}\nend');
  });

  test("an image keeps the parts (text and image), its media type only when a string", () => {
    assert.deepEqual(mapCallResult({ content: [{ type: "text", text: "look" }, { type: "image", data: "AAA", mimeType: "image/png" }, { type: "image", mimeType: 5 }] }), {
      content: [
        { type: "text", text: "look" },
        { type: "image", data: "AAA", mediaType: "image/png" },
        { type: "image", data: "", mediaType: undefined },
      ],
      isError: false,
    });
  });

  test("beside an image, every note (audio, resource link, resource, unknown kind) is a text part", () => {
    const result = mapCallResult({
      content: [
        { type: "image", data: "AAA", mimeType: "image/png" },
        { type: "audio", mimeType: "audio/wav" },
        { type: "resource_link", uri: "file:///a" },
        { type: "resource", resource: { text: "inline" } },
        { type: "future-kind" },
      ],
    });
    assert.deepEqual(result.content, [
      { type: "image", data: "AAA", mediaType: "image/png" },
      { type: "text", text: "[audio audio/wav]" },
      { type: "text", text: "[resource link file:///a]" },
      { type: "text", text: "inline" },
      { type: "text", text: '{"type":"future-kind"}' },
    ]);
  });

  test("an image alone, with no structured content, is sent alone", () => {
    assert.deepEqual(mapCallResult({ content: [{ type: "image", data: "AAA", mimeType: "image/png" }] }), { content: [{ type: "image", data: "AAA", mediaType: "image/png" }], isError: false });
  });

  test("a note counts as text: structured content is then not repeated as JSON", () => {
    for (const block of [{ type: "audio", mimeType: "audio/wav" }, { type: "resource_link", uri: "file:///a" }, { type: "resource", resource: { text: "inline" } }, { type: "future-kind" }]) {
      const result = mapCallResult({ content: [block], structuredContent: { x: 1 } });
      assert.ok(!String(result.content).includes('{"x":1}'), JSON.stringify(block));
    }
  });

  test("structured content is sent as JSON text only when no block has text, and kept as structured", () => {
    assert.deepEqual(mapCallResult({ content: [{ type: "text", text: "" }], structuredContent: { x: 1 } }), { content: '{"x":1}\n', isError: false, structured: { x: 1 } });
    assert.deepEqual(mapCallResult({ content: [{ type: "text", text: "said" }], structuredContent: { x: 1 } }), { content: "said", isError: false, structured: { x: 1 } });
    assert.deepEqual(mapCallResult({ structuredContent: [1, 2] }), { content: "[1,2]", isError: false, structured: [1, 2] });
    assert.deepEqual(mapCallResult({ content: [{ type: "image", data: "AAA", mimeType: "image/png" }], structuredContent: { x: 1 } }), {
      content: [
        { type: "text", text: '{"x":1}' },
        { type: "image", data: "AAA", mediaType: "image/png" },
      ],
      isError: false,
      structured: { x: 1 },
    });
    assert.deepEqual(mapCallResult({}), { content: "", isError: false });
  });

  test("the legacy toolResult: a string as it is, anything else as JSON, nothing as empty; content wins when both are there", () => {
    assert.deepEqual(mapCallResult({ toolResult: "plain", isError: true }), { content: "plain", isError: true });
    assert.deepEqual(mapCallResult({ toolResult: undefined }), { content: "", isError: false });
    assert.deepEqual(mapCallResult({ toolResult: "ignored", content: [{ type: "text", text: "new" }] }), { content: "new", isError: false });
  });

  test("isError only when it is exactly true", () => {
    assert.equal(mapCallResult({ content: [], isError: "true" as never }).isError, false);
    assert.equal(mapCallResult({ toolResult: 1, isError: 1 as never }).isError, false);
  });
});
