// A run that continues from a checkpoint, against a real provider on loopback: the recorded Groq
// streams (a `weather` call, then an answer) served to the Chat Completions adapter. The resume
// goes through the same gate as the first pass: an approval runs the call once and the answer
// streams; a guardrail that denies the call at resume time keeps it from running, approved or not.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { Agent, defineTool } from "../../src/index.js";
import { openaiChat } from "../../src/providers/openai/index.js";
import { fixtureLines, replay, startServer, type TestServer } from "../providers/fixture-server.js";

const answerOf = (name: string) =>
  fixtureLines("openai-chat", name)
    .map((line) => JSON.parse(line).choices?.[0]?.delta?.content ?? "")
    .join("");

describe("resume against a loopback provider replaying recorded streams", () => {
  const servers: TestServer[] = [];
  after(() => Promise.all(servers.map((server) => server.close())));

  async function setUp() {
    const server = await startServer([replay("openai-chat", "groq-tool-call"), replay("openai-chat", "groq-text")]);
    servers.push(server);
    const ran: unknown[] = [];
    const weather = defineTool({
      name: "weather",
      description: "Weather at a location",
      parameters: { type: "object", properties: { location: { type: "string" } } },
      needsApproval: true,
      execute: async (args) => {
        ran.push(args);
        return "sunny, 21°C";
      },
    });
    const model = openaiChat("llama-3.1-8b", { baseURL: `${server.url}/v1`, apiKey: "test-key", priceAs: false });
    return { server, ran, weather, model };
  }

  it("an approval given on resume runs the recorded call once, sends its result, and streams the recorded answer", async () => {
    const { server, ran, weather, model } = await setUp();
    const agent = new Agent({ model, tools: [weather], onApproval: "interrupt" });
    const first = await agent.run("What is the weather in San Francisco?");
    assert.equal(first.state, "INTERRUPTED");
    assert.deepEqual(ran, []);
    const [pending] = first.checkpoint!.pending;
    assert.equal(pending!.toolName, "weather");
    const resumed = await agent.resume(JSON.parse(JSON.stringify(first.checkpoint)), { decisions: { [pending!.toolCallId]: { approve: true } } });
    assert.equal(resumed.state, "COMPLETED");
    assert.equal(ran.length, 1);
    assert.equal(resumed.text, answerOf("groq-text"));
    const sent = server.requests[1]!.body.messages as Array<{ role: string; tool_call_id?: string; content?: string }>;
    assert.deepEqual(sent.filter((message) => message.role === "tool"), [{ role: "tool", tool_call_id: pending!.toolCallId, content: "sunny, 21°C" }]);
  });

  it("a guardrail that denies the call at resume time keeps the approved call from running", async () => {
    const { server, ran, weather, model } = await setUp();
    const first = await new Agent({ model, tools: [weather], onApproval: "interrupt" }).run("What is the weather in San Francisco?");
    const [pending] = first.checkpoint!.pending;
    const guarded = new Agent({ model, tools: [weather], onApproval: "interrupt", guardrails: { tool: () => ({ allow: false, reason: "weather is off today" }) } });
    const resumed = await guarded.resume(JSON.parse(JSON.stringify(first.checkpoint)), { decisions: { [pending!.toolCallId]: { approve: true } } });
    assert.equal(resumed.state, "COMPLETED");
    assert.deepEqual(ran, [], "the denied call never ran");
    const sent = server.requests[1]!.body.messages as Array<{ role: string; content?: string }>;
    assert.deepEqual(
      sent.filter((message) => message.role === "tool").map((message) => message.content),
      ["Tool denied by guardrail: weather is off today"],
    );
  });
});
