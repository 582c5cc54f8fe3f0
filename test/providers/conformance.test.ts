// Runs the shared model conformance suite against every adapter (through a local server that
// speaks the provider's wire format) and against the scripted model.
import OpenAI from "openai";
import { ScriptedModel } from "../../src/model/scripted.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { google } from "../../src/providers/google/index.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import { sanitizeToolName } from "../../src/providers/tool-names.js";
import { anthropicBase, openaiBase, type Responder, sse, startServer } from "./fixture-server.js";
import { type ConformanceHarness, type ConformanceTurn, runModelConformance } from "./model-conformance.js";
import {
  type ScriptedTurn,
  anthropicBody,
  anthropicFrames,
  chatBody,
  chatFrames,
  geminiBody,
  geminiFrames,
  pieces,
  responsesBody,
  responsesFrames,
} from "./wire-scripts.js";

/** The turn as a server sends it: provider-legal tool names. */
function wireTurn(turn: ConformanceTurn): ScriptedTurn {
  return { ...turn, toolCalls: turn.toolCalls?.map((call) => ({ ...call, name: sanitizeToolName(call.name) })) };
}

function serverHarness(
  name: string,
  frames: (turn: ScriptedTurn) => string[],
  makeModel: (url: string) => import("../../src/model/model.js").Model,
): ConformanceHarness {
  return {
    name,
    exactUsage: true,
    async create(turns, options = {}) {
      const server = await startServer(turns.map((turn) => sse(frames(wireTurn(turn)), { delayMs: options.chunkDelayMs })));
      return { model: makeModel(server.url), requestCount: () => server.requests.length, close: () => server.close() };
    },
  };
}

/**
 * A JSON answer sent after `delayMs` (as long as its streamed pieces would have taken). The timer
 * is cleared when the client goes away, so an aborted request leaves nothing running.
 */
function delayedJson(body: unknown, delayMs: number): Responder {
  return (_request, response) =>
    new Promise<void>((resolve) => {
      const send = () => {
        if (!response.destroyed) {
          response.writeHead(200, { "content-type": "application/json" });
          response.end(JSON.stringify(body));
        }
        resolve();
      };
      if (delayMs <= 0) return send();
      const timer = setTimeout(send, delayMs);
      response.on("close", () => {
        clearTimeout(timer);
        resolve();
      });
    });
}

/** The non-streaming variant of an adapter (`stream: false`): each turn is one JSON body. */
function jsonHarness(
  name: string,
  body: (turn: ScriptedTurn) => Record<string, unknown>,
  makeModel: (url: string) => import("../../src/model/model.js").Model,
): ConformanceHarness {
  return {
    name,
    exactUsage: true,
    streaming: false,
    async create(turns, options = {}) {
      const server = await startServer(turns.map((turn) => delayedJson(body(wireTurn(turn)), (options.chunkDelayMs ?? 0) * pieces(turn.text ?? "").length)));
      return { model: makeModel(server.url), requestCount: () => server.requests.length, close: () => server.close() };
    },
  };
}

const noRetry = { maxRetries: 0 };

runModelConformance(
  serverHarness("openai chat (streaming)", chatFrames, (url) => openaiChat("test-model", { baseURL: `${url}/v1`, apiKey: "test-key", retry: noRetry })),
);

// The same adapter with the official SDK client under it, and with a WHATWG fetch instead of node:http.
runModelConformance(
  serverHarness("openai chat through the openai SDK client", chatFrames, (url) =>
    openaiChat("test-model", { client: new OpenAI({ baseURL: `${url}/v1`, apiKey: "test-key", maxRetries: 0 }), retry: noRetry }),
  ),
);

runModelConformance(
  serverHarness("openai chat on fetch", chatFrames, (url) =>
    openaiChat("test-model", { baseURL: `${url}/v1`, apiKey: "test-key", retry: noRetry, fetch: globalThis.fetch }),
  ),
);

runModelConformance(
  serverHarness("openai responses", responsesFrames, (url) =>
    openaiResponses("test-model", { baseURL: openaiBase({ url } as never), apiKey: "test-key", retry: noRetry }),
  ),
);

runModelConformance(
  serverHarness("anthropic messages", anthropicFrames, (url) =>
    anthropic("test-model", { baseURL: anthropicBase({ url } as never), apiKey: "test-key", retry: noRetry }),
  ),
);

runModelConformance(
  serverHarness("google gemini", geminiFrames, (url) => google("test-model", { baseURL: url, apiKey: "test-key", retry: noRetry })),
);

runModelConformance(
  serverHarness("google gemini on fetch", geminiFrames, (url) =>
    google("test-model", { baseURL: url, apiKey: "test-key", retry: noRetry, fetch: globalThis.fetch }),
  ),
);

runModelConformance(
  jsonHarness("google gemini (stream: false)", geminiBody, (url) => google("test-model", { baseURL: url, apiKey: "test-key", retry: noRetry, stream: false })),
);

runModelConformance(
  jsonHarness("openai chat (stream: false)", chatBody, (url) =>
    openaiChat("test-model", { baseURL: `${url}/v1`, apiKey: "test-key", retry: noRetry, stream: false }),
  ),
);

runModelConformance(
  jsonHarness("openai chat (stream: false) through the openai SDK client", chatBody, (url) =>
    openaiChat("test-model", { client: new OpenAI({ baseURL: `${url}/v1`, apiKey: "test-key", maxRetries: 0 }), retry: noRetry, stream: false }),
  ),
);

runModelConformance(
  jsonHarness("openai responses (stream: false)", responsesBody, (url) =>
    openaiResponses("test-model", { baseURL: `${url}/v1`, apiKey: "test-key", retry: noRetry, stream: false }),
  ),
);

runModelConformance(
  jsonHarness("anthropic messages (stream: false)", anthropicBody, (url) =>
    anthropic("test-model", { baseURL: url, apiKey: "test-key", retry: noRetry, stream: false }),
  ),
);

runModelConformance({
  name: "scripted model",
  exactUsage: false,
  async create(turns, options = {}) {
    const entries = turns.map((turn) => (turn.toolCalls?.length ? JSON.stringify({ tool_calls: turn.toolCalls, content: turn.text }) : (turn.text ?? "")));
    const model = new ScriptedModel(entries, { chunkDelayMs: options.chunkDelayMs });
    return { model, requestCount: () => model.requests.length, close: async () => {} };
  },
});
