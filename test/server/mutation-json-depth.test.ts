// The nesting limit of request bodies (src/server/json-depth.ts) at its edge: 64 levels of arrays
// and objects pass, 65 are a 400 json_too_deep; what closes a level, brackets inside strings and
// escaped quotes do not count. Sent through an ignored field (`metadata`) of a chat request.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { postJson, script, startTestServer, type TestServer } from "./helpers.js";

describe("the JSON nesting limit of a request body", () => {
  let test: TestServer;
  before(async () => {
    test = await startTestServer({ AGENT_NAME: "depth", DEBUG_MOCK_RESPONSES: script(...Array(20).fill("fine")) });
  });
  after(() => test.close());

  /** A chat request whose `metadata` is `value` (raw JSON text): the body's own object is one level more. */
  const withMetadata = (value: string) => `{"messages":[{"role":"user","content":"hi"}],"metadata":${value}}`;
  const arrays = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
  const objects = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;
  const send = (body: string) => postJson(`${test.url}/v1/chat/completions`, body);

  async function tooDeep(body: string) {
    const response = await send(body);
    assert.equal(response.status, 400);
    const { error } = (await response.json()) as { error: { message: string; code: string; param: string | null } };
    assert.deepEqual([error.code, error.param], ["json_too_deep", null]);
    assert.equal(error.message, "the request body nests JSON deeper than 64 levels (arrays and objects); flatten it");
  }

  it("64 levels pass, 65 do not, for arrays and for objects", async () => {
    assert.equal((await send(withMetadata(arrays(63)))).status, 200);
    await tooDeep(withMetadata(arrays(64)));
    assert.equal((await send(withMetadata(objects(63)))).status, 200);
    await tooDeep(withMetadata(objects(64)));
    await tooDeep(withMetadata(`[${objects(63)}]`));
  });

  it("a closed level no longer counts: many shallow siblings pass", async () => {
    const siblings = `[${Array(200).fill(arrays(2)).join(",")}]`;
    assert.equal((await send(withMetadata(siblings))).status, 200);
    const objectSiblings = `{${Array(200)
      .fill(0)
      .map((_, index) => `"k${index}":{"x":[1]}`)
      .join(",")}}`;
    assert.equal((await send(withMetadata(objectSiblings))).status, 200);
  });

  it("brackets inside strings are text, escaped quotes included; a string's end is found after an escaped backslash", async () => {
    const brackets = "[{".repeat(100);
    const content = (text: string) => `{"messages":[{"role":"user","content":${JSON.stringify(text)}}]}`;
    assert.equal((await send(content(brackets))).status, 200);
    assert.equal((await send(content(`say "${brackets}"`))).status, 200, "an escaped quote does not end the string");
    // After an escaped backslash the quote does end the string: the nesting after it counts.
    await tooDeep(`{"messages":[{"role":"user","content":"ends with a backslash \\\\"}],"metadata":${arrays(64)}}`);
    assert.equal((await send(`{"messages":[{"role":"user","content":"ends with a backslash \\\\"}],"metadata":${arrays(63)}}`)).status, 200);
  });
});
