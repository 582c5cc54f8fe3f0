// Runs the shared model conformance suite against every adapter (through a local server that
// speaks the provider's wire format) and against the scripted model.
import { ScriptedModel } from "../../src/model/scripted.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import { sanitizeToolName } from "../../src/providers/tool-names.js";
import { anthropicBase, openaiBase, sse, startServer } from "./fixture-server.js";
import { type ConformanceHarness, type ConformanceTurn, runModelConformance } from "./model-conformance.js";
import { type ScriptedTurn, anthropicFrames, chatFrames, responsesFrames } from "./wire-scripts.js";

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

const noRetry = { maxRetries: 0 };

runModelConformance(
  serverHarness("openai chat (streaming)", chatFrames, (url) => openaiChat("test-model", { baseURL: `${url}/v1`, apiKey: "test-key", retry: noRetry })),
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

runModelConformance({
  name: "scripted model",
  exactUsage: false,
  async create(turns, options = {}) {
    const entries = turns.map((turn) => (turn.toolCalls?.length ? JSON.stringify({ tool_calls: turn.toolCalls, content: turn.text }) : (turn.text ?? "")));
    const model = new ScriptedModel(entries, { chunkDelayMs: options.chunkDelayMs });
    return { model, requestCount: () => model.requests.length, close: async () => {} };
  },
});
