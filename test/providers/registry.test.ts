// Model selection: spec strings and objects, keys and URLs from the environment, KAOS variables,
// configuration errors before any request, and the light `agentloop/providers` import.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { AgentLoopError } from "../../src/errors.js";
import { generate } from "../../src/model/model.js";
import { ScriptedModel } from "../../src/model/scripted.js";
import { compatibleBaseURL, modelFromEnv, parseModelSpec, resolveModel } from "../../src/providers/index.js";
import type { Message } from "../../src/messages.js";
import { chatMessages } from "../../src/providers/openai/chat.js";
import { ToolNameMap, sanitizeToolName } from "../../src/providers/tool-names.js";
import { type TestServer, json, sse, startServer } from "./fixture-server.js";
import { anthropicFrames, chatFrames, responsesFrames } from "./wire-scripts.js";

async function configurationError(promise: Promise<unknown>): Promise<AgentLoopError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(AgentLoopError.isInstance(error), `expected an AgentLoopError, got ${error}`);
    assert.equal(error.kind, "configuration");
    assert.equal(error.retryable, false);
    return error;
  }
  assert.fail("expected a configuration error");
}

async function withServer<T>(frames: string[][], body: (server: TestServer) => Promise<T>): Promise<T> {
  const server = await startServer(frames.map((list) => sse(list)));
  try {
    return await body(server);
  } finally {
    await server.close();
  }
}

const hello = { messages: [{ role: "user" as const, content: "hi" }] };

describe("resolveModel", () => {
  test("an unknown provider fails before any request, listing the known ones", async () => {
    const error = await configurationError(resolveModel("mistral-cloud:large", { OPENAI_API_KEY: "k" }));
    assert.match(error.message, /unknown provider "mistral-cloud"/);
    assert.match(error.message, /openai, openai-chat, openai-responses, openai-compatible, anthropic/);
  });

  test("a missing key names the variable to set", async () => {
    assert.match((await configurationError(resolveModel("openai:gpt-4.1", {}))).message, /set OPENAI_API_KEY/);
    assert.match((await configurationError(resolveModel("openai-responses:gpt-5", {}))).message, /set OPENAI_API_KEY/);
    assert.match((await configurationError(resolveModel("anthropic:claude-sonnet-4-5", {}))).message, /set ANTHROPIC_API_KEY/);
  });

  test("an empty model name or spec is a configuration error", async () => {
    await configurationError(resolveModel("openai:", { OPENAI_API_KEY: "k" }));
    await configurationError(resolveModel("  ", { OPENAI_API_KEY: "k" }));
    await configurationError(resolveModel({ model: "" }, { OPENAI_API_KEY: "k" }));
  });

  test("openai-compatible needs a URL and says which variable gives it", async () => {
    assert.match((await configurationError(resolveModel("openai-compatible:llama3.2", {}))).message, /OPENAI_BASE_URL/);
    assert.match((await configurationError(resolveModel({ model: "x", baseURL: "not a url" }, {}))).message, /not an http\(s\) URL/);
    assert.match((await configurationError(resolveModel("anthropic:x", { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: "localhost:8080" }))).message, /ANTHROPIC_BASE_URL/);
  });

  test("parseModelSpec splits at the first colon; a bare name is an OpenAI model", () => {
    assert.deepEqual(parseModelSpec("openai-compatible:llama3.2:3b"), { provider: "openai-compatible", model: "llama3.2:3b" });
    assert.deepEqual(parseModelSpec("gpt-4.1"), { provider: "openai", model: "gpt-4.1" });
  });

  test("openai:<model> with OPENAI_API_KEY and OPENAI_BASE_URL talks Chat Completions to that server", async () => {
    await withServer([chatFrames({ text: "from chat" })], async (server) => {
      const model = await resolveModel("openai:gpt-4.1", { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: `${server.url}/v1` });
      assert.equal(model.provider, "openai");
      assert.equal(model.modelId, "gpt-4.1");
      const response = await generate(model, hello);
      assert.equal(response.message.content[0]?.type === "text" && response.message.content[0].text, "from chat");
      assert.equal(server.requests[0].path, "/v1/chat/completions");
      assert.equal(server.requests[0].headers.authorization, "Bearer sk-test");
      assert.equal(server.requests[0].body.model, "gpt-4.1");
    });
  });

  test("openai-responses:<model> talks to /responses; anthropic:<model> to /v1/messages with ANTHROPIC_BASE_URL", async () => {
    await withServer([responsesFrames({ text: "r" }), anthropicFrames({ text: "a" })], async (server) => {
      const responses = await resolveModel("openai-responses:gpt-5", { OPENAI_API_KEY: "sk", OPENAI_BASE_URL: `${server.url}/v1` });
      assert.equal(responses.provider, "openai-responses");
      assert.equal((await generate(responses, hello)).error, undefined);
      const claude = await resolveModel("anthropic:claude-test", { ANTHROPIC_API_KEY: "ak", ANTHROPIC_BASE_URL: server.url });
      assert.equal(claude.provider, "anthropic");
      assert.equal((await generate(claude, hello)).error, undefined);
      assert.deepEqual(
        server.requests.map((request) => request.path),
        ["/v1/responses", "/v1/messages"],
      );
    });
  });

  test("a base URL + model name selects a compatible server; no key needed there", async () => {
    await withServer([chatFrames({ text: "local" })], async (server) => {
      const model = await resolveModel({ baseURL: `${server.url}/v1`, model: "llama3.2" }, {});
      assert.equal(model.provider, "openai-compatible");
      assert.equal((await generate(model, hello)).error, undefined);
      assert.equal(server.requests[0].headers.authorization, "Bearer not-needed");
      // A custom server gets max_tokens (the field compatible servers know).
    });
  });

  test("spec options reach the adapter (stream: false, retry)", async () => {
    const server = await startServer([
      (_request, response) => {
        response.writeHead(200, { "content-type": "application/json" });
        response.end(
          JSON.stringify({
            id: "x",
            object: "chat.completion",
            model: "m",
            choices: [{ index: 0, message: { role: "assistant", content: "json body" }, finish_reason: "stop" }],
            usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
          }),
        );
      },
    ]);
    try {
      const model = await resolveModel({ provider: "openai", model: "m", baseURL: `${server.url}/v1`, apiKey: "k", stream: false }, {});
      const response = await generate(model, { ...hello, options: { maxOutputTokens: 77 } });
      assert.equal(response.message.content[0]?.type === "text" && response.message.content[0].text, "json body");
      assert.equal(server.requests[0].body.stream, false);
      assert.equal(server.requests[0].body.max_tokens, 77);
    } finally {
      await server.close();
    }
  });

  test("stream: false reaches the Responses and Anthropic adapters too", async () => {
    const server = await startServer([
      json(200, { id: "resp_1", object: "response", model: "m", status: "completed", output: [{ id: "msg_1", type: "message", role: "assistant", content: [{ type: "output_text", text: "from responses" }] }] }),
      json(200, { id: "msg_1", type: "message", role: "assistant", model: "m", content: [{ type: "text", text: "from anthropic" }], stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 1 } }),
    ]);
    try {
      const texts: string[] = [];
      for (const spec of [
        { provider: "openai-responses", model: "m", baseURL: `${server.url}/v1`, apiKey: "k", stream: false },
        { provider: "anthropic", model: "m", baseURL: server.url, apiKey: "k", stream: false },
      ]) {
        const response = await generate(await resolveModel(spec, {}), hello);
        texts.push(response.message.content.map((part) => (part.type === "text" ? part.text : "")).join(""));
      }
      assert.deepEqual(texts, ["from responses", "from anthropic"]);
      assert.deepEqual(
        server.requests.map((request) => [request.path, request.body.stream]),
        [
          ["/v1/responses", false],
          ["/v1/messages", false],
        ],
      );
    } finally {
      await server.close();
    }
  });
});

describe("modelFromEnv", () => {
  test("DEBUG_MOCK_RESPONSES gives the scripted model", async () => {
    const model = await modelFromEnv({ env: { DEBUG_MOCK_RESPONSES: '["Hello!"]', MODEL_API_URL: "http://unused", MODEL_NAME: "x" } });
    assert.ok(model instanceof ScriptedModel);
    const response = await generate(model, hello);
    assert.equal(response.message.content[0]?.type === "text" && response.message.content[0].text, "Hello!");
  });

  test("KAOS MODEL_API_URL + MODEL_NAME: an OpenAI-compatible server under /v1, placeholder key", async () => {
    await withServer([chatFrames({ text: "from ollama" })], async (server) => {
      const model = await modelFromEnv({ env: { MODEL_API_URL: server.url, MODEL_NAME: "llama3.2", OPENAI_API_KEY: "sk-must-not-leak" } });
      assert.equal(model.modelId, "llama3.2");
      const response = await generate(model, hello);
      assert.equal(response.error, undefined);
      assert.equal(server.requests[0].path, "/v1/chat/completions");
      assert.equal(server.requests[0].body.model, "llama3.2");
      assert.equal(server.requests[0].headers.authorization, "Bearer not-needed", "the OpenAI key is not sent to a third-party server");
    });
  });

  test("MODEL_API_URL alone, or MODEL_NAME alone, names the missing variable", async () => {
    assert.match((await configurationError(modelFromEnv({ env: { MODEL_API_URL: "http://ollama:11434" } }))).message, /set MODEL_NAME/);
    assert.match((await configurationError(modelFromEnv({ env: { MODEL_NAME: "llama3.2" } }))).message, /set MODEL_API_URL/);
  });

  test("falls back to the explicit spec, and says what to set when nothing is configured", async () => {
    const model = await modelFromEnv({ env: { ANTHROPIC_API_KEY: "k" }, spec: "anthropic:claude-sonnet-4-5" });
    assert.equal(model.provider, "anthropic");
    const error = await configurationError(modelFromEnv({ env: {} }));
    assert.match(error.message, /MODEL_API_URL and MODEL_NAME/);
    assert.match(error.message, /DEBUG_MOCK_RESPONSES/);
  });

  test("compatibleBaseURL appends /v1 to a bare server root only", () => {
    assert.equal(compatibleBaseURL("http://ollama:11434"), "http://ollama:11434/v1");
    assert.equal(compatibleBaseURL("http://ollama:11434/"), "http://ollama:11434/v1");
    assert.equal(compatibleBaseURL("http://vllm:8000/v1"), "http://vllm:8000/v1");
    assert.equal(compatibleBaseURL("https://proxy.example/openai/"), "https://proxy.example/openai");
    assert.throws(() => compatibleBaseURL("ollama"), (error: unknown) => AgentLoopError.isInstance(error) && error.kind === "configuration");
  });
});

describe("tool names", () => {
  test("illegal characters are replaced and mapped back", () => {
    const names = new ToolNameMap(["calendar.resolve_holiday", "weather"]);
    assert.equal(names.toProviderName("calendar.resolve_holiday"), "calendar_resolve_holiday");
    assert.equal(names.fromProviderName("calendar_resolve_holiday"), "calendar.resolve_holiday");
    assert.equal(names.toProviderName("weather"), "weather");
    assert.equal(names.fromProviderName("unknown_tool"), "unknown_tool");
  });

  test("collisions get a suffix; names already legal keep themselves", () => {
    const names = new ToolNameMap(["a.b", "a_b", "a b"]);
    assert.equal(names.toProviderName("a_b"), "a_b");
    assert.equal(names.toProviderName("a.b"), "a_b_2");
    assert.equal(names.toProviderName("a b"), "a_b_3");
    for (const name of ["a.b", "a_b", "a b"]) assert.equal(names.fromProviderName(names.toProviderName(name)), name);
  });

  test("a history message is sent under each request's names (a later name can change an earlier call's)", () => {
    const history: Message[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: [{ type: "tool-call", id: "c1", name: "a.b", arguments: "{}" }] },
      { role: "tool", toolCallId: "c1", toolName: "a.b", content: "one" },
    ];
    const callName = (wire: unknown[]) => (wire[1] as { tool_calls: Array<{ function: { name: string } }> }).tool_calls[0].function.name;
    assert.equal(callName(chatMessages(history, ToolNameMap.forRequest([], history))), "a_b");
    // A tool named `a_b` joins: it keeps its legal name, and the history's `a.b` becomes `a_b_2`.
    const tools = [{ name: "a_b", description: "", parameters: { type: "object" } }];
    const names = ToolNameMap.forRequest(tools, history);
    assert.equal(callName(chatMessages(history, names)), "a_b_2");
    assert.equal(names.fromProviderName("a_b_2"), "a.b");
    assert.deepEqual(chatMessages(history, names)[2], { role: "tool", tool_call_id: "c1", content: "one" });
  });

  test("long and non-ASCII names become legal and stay unique", () => {
    const long = `${"x".repeat(70)}.one`;
    const longer = `${"x".repeat(70)}.two`;
    const names = new ToolNameMap([long, longer, "réserver.chambre"]);
    for (const name of [long, longer, "réserver.chambre"]) {
      const provider = names.toProviderName(name);
      assert.match(provider, /^[a-zA-Z0-9_-]{1,64}$/);
      assert.equal(names.fromProviderName(provider), name);
    }
    assert.notEqual(names.toProviderName(long), names.toProviderName(longer));
    assert.equal(sanitizeToolName(""), "tool");
  });
});

describe("agentloop/providers stays light", () => {
  test("its static imports never reach an SDK (adapters load lazily)", () => {
    const seen = new Set<string>();
    const visit = (url: URL) => {
      if (seen.has(url.href)) return;
      seen.add(url.href);
      const source = readFileSync(url, "utf8");
      for (const match of source.matchAll(/^(?:import|export)\s[^;]*?from\s+"([^"]+)"/gms)) {
        const specifier = match[1];
        assert.ok(!/^(openai|@anthropic-ai\/sdk)(\/|$)/.test(specifier), `${url.pathname} imports ${specifier}`);
        if (specifier.startsWith(".")) visit(new URL(specifier.replace(/\.js$/, ".ts"), url));
      }
    };
    visit(new URL("../../src/providers/index.ts", import.meta.url));
    assert.ok(seen.size >= 5);
  });
});
