import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AgentLoopError } from "../errors.js";
import type { Message } from "../messages.js";
import { Agent } from "../loop/agent.js";
import type { LoopEvent } from "../loop/events.js";
import type { Model, ModelEvent, ModelRequest, ToolDefinition } from "../model/model.js";
import { ScriptedModel } from "../model/scripted.js";
import { defineTool } from "../tools/tool.js";
import { parseStringToolCalls, stringToolCalling } from "./index.js";
import { streamEvents as collect } from "../../test/support.js";

delete process.env.DEBUG_MOCK_RESPONSES;

/** A plain-text model that streams each answer in small fixed-size chunks (splitting braces and fences). */
class ChunkedTextModel implements Model {
  readonly provider = "chunked";
  readonly modelId = "chunked-text";
  readonly requests: ModelRequest[] = [];
  private cursor = 0;
  constructor(
    private readonly answers: string[],
    private readonly chunkSize = 3,
  ) {}
  async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
    this.requests.push(request);
    const answer = this.answers[this.cursor++] ?? "";
    yield { type: "response-start", model: this.modelId };
    yield { type: "text-start", id: "t" };
    for (let index = 0; index < answer.length; index += this.chunkSize) {
      yield { type: "text-delta", id: "t", delta: answer.slice(index, index + this.chunkSize) };
    }
    yield { type: "text-end", id: "t" };
    yield { type: "usage", usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 } };
    yield { type: "finish", reason: { unified: "stop", raw: "stop" } };
  }
}

const weatherTool: ToolDefinition = {
  name: "get_weather",
  description: "Current weather for a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const timeTool: ToolDefinition = { name: "get_time", description: "Local time in a city.", parameters: { type: "object" } };
const toolNames = new Set(["get_weather", "get_time"]);

function request(messages: Message[] = [{ role: "user", content: "Weather in Paris?" }], tools = [weatherTool, timeTool]): ModelRequest {
  return { messages, tools };
}

const textOfEvents = (events: ModelEvent[]) => events.map((event) => (event.type === "text-delta" ? event.delta : "")).join("");
const callsOfEvents = (events: ModelEvent[]) =>
  events.flatMap((event) => (event.type === "tool-call-end" ? [{ id: event.id, name: event.name, arguments: JSON.parse(event.arguments) }] : []));

describe("parseStringToolCalls", () => {
  it("reads several calls from a bare tool_calls object", () => {
    const result = parseStringToolCalls(
      '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"city": "Oslo"}}]}',
    );
    assert.deepEqual(result, {
      kind: "calls",
      calls: [
        { name: "get_weather", arguments: '{"city":"Paris"}' },
        { name: "get_time", arguments: '{"city":"Oslo"}' },
      ],
      content: "",
    });
  });

  it("reads a fenced json block", () => {
    const result = parseStringToolCalls('```json\n{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}\n```');
    assert.equal(result.kind, "calls");
    if (result.kind === "calls") assert.deepEqual(result.calls, [{ name: "get_weather", arguments: '{"city":"Paris"}' }]);
  });

  it("reads a call surrounded by prose", () => {
    const result = parseStringToolCalls('Sure, let me check. {"tool_calls": [{"name": "get_time", "arguments": {}}]} One moment.');
    assert.equal(result.kind, "calls");
    if (result.kind === "calls") assert.deepEqual(result.calls, [{ name: "get_time", arguments: "{}" }]);
  });

  it("accepts the {name, arguments} shorthand for a known tool, and several objects", () => {
    const text = 'First {"name": "get_weather", "arguments": {"city": "Rome"}} then\n{"name": "get_time", "arguments": "{\\"city\\": \\"Rome\\"}"}';
    const result = parseStringToolCalls(text, toolNames);
    assert.equal(result.kind, "calls");
    if (result.kind === "calls") {
      assert.deepEqual(result.calls, [
        { name: "get_weather", arguments: '{"city":"Rome"}' },
        { name: "get_time", arguments: '{"city": "Rome"}' },
      ]);
    }
  });

  it("does not take JSON data with an unknown name for a shorthand call", () => {
    assert.deepEqual(parseStringToolCalls('The record is {"name": "Ada", "arguments": 3}.', toolNames), { kind: "text" });
  });

  it("keeps braces inside strings and tolerates trailing commas", () => {
    const result = parseStringToolCalls('{"tool_calls": [{"name": "get_weather", "arguments": {"city": "a } b { \\" c",},},]}');
    assert.equal(result.kind, "calls");
    if (result.kind === "calls") assert.deepEqual(JSON.parse(result.calls[0].arguments), { city: 'a } b { " c' });
  });

  it("reads OpenAI-style entries and a content field next to the calls", () => {
    const result = parseStringToolCalls('{"content": "Checking.", "tool_calls": [{"type": "function", "function": {"name": "get_time", "arguments": "{}"}}]}');
    assert.deepEqual(result, { kind: "calls", calls: [{ name: "get_time", arguments: "{}" }], content: "Checking." });
  });

  it("reports a truncated tool call as invalid", () => {
    const result = parseStringToolCalls('{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Par');
    assert.equal(result.kind, "invalid");
    if (result.kind === "invalid") assert.match(result.message, /incomplete/);
  });

  it("reports a tool_calls entry without a name as invalid", () => {
    const result = parseStringToolCalls('{"tool_calls": [{"arguments": {}}]}');
    assert.equal(result.kind, "invalid");
    if (result.kind === "invalid") assert.match(result.message, /tool_calls\[0\] has no tool name/);
  });

  it("treats text without JSON, or with a stray brace, as plain text", () => {
    assert.deepEqual(parseStringToolCalls("It is sunny in Paris."), { kind: "text" });
    assert.deepEqual(parseStringToolCalls("Use { to open a block in C."), { kind: "text" });
  });
});

describe("stringToolCalling stream", () => {
  it("streams a plain answer as several text deltas and finishes with stop", async () => {
    const inner = new ChunkedTextModel(["It is sunny in Paris today."]);
    const events = await collect(stringToolCalling(inner), request());
    assert.equal(textOfEvents(events), "It is sunny in Paris today.");
    assert.ok(events.filter((event) => event.type === "text-delta").length > 3, "text arrives in pieces, not buffered");
    assert.deepEqual(events.at(-1), { type: "finish", reason: { unified: "stop", raw: "stop" } });
    assert.deepEqual(
      events.filter((event) => event.type === "usage").map((event) => event.type === "usage" && event.usage.totalTokens),
      [15],
    );
  });

  it("turns a JSON answer split into 3-character chunks into tool calls with fresh ids and no text", async () => {
    const inner = new ChunkedTextModel([
      '  {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"city": "Paris"}}]}',
    ]);
    const events = await collect(stringToolCalling(inner), request());
    assert.equal(events.filter((event) => event.type.startsWith("text")).length, 0);
    const calls = callsOfEvents(events);
    assert.deepEqual(
      calls.map(({ name, arguments: args }) => ({ name, args })),
      [
        { name: "get_weather", args: { city: "Paris" } },
        { name: "get_time", args: { city: "Paris" } },
      ],
    );
    assert.match(calls[0].id, /^call_[0-9a-f]{24}$/);
    assert.notEqual(calls[0].id, calls[1].id);
    const kinds = events.map((event) => event.type).filter((type) => type.startsWith("tool-call"));
    assert.deepEqual(kinds, ["tool-call-start", "tool-call-delta", "tool-call-end", "tool-call-start", "tool-call-delta", "tool-call-end"]);
    assert.deepEqual(events.at(-1), { type: "finish", reason: { unified: "tool-calls", raw: "stop" } });
  });

  it("streams prose before a fenced call, then emits the call", async () => {
    const inner = new ChunkedTextModel(['Let me check.\n```json\n{"tool_calls": [{"name": "get_time", "arguments": {}}]}\n```']);
    const events = await collect(stringToolCalling(inner), request());
    assert.equal(textOfEvents(events), "Let me check.");
    assert.deepEqual(
      callsOfEvents(events).map((call) => call.name),
      ["get_time"],
    );
    assert.ok(events.findIndex((event) => event.type === "text-end") < events.findIndex((event) => event.type === "tool-call-start"));
  });

  it("gives back held text that turned out not to be a call", async () => {
    const answer = "Templates use {{name}} and ```code``` blocks, nothing else.";
    const events = await collect(stringToolCalling(new ChunkedTextModel([answer])), request());
    assert.equal(textOfEvents(events), answer);
    assert.equal(callsOfEvents(events).length, 0);
    assert.deepEqual(events.at(-1), { type: "finish", reason: { unified: "stop", raw: "stop" } });
  });

  it("ends with an error naming the problem when the call JSON is cut off", async () => {
    const inner = new ChunkedTextModel(['{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Pa']);
    const events = await collect(stringToolCalling(inner), request());
    const last = events.at(-1);
    assert.equal(last?.type, "error");
    if (last?.type === "error") {
      assert.ok(AgentLoopError.isInstance(last.error));
      assert.match(last.error.message, /unreadable tool call.*incomplete/);
    }
    assert.equal(callsOfEvents(events).length, 0);
  });

  it("describes the tools in the system prompt and renders earlier calls and results as text", async () => {
    const inner = new ChunkedTextModel(["Done."]);
    const history: Message[] = [
      { role: "system", content: "You are a weather bot." },
      { role: "user", content: "Weather in Paris and Oslo?" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Checking." },
          { type: "tool-call", id: "call_a", name: "get_weather", arguments: '{"city":"Paris"}' },
          { type: "tool-call", id: "call_b", name: "get_weather", arguments: '{"city":"Oslo"}' },
        ],
      },
      { role: "tool", toolCallId: "call_a", toolName: "get_weather", content: "sunny" },
      { role: "tool", toolCallId: "call_b", toolName: "get_weather", content: "city not found", isError: true },
    ];
    await collect(stringToolCalling(inner), { ...request(history), toolChoice: "required" });
    const sent = inner.requests[0];
    assert.equal(sent.tools, undefined);
    assert.equal(sent.toolChoice, undefined);
    assert.equal(sent.messages.length, 4);
    const system = sent.messages[0];
    assert.equal(system.role, "system");
    assert.match(String(system.content), /^You are a weather bot\.\n\n## Tools/);
    assert.match(String(system.content), /- get_weather: Current weather for a city\.\n {2}arguments \(JSON Schema\): \{"type":"object"/);
    assert.match(String(system.content), /\{"tool_calls": \[\{"name": "tool_name", "arguments": \{"arg1": "value1"\}\}\]\}/);
    assert.match(String(system.content), /You must call at least one tool now\./);
    assert.deepEqual(sent.messages[2], {
      role: "assistant",
      content: [
        { type: "text", text: "Checking." },
        { type: "text", text: '{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}},{"name":"get_weather","arguments":{"city":"Oslo"}}]}' },
      ],
    });
    assert.equal(sent.messages[3].role, "user");
    assert.match(String(sent.messages[3].content), /^Tool result for get_weather \(call call_a\):\nsunny\n\nTool error for get_weather \(call call_b\):\ncity not found/);
  });

  it("passes text through untouched when tools are switched off (toolChoice none)", async () => {
    const inner = new ChunkedTextModel(['{"tool_calls": []} is the format']);
    const events = await collect(stringToolCalling(inner), { ...request(), toolChoice: "none" });
    assert.equal(textOfEvents(events), '{"tool_calls": []} is the format');
    assert.doesNotMatch(JSON.stringify(inner.requests[0].messages), /## Tools/);
  });

  it("passes native tool calls of the inner model through", async () => {
    const inner = new ScriptedModel(['{"tool_calls": [{"id": "call_native", "name": "get_time", "arguments": {}}]}']);
    const events = await collect(stringToolCalling(inner), request());
    assert.deepEqual(callsOfEvents(events), [{ id: "call_native", name: "get_time", arguments: {} }]);
    assert.equal(events.at(-1)?.type === "finish" && events.at(-1)?.type, "finish");
    assert.deepEqual(events.at(-1), { type: "finish", reason: { unified: "tool-calls", raw: "tool_calls" } });
  });

  it("relays an inner error and turns a throwing inner model into an error event", async () => {
    const failing: Model = {
      provider: "test",
      modelId: "failing",
      async *stream() {
        yield { type: "error", error: new AgentLoopError("rate_limit", "slow down", { status: 429 }) };
      },
    };
    const events = await collect(stringToolCalling(failing), request());
    assert.equal(events.at(-1)?.type, "error");
    if (events.at(-1)?.type === "error") assert.equal((events.at(-1) as { error: AgentLoopError }).error.kind, "rate_limit");

    const throwing: Model = {
      provider: "test",
      modelId: "throwing",
      stream() {
        throw new Error("broken adapter");
      },
    };
    const thrown = await collect(stringToolCalling(throwing), request());
    assert.equal(thrown.length, 1);
    assert.equal(thrown[0].type, "error");
    if (thrown[0].type === "error") assert.match(thrown[0].error.message, /broken adapter/);
  });

  it("ends with an error when the inner stream stops without a finish event", async () => {
    const silent: Model = {
      provider: "test",
      modelId: "silent",
      async *stream() {
        yield { type: "text-delta", id: "t", delta: "partial" };
      },
    };
    const events = await collect(stringToolCalling(silent), request());
    const last = events.at(-1);
    assert.equal(last?.type, "error");
    if (last?.type === "error") assert.match(last.error.message, /test model stream ended without a finish event/);
  });

  it("passes the abort signal through: aborting mid-stream ends with an aborted error", async () => {
    const inner = new ScriptedModel(["one two three four five six seven eight nine ten"], { chunkDelayMs: 5 });
    const controller = new AbortController();
    const events: ModelEvent[] = [];
    for await (const event of stringToolCalling(inner).stream({ ...request(), signal: controller.signal })) {
      events.push(event);
      // Aborted at the first delta: the model is then waiting for its next chunk.
      if (event.type === "text-delta") controller.abort();
    }
    assert.ok(events.filter((event) => event.type === "text-delta").length < 10);
    const last = events.at(-1);
    assert.equal(last?.type, "error");
    if (last?.type === "error") assert.equal(last.error.kind, "aborted");
    assert.equal(inner.requests[0].signal, controller.signal);
  });
});

describe("stringToolCalling in the agent loop", () => {
  it("runs a parallel wave from a fenced answer, then streams the final answer", async () => {
    const executed: string[] = [];
    const scripted = new ScriptedModel([
      'Let me look that up.\n```json\n{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"city": "Paris"}}]}\n```',
      "It is sunny in Paris and 10:00.",
    ]);
    const model = stringToolCalling(scripted);
    const agent = new Agent({
      name: "weather",
      instructions: "You answer weather questions.",
      model,
      tools: [
        defineTool({
          name: "get_weather",
          description: "Current weather for a city.",
          parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          execute: (args) => {
            executed.push(`weather:${args.city}`);
            return "sunny";
          },
        }),
        defineTool({
          name: "get_time",
          description: "Local time in a city.",
          parameters: { type: "object", properties: { city: { type: "string" } } },
          execute: (args) => {
            executed.push(`time:${args.city}`);
            return "10:00";
          },
        }),
      ],
    });
    const run = agent.run("Weather and time in Paris?");
    const events: LoopEvent[] = [];
    for await (const event of run) events.push(event);
    const result = await run;

    assert.equal(result.state, "COMPLETED");
    assert.equal(result.text, "It is sunny in Paris and 10:00.");
    assert.deepEqual(executed.sort(), ["time:Paris", "weather:Paris"]);
    const order = events
      .filter((event) => ["turn-start", "turn-end", "tool-start", "tool-end", "run-end"].includes(event.type))
      .map((event) => (event.type === "tool-start" || event.type === "tool-end" ? `${event.type}:${event.name}` : event.type));
    assert.deepEqual(order, [
      "turn-start",
      "turn-end",
      "tool-start:get_weather",
      "tool-start:get_time",
      "tool-end:get_weather",
      "tool-end:get_time",
      "turn-start",
      "turn-end",
      "run-end",
    ]);
    const firstTurnText = events.filter((event) => event.type === "text-delta" && event.turn === 1).map((event) => (event.type === "text-delta" ? event.delta : ""));
    assert.equal(firstTurnText.join(""), "Let me look that up.");
    const finalDeltas = events.filter((event) => event.type === "text-delta" && event.turn === 2);
    assert.ok(finalDeltas.length > 1, "the final answer streams in pieces");

    const second = scripted.requests[1];
    assert.equal(second.tools, undefined);
    const lastMessage = second.messages.at(-1)!;
    assert.equal(lastMessage.role, "user");
    assert.match(String(lastMessage.content), /Tool result for get_weather \(call call_[0-9a-f]+\):\nsunny/);
    assert.match(String(lastMessage.content), /Tool result for get_time \(call call_[0-9a-f]+\):\n10:00/);
  });
});
