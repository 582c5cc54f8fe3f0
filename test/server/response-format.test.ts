// `response_format` in chat requests: the answer must match the schema (asked again once), with the official openai client.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { postJson, script, startTestServer, type TestServer } from "./helpers.js";

const format = {
  type: "json_schema" as const,
  json_schema: {
    name: "weather",
    schema: { type: "object", properties: { city: { type: "string" }, celsius: { type: "number" } }, required: ["city", "celsius"], additionalProperties: false },
    strict: true,
  },
};

describe("response_format in POST /v1/chat/completions", () => {
  let test: TestServer;
  let client: OpenAI;

  before(async () => {
    // Each request restarts the script: an invalid answer first, the corrected one when asked again.
    test = await startTestServer({ AGENT_NAME: "weather-agent", DEBUG_MOCK_RESPONSES: script('{"city":"Oslo","celsius":"cold"}', '{"city":"Oslo","celsius":-3}') });
    client = new OpenAI({ baseURL: `${test.url}/v1`, apiKey: "unused", maxRetries: 0 });
  });
  after(() => test.close());

  it("json_schema: the answer is validated, an invalid one asked again, the valid one returned", async () => {
    const completion = await client.chat.completions.create({ model: "weather-agent", messages: [{ role: "user", content: "Weather in Oslo?" }], response_format: format });
    assert.deepEqual(JSON.parse(completion.choices[0]!.message.content!), { city: "Oslo", celsius: -3 });
    assert.equal(completion.choices[0]!.finish_reason, "stop");
  });

  it("streamed: only the validated answer is sent, whole, then stop", async () => {
    const stream = await client.chat.completions.create({ model: "weather-agent", messages: [{ role: "user", content: "Weather?" }], response_format: format, stream: true });
    const contents: string[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) contents.push(chunk.choices[0].delta.content);
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    assert.deepEqual(contents, ['{"city":"Oslo","celsius":-3}']);
    assert.equal(finish, "stop");
  });

  it("without response_format the first answer is returned as it is", async () => {
    const completion = await client.chat.completions.create({ model: "weather-agent", messages: [{ role: "user", content: "Weather?" }] });
    assert.equal(completion.choices[0]!.message.content, '{"city":"Oslo","celsius":"cold"}');
  });

  it("json_object: any JSON object is accepted", async () => {
    const completion = await client.chat.completions.create({ model: "weather-agent", messages: [{ role: "user", content: "Weather?" }], response_format: { type: "json_object" } });
    assert.deepEqual(JSON.parse(completion.choices[0]!.message.content!), { city: "Oslo", celsius: "cold" });
  });

  it("an answer still invalid when asked again fails the request (502, output_validation)", async () => {
    const strict = { ...format, json_schema: { ...format.json_schema, schema: { ...format.json_schema.schema, properties: { city: { type: "number" }, celsius: { type: "number" } } } } };
    await assert.rejects(client.chat.completions.create({ model: "weather-agent", messages: [{ role: "user", content: "Weather?" }], response_format: strict }), (error: unknown) => {
      assert.ok(error instanceof OpenAI.APIError);
      assert.equal(error.status, 502);
      assert.match(error.message, /does not match the output schema/);
      return true;
    });
  });

  it("a malformed response_format is a 400 naming the parameter", async () => {
    const response = await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "x" }], response_format: { type: "xml" } });
    assert.equal(response.status, 400);
    const body = (await response.json()) as { error: { param: string; message: string } };
    assert.equal(body.error.param, "response_format.type");
    assert.match(body.error.message, /must be "text", "json_object" or "json_schema", got "xml"/);
    const missing = await postJson(`${test.url}/v1/chat/completions`, { messages: [{ role: "user", content: "x" }], response_format: { type: "json_schema", json_schema: { name: "n" } } });
    assert.equal(missing.status, 400);
    assert.equal(((await missing.json()) as { error: { param: string } }).error.param, "response_format.json_schema.schema");
    const invalid = await postJson(`${test.url}/v1/chat/completions`, {
      messages: [{ role: "user", content: "x" }],
      response_format: { type: "json_schema", json_schema: { name: "n", schema: { type: "object", properties: { a: { type: 5 } } } } },
    });
    assert.equal(invalid.status, 400);
    const invalidBody = (await invalid.json()) as { error: { param: string; message: string } };
    assert.equal(invalidBody.error.param, "response_format.json_schema.schema");
    assert.match(invalidBody.error.message, /is not a valid JSON Schema/);
  });
});
