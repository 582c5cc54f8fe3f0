// KAOS's progress blocks in chat completions streams: on by default (the seed's behaviour), off per
// server (AGENT_PROGRESS_BLOCKS / the file's progressBlocks) or per request (progress_blocks in the
// body, or the X-Progress-Blocks header), so a generic OpenAI client gets only the answer.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { settingsFrom } from "../../src/config/settings.js";
import { postJson, script, startTestServer, type TestServer, toolCall } from "./helpers.js";

const mock = script(toolCall("echo", { text: "hi" }), "The echo returned: hi");

async function streamedText(client: OpenAI, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<string> {
  const stream = await client.chat.completions.create({ model: "agent", stream: true, messages: [{ role: "user", content: "echo hi" }], ...extra }, { headers });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  return text;
}

describe("KAOS progress blocks in chat completions streams", () => {
  let on: TestServer;
  let off: TestServer;
  before(async () => {
    [on, off] = await Promise.all([startTestServer({ DEBUG_MOCK_RESPONSES: mock, MEMORY_ENABLED: "false" }), startTestServer({ DEBUG_MOCK_RESPONSES: mock, MEMORY_ENABLED: "false", AGENT_PROGRESS_BLOCKS: "false" })]);
  });
  after(() => Promise.all([on.close(), off.close()]));

  it("are on by default, before the answer", async () => {
    const client = new OpenAI({ baseURL: `${on.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const text = await streamedText(client);
    assert.equal(text, '{"type":"progress","step":1,"max_steps":5,"action":"tool_call","target":"echo"}The echo returned: hi');
  });

  it("are off for one request with progress_blocks: false, or the X-Progress-Blocks: false header", async () => {
    const client = new OpenAI({ baseURL: `${on.url}/v1`, apiKey: "unused", maxRetries: 0 });
    assert.equal(await streamedText(client, { progress_blocks: false }), "The echo returned: hi");
    assert.equal(await streamedText(client, {}, { "X-Progress-Blocks": "false" }), "The echo returned: hi");
  });

  it("are off for every request with AGENT_PROGRESS_BLOCKS=false, and back on for one with progress_blocks: true", async () => {
    const client = new OpenAI({ baseURL: `${off.url}/v1`, apiKey: "unused", maxRetries: 0 });
    assert.equal(await streamedText(client), "The echo returned: hi");
    assert.match(await streamedText(client, { progress_blocks: true }), /^\{"type":"progress"/);
  });

  it("the X-Progress-Blocks header in any case decides; an empty one is none (the server's setting holds)", async () => {
    const streamed = async (server: TestServer, header: string) => {
      const response = await postJson(`${server.url}/v1/chat/completions`, { messages: [{ role: "user", content: "echo hi" }], stream: true }, { "x-progress-blocks": header });
      assert.equal(response.status, 200, header);
      return response.text();
    };
    assert.match(await streamed(off, "TRUE"), /\\"type\\":\\"progress\\"/);
    assert.match(await streamed(off, "true"), /\\"type\\":\\"progress\\"/);
    assert.match(await streamed(on, ""), /\\"type\\":\\"progress\\"/);
    assert.doesNotMatch(await streamed(off, ""), /progress/);
  });

  it("a bad value is a 400 naming it; a bad setting fails the start naming it", async () => {
    for (const [body, headers, param] of [
      [{ progress_blocks: "no" }, {}, "progress_blocks"],
      [{}, { "x-progress-blocks": "maybe" }, "X-Progress-Blocks"],
    ] as const) {
      const response = await postJson(`${on.url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }], stream: true, ...body }, headers);
      assert.equal(response.status, 400);
      assert.equal(((await response.json()) as { error: { param: string } }).error.param, param);
    }
    assert.throws(() => settingsFrom({}, { AGENT_PROGRESS_BLOCKS: "sometimes" }), /AGENT_PROGRESS_BLOCKS: must be true or false/);
    assert.equal(settingsFrom({ progressBlocks: false }, {}).progressBlocks, false);
  });
});
