// Two-request loops through the real Agent, per provider: the local server checks that the second
// request carries the tool call(s) and their results in exactly that provider's wire format.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Agent } from "../../src/loop/agent.js";
import { type Model, type ModelRequest, type ToolDefinition, generate } from "../../src/model/model.js";
import { defineTool } from "../../src/tools/tool.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import { type RecordedRequest, type Responder, type TestServer, replay, sse, startServer } from "./fixture-server.js";
import { anthropicFrames, chatFrames, responsesFrames } from "./wire-scripts.js";

const weather = defineTool({
  name: "weather",
  description: "Weather at a location",
  parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
  execute: () => "72°F and sunny",
});

const resolveHoliday = defineTool({
  name: "calendar.resolve_holiday",
  description: "Resolves a holiday to dates",
  parameters: { type: "object", properties: { holiday: { type: "string" } }, required: ["holiday"] },
  execute: (args) => `${String(args.holiday)}: 2026-12-04 to 2026-12-12`,
});

const checkAvailability = defineTool({
  name: "hotel.check_availability",
  description: "Checks rooms",
  parameters: { type: "object", properties: { start: { type: "string" } } },
  execute: () => ({ content: "no rooms left", isError: true }),
});

const parallelTurn = {
  reasoning: "Two lookups are needed.",
  text: "Let me check both.",
  toolCalls: [
    { id: "call_holiday", name: "calendar_resolve_holiday", arguments: { holiday: "Hanukkah" } },
    { id: "call_rooms", name: "hotel_check_availability", arguments: { start: "2026-12-04" } },
  ],
  usage: { input: 50, output: 20 },
};

/** Serves the second request only if `check` accepts its body (else a 400 naming the problem). */
function checked(check: (request: RecordedRequest) => void, then: Responder): Responder {
  return (request, response) => {
    try {
      check(request);
    } catch (error) {
      response.writeHead(400, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { type: "invalid_request_error", message: `wire format check failed: ${(error as Error).message}` } }));
      return;
    }
    return then(request, response);
  };
}

async function runAgent(model: Model, tools = [weather], input = "What is the weather in San Francisco?") {
  const agent = new Agent({ name: "wire", instructions: "Be brief.", model, tools });
  const result = await agent.run(input);
  assert.equal(result.state, "COMPLETED", `${result.reason} ${result.error?.message ?? ""}`);
  return result;
}

async function withServer<T>(script: Responder[], body: (server: TestServer) => Promise<T>): Promise<T> {
  const server = await startServer(script);
  try {
    return await body(server);
  } finally {
    await server.close();
  }
}

describe("OpenAI Chat Completions wire format", () => {
  const expectChatRound = (request: RecordedRequest) => {
    assert.deepEqual(request.body.messages, [
      { role: "system", content: "Be brief." },
      { role: "user", content: "What is the weather in San Francisco?" },
      {
        role: "assistant",
        tool_calls: [{ id: "call_eee11723464a4b9eb8cee71d", type: "function", function: { name: "weather", arguments: '{"location": "San Francisco"}' } }],
      },
      { role: "tool", tool_call_id: "call_eee11723464a4b9eb8cee71d", content: "72°F and sunny" },
    ]);
  };

  test("recorded tool call, then one {role: tool, tool_call_id} message per result", async () => {
    await withServer([replay("openai-chat", "alibaba-tool-call"), checked(expectChatRound, replay("openai-chat", "groq-text"))], async (server) => {
      const result = await runAgent(openaiChat("qwen3-max", { baseURL: `${server.url}/v1`, apiKey: "k" }));
      assert.equal(server.requests.length, 2);
      expectChatRound(server.requests[1]);
      assert.ok(result.text.startsWith("Int"));
      assert.deepEqual(server.requests[0].body.tools, [
        { type: "function", function: { name: "weather", description: "Weather at a location", parameters: weather.parameters } },
      ]);
    });
  });

  test("parallel calls with dotted tool names: one assistant message, one tool message each", async () => {
    const expectParallel = (request: RecordedRequest) => {
      const messages = request.body.messages;
      assert.deepEqual(messages.slice(2), [
        {
          role: "assistant",
          content: "Let me check both.",
          // The tool round's reasoning goes back in the field it came in (DeepSeek's thinking mode needs it).
          reasoning_content: "Two lookups are needed.",
          tool_calls: [
            { id: "call_holiday", type: "function", function: { name: "calendar_resolve_holiday", arguments: '{"holiday":"Hanukkah"}' } },
            { id: "call_rooms", type: "function", function: { name: "hotel_check_availability", arguments: '{"start":"2026-12-04"}' } },
          ],
        },
        { role: "tool", tool_call_id: "call_holiday", content: "Hanukkah: 2026-12-04 to 2026-12-12" },
        { role: "tool", tool_call_id: "call_rooms", content: "no rooms left" },
      ]);
    };
    await withServer([sse(chatFrames(parallelTurn)), checked(expectParallel, sse(chatFrames({ text: "Booked." })))], async (server) => {
      const result = await runAgent(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" }), [resolveHoliday, checkAvailability], "Plan Hanukkah");
      assert.equal(result.text, "Booked.");
      expectParallel(server.requests[1]);
      assert.deepEqual(
        server.requests[0].body.tools.map((tool: { function: { name: string } }) => tool.function.name),
        ["calendar_resolve_holiday", "hotel_check_availability"],
      );
      // The loop saw its own names.
      const calls = result.messages.flatMap((message) => (message.role === "assistant" ? message.content.filter((part) => part.type === "tool-call") : []));
      assert.deepEqual(
        calls.map((call) => call.type === "tool-call" && call.name),
        ["calendar.resolve_holiday", "hotel.check_availability"],
      );
      const reasoning = result.messages.flatMap((message) => (message.role === "assistant" ? message.content.filter((part) => part.type === "reasoning") : []));
      assert.equal(reasoning[0]?.type === "reasoning" && reasoning[0].text, "Two lookups are needed.");
    });
  });
});

describe("OpenAI Responses wire format", () => {
  const expectResponsesRound = (request: RecordedRequest) => {
    assert.equal(request.body.instructions, "Be brief.");
    assert.deepEqual(request.body.input, [
      { role: "user", content: "What is the weather in San Francisco?" },
      {
        id: "fc_04041325ab8ae30400698c51c5468c8197a395f18875a5339f",
        type: "function_call",
        status: "completed",
        arguments: '{"location":"San Francisco"}',
        call_id: "call_H5DxLSFnsGhiROnUiDHmgyc8",
        name: "weather",
      },
      { type: "function_call_output", call_id: "call_H5DxLSFnsGhiROnUiDHmgyc8", output: "72°F and sunny" },
    ]);
  };

  test("recorded function_call item sent back verbatim, answered by function_call_output", async () => {
    await withServer([replay("openai-responses", "azure-tool-call.1"), checked(expectResponsesRound, replay("openai-responses", "azure-text.1"))], async (server) => {
      const result = await runAgent(openaiResponses("gpt-5.1", { baseURL: `${server.url}/v1`, apiKey: "k" }));
      assert.equal(result.text, "Hello");
      expectResponsesRound(server.requests[1]);
      assert.equal(server.requests[0].body.instructions, "Be brief.");
      assert.ok(!server.requests[0].body.input.some((item: { role?: string }) => item.role === "system"), "no system message in input");
    });
  });

  test("reasoning items (encrypted content) and parallel function calls round-trip unchanged", async () => {
    const expectParallel = (request: RecordedRequest) => {
      assert.deepEqual(request.body.input.slice(1), [
        { id: "rs_test", type: "reasoning", summary: [{ type: "summary_text", text: "Two lookups are needed." }], encrypted_content: "gAAAA-encrypted-reasoning" },
        { type: "message", role: "assistant", id: "msg_test", status: "completed", content: [{ type: "output_text", text: "Let me check both.", annotations: [] }] },
        { id: "fc_call_holiday", type: "function_call", status: "completed", arguments: '{"holiday":"Hanukkah"}', call_id: "call_holiday", name: "calendar_resolve_holiday" },
        { id: "fc_call_rooms", type: "function_call", status: "completed", arguments: '{"start":"2026-12-04"}', call_id: "call_rooms", name: "hotel_check_availability" },
        { type: "function_call_output", call_id: "call_holiday", output: "Hanukkah: 2026-12-04 to 2026-12-12" },
        { type: "function_call_output", call_id: "call_rooms", output: "no rooms left" },
      ]);
    };
    await withServer([sse(responsesFrames(parallelTurn)), checked(expectParallel, sse(responsesFrames({ text: "Booked." })))], async (server) => {
      const result = await runAgent(openaiResponses("m", { baseURL: `${server.url}/v1`, apiKey: "k" }), [resolveHoliday, checkAvailability], "Plan Hanukkah");
      assert.equal(result.text, "Booked.");
      expectParallel(server.requests[1]);
      assert.deepEqual(
        server.requests[0].body.tools.map((tool: { name: string; strict: boolean }) => [tool.name, tool.strict]),
        [
          ["calendar_resolve_holiday", false],
          ["hotel_check_availability", false],
        ],
      );
    });
  });
});

describe("Anthropic Messages wire format", () => {
  const expectAnthropicRound = (request: RecordedRequest) => {
    // Prompt caching is on by default: breakpoints after the tools and the system prompt, and on the newest message.
    assert.deepEqual(request.body.system, [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }]);
    assert.deepEqual(request.body.tools.at(-1).cache_control, { type: "ephemeral" });
    assert.deepEqual(request.body.messages, [
      { role: "user", content: [{ type: "text", text: "What is the weather in San Francisco?" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_019Zvehfe1XQWweT1pm7okyt", name: "weather", input: { location: "San Francisco" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_019Zvehfe1XQWweT1pm7okyt", content: "72°F and sunny", cache_control: { type: "ephemeral" } }] },
    ]);
  };

  test("recorded tool_use block kept verbatim, the result in a user message of tool_result blocks", async () => {
    await withServer(
      [replay("anthropic-messages", "anthropic-json-other-tool.1"), checked(expectAnthropicRound, replay("anthropic-messages", "anthropic-text"))],
      async (server) => {
        const result = await runAgent(anthropic("claude-test", { baseURL: server.url, apiKey: "k" }));
        assert.ok(result.text.startsWith("Hello! I'm doing well"));
        expectAnthropicRound(server.requests[1]);
      },
    );
  });

  test("thinking with signature, text and parallel tool_use blocks verbatim; ALL results in ONE user message, is_error set", async () => {
    const expectParallel = (request: RecordedRequest) => {
      assert.deepEqual(request.body.messages.slice(1), [
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "Two lookups are needed.", signature: "EqQBCgIYAhIM-signature" },
            { type: "text", text: "Let me check both." },
            { type: "tool_use", id: "call_holiday", name: "calendar_resolve_holiday", input: { holiday: "Hanukkah" } },
            { type: "tool_use", id: "call_rooms", name: "hotel_check_availability", input: { start: "2026-12-04" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "call_holiday", content: "Hanukkah: 2026-12-04 to 2026-12-12" },
            { type: "tool_result", tool_use_id: "call_rooms", content: "no rooms left", is_error: true },
          ],
        },
      ]);
    };
    await withServer([sse(anthropicFrames(parallelTurn)), checked(expectParallel, sse(anthropicFrames({ text: "Booked." })))], async (server) => {
      const result = await runAgent(anthropic("claude-test", { baseURL: server.url, apiKey: "k", promptCaching: false }), [resolveHoliday, checkAvailability], "Plan Hanukkah");
      assert.equal(result.text, "Booked.");
      expectParallel(server.requests[1]);
      assert.deepEqual(server.requests[0].body.tools[0], {
        name: "calendar_resolve_holiday",
        description: "Resolves a holiday to dates",
        input_schema: resolveHoliday.parameters,
      });
    });
  });

  test("redacted_thinking and thinking blocks come back verbatim on the next request", async () => {
    const frame = (payload: { type: string; [key: string]: unknown }) => `event: ${payload.type}\ndata: ${JSON.stringify(payload)}\n\n`;
    const frames = [
      frame({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "m", content: [], usage: { input_tokens: 5, output_tokens: 1 } } }),
      frame({ type: "content_block_start", index: 0, content_block: { type: "redacted_thinking", data: "EmwKAhgBEgy3va-opaque" } }),
      frame({ type: "content_block_stop", index: 0 }),
      frame({ type: "content_block_start", index: 1, content_block: { type: "thinking", thinking: "", signature: "" } }),
      frame({ type: "content_block_delta", index: 1, delta: { type: "thinking_delta", thinking: "Let me think." } }),
      frame({ type: "content_block_delta", index: 1, delta: { type: "signature_delta", signature: "sig-part-1" } }),
      frame({ type: "content_block_delta", index: 1, delta: { type: "signature_delta", signature: "-part-2" } }),
      frame({ type: "content_block_stop", index: 1 }),
      frame({ type: "content_block_start", index: 2, content_block: { type: "text", text: "" } }),
      frame({ type: "content_block_delta", index: 2, delta: { type: "text_delta", text: "Done." } }),
      frame({ type: "content_block_stop", index: 2 }),
      frame({ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 9 } }),
      frame({ type: "message_stop" }),
    ];
    await withServer([sse(frames), sse(anthropicFrames({ text: "ok" }))], async (server) => {
      const model = anthropic("claude-test", { baseURL: server.url, apiKey: "k", promptCaching: false });
      const first = await generate(model, { messages: [{ role: "user", content: "think" }] });
      assert.equal(first.error, undefined);
      assert.deepEqual(
        first.message.content.map((part) => part.type),
        ["reasoning", "reasoning", "text"],
      );
      await generate(model, { messages: [{ role: "user", content: "think" }, first.message, { role: "user", content: "again" }] });
      assert.deepEqual(server.requests[1].body.messages[1], {
        role: "assistant",
        content: [
          { type: "redacted_thinking", data: "EmwKAhgBEgy3va-opaque" },
          { type: "thinking", thinking: "Let me think.", signature: "sig-part-1-part-2" },
          { type: "text", text: "Done." },
        ],
      });
    });
  });

  test("blocks no part can carry (server tools) keep the whole answer verbatim on the message", async () => {
    const frame = (payload: { type: string; [key: string]: unknown }) => `event: ${payload.type}\ndata: ${JSON.stringify(payload)}\n\n`;
    const searchResult = { type: "web_search_tool_result", tool_use_id: "srvtoolu_1", content: [{ type: "web_search_result", url: "https://example.com", title: "Hanukkah 2026", encrypted_content: "opaque" }] };
    const frames = [
      frame({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "m", content: [], usage: { input_tokens: 5, output_tokens: 1 } } }),
      frame({ type: "content_block_start", index: 0, content_block: { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} } }),
      frame({ type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"query":"hanukkah 2026"}' } }),
      frame({ type: "content_block_stop", index: 0 }),
      frame({ type: "content_block_start", index: 1, content_block: searchResult }),
      frame({ type: "content_block_stop", index: 1 }),
      frame({ type: "content_block_start", index: 2, content_block: { type: "text", text: "" } }),
      frame({ type: "content_block_delta", index: 2, delta: { type: "text_delta", text: "It starts on December 4." } }),
      frame({ type: "content_block_stop", index: 2 }),
      frame({ type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 9 } }),
      frame({ type: "message_stop" }),
    ];
    await withServer([sse(frames), sse(anthropicFrames({ text: "ok" }))], async (server) => {
      const model = anthropic("claude-test", { baseURL: server.url, apiKey: "k", promptCaching: false });
      const first = await generate(model, { messages: [{ role: "user", content: "when?" }] });
      assert.equal(first.error, undefined);
      assert.deepEqual(
        first.message.content.map((part) => part.type),
        ["text"],
      );
      await generate(model, { messages: [{ role: "user", content: "when?" }, first.message, { role: "user", content: "thanks" }] });
      assert.deepEqual(server.requests[1].body.messages[1], {
        role: "assistant",
        content: [
          { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "hanukkah 2026" } },
          searchResult,
          { type: "text", text: "It starts on December 4." },
        ],
      });
    });
  });

  test("consecutive same-role messages are merged, tool results first", async () => {
    await withServer([sse(anthropicFrames({ text: "ok" }))], async (server) => {
      const model = anthropic("claude-test", { baseURL: server.url, apiKey: "k", promptCaching: false });
      const request: ModelRequest = {
        messages: [
          { role: "system", content: "One." },
          { role: "system", content: "Two." },
          { role: "user", content: "first" },
          { role: "user", content: "second" },
          { role: "assistant", content: [{ type: "tool-call", id: "toolu_1", name: "calendar.resolve_holiday", arguments: '{"holiday":"Purim"}' }] },
          { role: "tool", toolCallId: "toolu_1", toolName: "calendar.resolve_holiday", content: "March" },
          { role: "user", content: "and steer this way" },
        ],
      };
      for await (const _ of model.stream(request)) {
        // drain
      }
      const body = server.requests[0].body;
      assert.equal(body.system, "One.\n\nTwo.");
      assert.deepEqual(body.messages, [
        {
          role: "user",
          content: [
            { type: "text", text: "first" },
            { type: "text", text: "second" },
          ],
        },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "calendar_resolve_holiday", input: { holiday: "Purim" } }] },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: "March" },
            { type: "text", text: "and steer this way" },
          ],
        },
      ]);
    });
  });
});

describe("tool choice per provider", () => {
  const choices = ["auto", "none", "required", { type: "tool", name: "calendar.resolve_holiday" }] as const;

  test("auto / none / required / named map to each wire format", async () => {
    const tools = [{ name: "calendar.resolve_holiday", description: "d", parameters: { type: "object" } }];
    const seen: Record<string, unknown[]> = { chat: [], responses: [], anthropic: [] };
    for (const choice of choices) {
      await withServer([sse(chatFrames({ text: "ok" })), sse(responsesFrames({ text: "ok" })), sse(anthropicFrames({ text: "ok" }))], async (server) => {
        const models = [
          openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" }),
          openaiResponses("m", { baseURL: `${server.url}/v1`, apiKey: "k" }),
          anthropic("m", { baseURL: server.url, apiKey: "k", promptCaching: false }),
        ];
        for (const model of models) {
          for await (const _ of model.stream({ messages: [{ role: "user", content: "x" }], tools, toolChoice: choice })) {
            // drain
          }
        }
        seen.chat.push(server.requests[0].body.tool_choice);
        seen.responses.push(server.requests[1].body.tool_choice);
        seen.anthropic.push(server.requests[2].body.tool_choice);
      });
    }
    assert.deepEqual(seen.chat, ["auto", "none", "required", { type: "function", function: { name: "calendar_resolve_holiday" } }]);
    assert.deepEqual(seen.responses, ["auto", "none", "required", { type: "function", name: "calendar_resolve_holiday" }]);
    assert.deepEqual(seen.anthropic, [{ type: "auto" }, { type: "none" }, { type: "any" }, { type: "tool", name: "calendar_resolve_holiday" }]);
  });
});

describe("tool schemas", () => {
  test("a tool whose schema has no type is sent as an object schema on every provider", async () => {
    const tools = [{ name: "ping", description: "no arguments", parameters: {} }];
    await withServer([sse(chatFrames({ text: "ok" })), sse(responsesFrames({ text: "ok" })), sse(anthropicFrames({ text: "ok" }))], async (server) => {
      const models = [
        openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" }),
        openaiResponses("m", { baseURL: `${server.url}/v1`, apiKey: "k" }),
        anthropic("m", { baseURL: server.url, apiKey: "k", promptCaching: false }),
      ];
      for (const model of models) await generate(model, { messages: [{ role: "user", content: "x" }], tools });
      const empty = { type: "object", properties: {} };
      assert.deepEqual(server.requests[0].body.tools[0].function.parameters, empty);
      assert.deepEqual(server.requests[1].body.tools[0].parameters, empty);
      assert.deepEqual(server.requests[2].body.tools[0].input_schema, empty);
    });
  });
});

describe("a Chat Completions model's tool list from call to call", () => {
  test("each request sends the tools it was given: a list changed in place, a replaced definition, a renamed tool, provider options' own", async () => {
    const frames = () => sse(chatFrames({ text: "ok" }));
    await withServer([frames(), frames(), frames(), frames(), frames(), frames()], async (server) => {
      const chat = openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" });
      const ask = (request: Omit<ModelRequest, "messages">, messages: ModelRequest["messages"] = [{ role: "user", content: "x" }]) => generate(chat, { messages, ...request });
      const ping: ToolDefinition = { name: "ping", description: "no arguments", parameters: { type: "object" } };
      const tools: ToolDefinition[] = [ping];
      await ask({ tools });
      tools.push({ name: "weather", description: "Weather at a location", parameters: { type: "object", properties: { location: { type: "string" } } } });
      await ask({ tools });
      tools[0] = { ...ping, description: "replaced" };
      await ask({ tools });
      // The same definition, renamed: a called tool of the history already has its legal name.
      const dotted = [{ name: "a.b", description: "dotted", parameters: { type: "object" } }];
      await ask({ tools: dotted });
      const called: ModelRequest["messages"] = [
        { role: "user", content: "x" },
        { role: "assistant", content: [{ type: "tool-call", id: "c1", name: "a_b", arguments: "{}" }] },
        { role: "tool", toolCallId: "c1", toolName: "a_b", content: "done" },
      ];
      await ask({ tools: dotted }, called);
      const own = [{ type: "function", function: { name: "own", parameters: { type: "object" } } }];
      await ask({ tools, toolChoice: "auto", options: { providerOptions: { openai: { tools: own } } } });
      const sent = server.requests.map((request) => request.body.tools.map((tool: { function: { name: string; description?: string } }) => [tool.function.name, tool.function.description]));
      assert.deepEqual(sent, [
        [["ping", "no arguments"]],
        [["ping", "no arguments"], ["weather", "Weather at a location"]],
        [["ping", "replaced"], ["weather", "Weather at a location"]],
        [["a_b", "dotted"]],
        [["a_b_2", "dotted"]],
        [["own", undefined]],
      ]);
      assert.equal(server.requests[5].body.tool_choice, "auto");
      assert.deepEqual(Object.keys(server.requests[1].body), ["model", "messages", "tools", "stream", "stream_options"]);
    });
  });
});

describe("images in tool results", () => {
  // A 1x1 PNG, as a tool would return a screenshot.
  const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
  const screenshot = defineTool({
    name: "screenshot",
    description: "Takes a screenshot of the page",
    parameters: { type: "object", properties: {} },
    execute: () => ({
      content: [
        { type: "text" as const, text: "The page:" },
        { type: "image" as const, data: pixel, mediaType: "image/png" },
        { type: "image" as const, url: "https://example.com/chart.png" },
      ],
    }),
  });
  const callTurn = { toolCalls: [{ id: "call_shot", name: "screenshot", arguments: {} }], usage: { input: 10, output: 5 } };
  /** The last input item / message of the second request, as the server received it. */
  const secondRequest = (server: TestServer) => server.requests[1].body;

  test("Chat Completions: a tool message carries text only (the API takes no images there)", async () => {
    await withServer([sse(chatFrames(callTurn)), sse(chatFrames({ text: "I see it." }))], async (server) => {
      const result = await runAgent(openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k" }), [screenshot], "Look at the page");
      assert.equal(result.text, "I see it.");
      assert.deepEqual(secondRequest(server).messages.at(-1), { role: "tool", tool_call_id: "call_shot", content: "The page:" });
    });
  });

  test("Responses: function_call_output carries input_text and input_image items", async () => {
    await withServer([sse(responsesFrames(callTurn)), sse(responsesFrames({ text: "I see it." }))], async (server) => {
      const result = await runAgent(openaiResponses("m", { baseURL: `${server.url}/v1`, apiKey: "k" }), [screenshot], "Look at the page");
      assert.equal(result.text, "I see it.");
      assert.deepEqual(secondRequest(server).input.at(-1), {
        type: "function_call_output",
        call_id: "call_shot",
        output: [
          { type: "input_text", text: "The page:" },
          { type: "input_image", image_url: `data:image/png;base64,${pixel}`, detail: "auto" },
          { type: "input_image", image_url: "https://example.com/chart.png", detail: "auto" },
        ],
      });
    });
  });

  test("Responses: a text-only result stays a plain string output", async () => {
    await withServer([replay("openai-responses", "azure-tool-call.1"), sse(responsesFrames({ text: "Sunny." }))], async (server) => {
      await runAgent(openaiResponses("m", { baseURL: `${server.url}/v1`, apiKey: "k" }));
      assert.deepEqual(secondRequest(server).input.at(-1), { type: "function_call_output", call_id: "call_H5DxLSFnsGhiROnUiDHmgyc8", output: "72°F and sunny" });
    });
  });

  test("Anthropic: the tool_result block carries text and image blocks (base64 and URL)", async () => {
    await withServer([sse(anthropicFrames(callTurn)), sse(anthropicFrames({ text: "I see it." }))], async (server) => {
      const result = await runAgent(anthropic("m", { baseURL: server.url, apiKey: "k", promptCaching: false }), [screenshot], "Look at the page");
      assert.equal(result.text, "I see it.");
      assert.deepEqual(secondRequest(server).messages.at(-1), {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "call_shot",
            content: [
              { type: "text", text: "The page:" },
              { type: "image", source: { type: "base64", media_type: "image/png", data: pixel } },
              { type: "image", source: { type: "url", url: "https://example.com/chart.png" } },
            ],
          },
        ],
      });
    });
  });
});
