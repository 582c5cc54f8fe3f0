import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { AgentLoopError } from "../errors.js";
import { Agent } from "../loop/agent.js";
import type { Model, } from "../model/model.js";
import { ScriptedModel } from "../model/scripted.js";
import { openaiChat } from "../providers/openai/chat.js";
import { defineTool } from "../tools/tool.js";
import { isToolsUnsupportedError, parseToolCallMode, TOOL_CALL_MODES, toolCallModeFromEnv, withToolCallMode } from "./index.js";
import { streamEvents as collect } from "../../test/support.js";

delete process.env.DEBUG_MOCK_RESPONSES;

interface ChatBody {
  model: string;
  messages: Array<{ role: string; content: unknown }>;
  tools?: unknown[];
  stream?: boolean;
}

/**
 * A small OpenAI-compatible server for a model without native tools: a request with `tools`
 * gets the `reject` answer (Ollama's 400 by default); others get the next scripted answer as SSE.
 */
class ToollessChatServer {
  readonly bodies: ChatBody[] = [];
  answers: string[] = [];
  reject = { status: 400, message: "registry.ollama.ai/library/gemma:2b does not support tools" };
  private server?: Server;

  async start(): Promise<string> {
    this.server = createServer(async (request, response) => {
      const body = JSON.parse(await readBody(request)) as ChatBody;
      this.bodies.push(body);
      if (body.tools) {
        response.writeHead(this.reject.status, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { message: this.reject.message, type: "api_error" } }));
        return;
      }
      const answer = this.answers.shift() ?? "[no more answers]";
      response.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta: object, finish: string | null) =>
        `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      response.write(chunk({ role: "assistant", content: "" }, null));
      for (const piece of answer.match(/.{1,8}/gs) ?? []) response.write(chunk({ content: piece }, null));
      response.write(chunk({}, "stop"));
      response.write(
        `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: body.model, choices: [], usage: { prompt_tokens: 20, completion_tokens: 7, total_tokens: 27 } })}\n\n`,
      );
      response.end("data: [DONE]\n\n");
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    request.setEncoding("utf8");
    request.on("data", (chunk) => (text += chunk));
    request.on("end", () => resolve(text));
    request.on("error", reject);
  });
}

function weatherAgent(model: Model, executed: string[]) {
  return new Agent({
    name: "weather",
    instructions: "You answer weather questions.",
    model,
    tools: [
      defineTool({
        name: "get_weather",
        description: "Current weather for a city.",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        execute: (args) => {
          executed.push(String(args.city));
          return "sunny, 21°C";
        },
      }),
    ],
  });
}

describe("withToolCallMode auto against a server without native tools", () => {
  const server = new ToollessChatServer();
  let baseURL = "";
  before(async () => {
    baseURL = await server.start();
  });
  after(() => server.stop());

  it("falls back to the string protocol once, remembers it, and finishes the run", async () => {
    server.bodies.length = 0;
    server.answers = ['{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}', "It is sunny in Paris, 21°C.", "Still sunny."];
    const fallbacks: AgentLoopError[] = [];
    const model = withToolCallMode(openaiChat("gemma:2b", { baseURL, apiKey: "test", retry: { maxRetries: 0 } }), "auto", {
      onFallback: (error) => fallbacks.push(error),
    });
    const executed: string[] = [];
    const agent = weatherAgent(model, executed);

    const run = agent.run("Weather in Paris?");
    const deltas: string[] = [];
    for await (const event of run) if (event.type === "text-delta") deltas.push(event.delta);
    const result = await run;

    assert.equal(result.state, "COMPLETED", result.reason);
    assert.equal(result.text, "It is sunny in Paris, 21°C.");
    assert.equal(deltas.join(""), "It is sunny in Paris, 21°C.");
    assert.deepEqual(executed, ["Paris"]);
    assert.equal(fallbacks.length, 1);
    assert.equal(fallbacks[0].status, 400);
    assert.match(fallbacks[0].message, /does not support tools/);

    // On the wire: one native attempt (rejected), then two string-mode requests without `tools`.
    assert.equal(server.bodies.length, 3);
    assert.ok(Array.isArray(server.bodies[0].tools));
    assert.equal(server.bodies[1].tools, undefined);
    assert.equal(server.bodies[2].tools, undefined);
    const system = server.bodies[1].messages[0];
    assert.equal(system.role, "system");
    assert.match(String(system.content), /^You answer weather questions\.\n\n## Tools\nYou can call these tools:\n- get_weather: Current weather for a city\./);
    const last = server.bodies[2].messages.at(-1)!;
    assert.equal(last.role, "user");
    assert.match(String(last.content), /^Tool result for get_weather \(call call_[0-9a-f]{24}\):\nsunny, 21°C/);
    assert.equal(server.bodies[2].messages.at(-2)!.role, "assistant");
    assert.match(JSON.stringify(server.bodies[2].messages.at(-2)!.content), /tool_calls/);

    // A later run of the same agent (a per-run copy of the model) goes straight to string mode.
    const second = await agent.run("And now?");
    assert.equal(second.text, "Still sunny.");
    assert.equal(server.bodies.length, 4);
    assert.equal(server.bodies[3].tools, undefined);
    assert.equal(fallbacks.length, 1);
  });

  it("does not fall back on a 400 that is not about tools", async () => {
    server.bodies.length = 0;
    server.reject = { status: 400, message: "temperature must be between 0 and 2" };
    try {
      const model = withToolCallMode(openaiChat("gemma:2b", { baseURL, apiKey: "test", retry: { maxRetries: 0 } }), "auto");
      const result = await weatherAgent(model, []).run("Weather?");
      assert.equal(result.state, "FAILED");
      assert.equal(result.error?.kind, "invalid_request");
      assert.match(result.error!.message, /temperature must be between 0 and 2/);
      assert.equal(server.bodies.length, 1);
    } finally {
      server.reject = { status: 400, message: "registry.ollama.ai/library/gemma:2b does not support tools" };
    }
  });

  it("does not fall back on a 500 that mentions tools", async () => {
    server.bodies.length = 0;
    server.reject = { status: 500, message: "tool parser crashed" };
    try {
      const model = withToolCallMode(openaiChat("gemma:2b", { baseURL, apiKey: "test", retry: { maxRetries: 0 } }), "auto");
      const events = await collect(model, { messages: [{ role: "user", content: "hi" }], tools: [{ name: "t", description: "", parameters: { type: "object" } }] });
      const last = events.at(-1);
      assert.equal(last?.type, "error");
      if (last?.type === "error") assert.equal(last.error.status, 500);
      assert.equal(server.bodies.length, 1);
    } finally {
      server.reject = { status: 400, message: "registry.ollama.ai/library/gemma:2b does not support tools" };
    }
  });
});

describe("withToolCallMode auto, edge cases", () => {
  const toolsRejection = () => new AgentLoopError("invalid_request", "openai 400: tools are not supported", { status: 400 });
  const tools = [{ name: "t", description: "", parameters: { type: "object" } }];

  it("does not retry once output has reached the caller", async () => {
    let calls = 0;
    const inner: Model = {
      provider: "test",
      modelId: "late-error",
      async *stream() {
        calls++;
        yield { type: "response-start" };
        yield { type: "text-delta", id: "t", delta: "Hel" };
        yield { type: "error", error: toolsRejection() };
      },
    };
    const events = await collect(withToolCallMode(inner, "auto"), { messages: [{ role: "user", content: "hi" }], tools });
    assert.deepEqual(
      events.map((event) => event.type),
      ["response-start", "text-delta", "error"],
    );
    assert.equal(calls, 1);
  });

  it("does not switch for a request without tools", async () => {
    let calls = 0;
    const inner: Model = {
      provider: "test",
      modelId: "no-tools",
      async *stream() {
        calls++;
        yield { type: "error", error: toolsRejection() };
      },
    };
    const events = await collect(withToolCallMode(inner, "auto"), { messages: [{ role: "user", content: "hi" }] });
    assert.equal(events.at(-1)?.type, "error");
    assert.equal(calls, 1);
  });

  it("native returns the model itself; the text modes wrap it", () => {
    const scripted = new ScriptedModel([]);
    assert.equal(withToolCallMode(scripted, "native"), scripted);
    for (const mode of ["string", "action", "plan", "auto"] as const) {
      const wrapped = withToolCallMode(scripted, mode);
      assert.notEqual(wrapped, scripted);
      assert.equal(wrapped.modelId, scripted.modelId);
      assert.equal(wrapped.provider, scripted.provider);
    }
  });

  it("refuses to wrap something that is not a Model", () => {
    for (const mode of ["string", "action", "plan", "auto"] as const) {
      assert.throws(() => withToolCallMode({} as never, mode), /tool calling: the wrapped model must implement Model \(a stream\(request\) method\)/);
    }
  });

  it("names the valid modes for an unknown one, from code and from TOOL_CALL_MODE", () => {
    assert.throws(() => withToolCallMode(new ScriptedModel([]), "json" as never), /unknown tool call mode "json"; use one of auto, native, string, action, plan/);
    assert.equal(toolCallModeFromEnv({ TOOL_CALL_MODE: "String" }), "string");
    assert.equal(toolCallModeFromEnv({}), undefined);
    assert.throws(() => toolCallModeFromEnv({ TOOL_CALL_MODE: "xml" }), /^TypeError: TOOL_CALL_MODE: unknown tool call mode "xml"/);
    assert.deepEqual([...TOOL_CALL_MODES], ["auto", "native", "string", "action", "plan", "fenced"]);
    assert.equal(parseToolCallMode(" plan "), "plan");
  });

  it("recognises tool rejections by status and message", () => {
    const error = (status: number | undefined, message: string) => new AgentLoopError("invalid_request", message, { status });
    assert.equal(isToolsUnsupportedError(error(400, "model does not support tools")), true);
    assert.equal(isToolsUnsupportedError(error(422, "Function calling is not enabled for this model")), true);
    assert.equal(isToolsUnsupportedError(error(400, "`tool_choice` is not supported")), true);
    assert.equal(isToolsUnsupportedError(error(400, "max_tokens is too large")), false);
    assert.equal(isToolsUnsupportedError(error(500, "tools not supported")), false);
    assert.equal(isToolsUnsupportedError(error(undefined, "tools not supported")), false);
  });
});
