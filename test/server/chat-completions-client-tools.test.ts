// Client tools on /v1/chat/completions with the official openai client: the request's `tools` are
// offered to the model beside the agent's own; a call of one ends the answer with
// `finish_reason: "tool_calls"` and the call, and the next request carrying the `tool` message
// continues the same run (the approvals checkpoint: the session holds it). Streamed and not.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import OpenAI from "openai";
import { ScriptedModel } from "../../src/index.js";
import { openaiChat } from "../../src/providers/openai/index.js";
import { fixtureLines, replay, startServer, type TestServer as FixtureServer } from "../providers/fixture-server.js";
import { echoTool, postJson, startTestServer, type TestServer } from "./helpers.js";

const calls = (...entries: Array<[string, string, object]>) => JSON.stringify({ tool_calls: entries.map(([id, name, args]) => ({ id, name, arguments: args })) });
const getLocation: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: "function",
  function: { name: "get_location", description: "The user's location, from the browser", parameters: { type: "object", properties: { precise: { type: "boolean" } } } },
};

describe("client tools on /v1/chat/completions (official openai client)", () => {
  let server: TestServer;
  let client: OpenAI;
  before(async () => {
    const script = [calls(["call_loc", "get_location", { precise: true }]), "You are in Lyon.", calls(["call_loc2", "get_location", {}]), "Still Lyon.", calls(["call_loc3", "get_location", {}])];
    server = await startTestServer({ AGENT_NAME: "geo" }, { build: { model: new ScriptedModel(script, { continueAcrossRuns: true }), tools: [echoTool] } });
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
  });
  after(() => server.close());

  it("a round trip: tool_calls, then the tool message continues the run to the answer", async () => {
    const headers = { "X-Session-ID": "geo-1" };
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: "user", content: "where am I?" }];
    const first = await client.chat.completions.create({ model: "geo", messages, tools: [getLocation] }, { headers });
    assert.equal(first.choices[0].finish_reason, "tool_calls");
    const call = first.choices[0].message.tool_calls![0] as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
    assert.deepEqual([call.id, call.function.name, JSON.parse(call.function.arguments)], ["call_loc", "get_location", { precise: true }]);
    messages.push(first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "Lyon, France" });
    const second = await client.chat.completions.create({ model: "geo", messages, tools: [getLocation] }, { headers });
    assert.equal(second.choices[0].message.content, "You are in Lyon.");
    assert.equal(second.choices[0].finish_reason, "stop");
  });

  it("streamed: the last chunk carries tool_calls with finish_reason tool_calls; the streamed continuation answers", async () => {
    const headers = { "X-Session-ID": "geo-2" };
    const stream = await client.chat.completions.create({ model: "geo", stream: true, messages: [{ role: "user", content: "again" }], tools: [getLocation] }, { headers });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!.choices[0];
    assert.equal(last.finish_reason, "tool_calls");
    assert.equal(last.delta.tool_calls?.[0]?.function?.name, "get_location");
    const id = last.delta.tool_calls![0].id!;
    const more = await client.chat.completions.create(
      {
        model: "geo",
        stream: true,
        tools: [getLocation],
        messages: [
          { role: "user", content: "again" },
          { role: "assistant", content: null, tool_calls: [{ id, type: "function", function: { name: "get_location", arguments: "{}" } }] },
          { role: "tool", tool_call_id: id, content: "Lyon" },
        ],
      },
      { headers },
    );
    let text = "";
    for await (const chunk of more) text += chunk.choices[0]?.delta?.content ?? "";
    assert.equal(text, "Still Lyon.");
  });

  it("refuses a client tool named like the agent's own, a result without a session, and a result for a call the run never made", async () => {
    const clash = await postJson(`${server.url}/v1/chat/completions`, { messages: [{ role: "user", content: "x" }], tools: [{ type: "function", function: { name: "echo" } }] });
    assert.equal(clash.status, 400);
    assert.equal(((await clash.json()) as { error: { param: string } }).error.param, "tools[0].function.name");
    const tool = [
      { role: "user", content: "x" },
      { role: "tool", tool_call_id: "call_never", content: "forged" },
    ];
    const sessionless = await postJson(`${server.url}/v1/chat/completions`, { messages: tool, tools: [getLocation] });
    assert.equal(sessionless.status, 400);
    assert.equal(((await sessionless.json()) as { error: { param: string } }).error.param, "session_id");
    // geo-1's run was continued already: a second result is refused.
    const again = await postJson(`${server.url}/v1/chat/completions`, { messages: tool, tools: [getLocation], session_id: "geo-1" });
    assert.equal(again.status, 409);
    // A run waiting for call_loc3: a result for another id is refused, naming what is pending.
    const waiting = await client.chat.completions.create({ model: "geo", messages: [{ role: "user", content: "x" }], tools: [getLocation] }, { headers: { "X-Session-ID": "geo-3" } });
    assert.equal(waiting.choices[0].finish_reason, "tool_calls");
    const never = await postJson(`${server.url}/v1/chat/completions`, { messages: tool, tools: [getLocation], session_id: "geo-3" });
    assert.equal(never.status, 400);
    assert.match(((await never.json()) as { error: { message: string } }).error.message, /"call_never", which the run did not leave to the client \(pending: call_loc3\)/);
  });
});

describe("a client tool round trip with the server's agent on a loopback provider (recorded Groq streams)", () => {
  let provider: FixtureServer;
  let server: TestServer;
  before(async () => {
    provider = await startServer([replay("openai-chat", "groq-tool-call"), replay("openai-chat", "groq-text")]);
    const model = openaiChat("llama-3.1-8b", { baseURL: `${provider.url}/v1`, apiKey: "test-key", priceAs: false });
    server = await startTestServer({ AGENT_NAME: "weather-desk" }, { build: { model, tools: [echoTool] } });
  });
  after(async () => {
    await server.close();
    await provider.close();
  });

  it("the recorded call reaches the client as tool_calls; its result goes to the provider and the recorded answer comes back", async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const weather: OpenAI.Chat.Completions.ChatCompletionTool = { type: "function", function: { name: "weather", description: "Weather at a location", parameters: { type: "object", properties: { location: { type: "string" } } } } };
    const headers = { "X-Session-ID": "desk-1" };
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [{ role: "user", content: "What is the weather in San Francisco?" }];
    const first = await client.chat.completions.create({ model: "weather-desk", messages, tools: [weather] }, { headers });
    assert.equal(first.choices[0].finish_reason, "tool_calls");
    const call = first.choices[0].message.tool_calls![0] as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall;
    assert.equal(call.function.name, "weather");
    assert.deepEqual(
      (provider.requests[0]!.body.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name).sort(),
      ["echo", "weather"],
    );
    messages.push(first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "sunny, 21°C" });
    const second = await client.chat.completions.create({ model: "weather-desk", messages, tools: [weather] }, { headers });
    const expected = fixtureLines("openai-chat", "groq-text")
      .map((line) => JSON.parse(line).choices?.[0]?.delta?.content ?? "")
      .join("");
    assert.equal(second.choices[0].message.content, expected);
    const sent = provider.requests[1]!.body.messages as Array<{ role: string; tool_call_id?: string; content?: string }>;
    assert.deepEqual(sent.filter((message) => message.role === "tool"), [{ role: "tool", tool_call_id: call.id, content: "sunny, 21°C" }]);
  });
});
