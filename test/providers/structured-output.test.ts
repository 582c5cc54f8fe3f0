// Structured output on the three wires: the exact request field each provider gets, and the
// answer streamed back (hand-written frames in each provider's format) parsed into result.output.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { z } from "zod";
import { Agent } from "../../src/loop/agent.js";
import type { Model } from "../../src/model/model.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import { defineTool } from "../../src/tools/tool.js";
import { sse, startServer, type TestServer } from "./fixture-server.js";
import { anthropicFrames, chatFrames, responsesFrames, type ScriptedTurn } from "./wire-scripts.js";

const Forecast = z.object({ city: z.string(), days: z.array(z.object({ day: z.string(), celsius: z.number() })) });
const forecastSchema = {
  type: "object",
  properties: {
    city: { type: "string" },
    days: {
      type: "array",
      items: { type: "object", properties: { day: { type: "string" }, celsius: { type: "number" } }, required: ["day", "celsius"], additionalProperties: false },
    },
  },
  required: ["city", "days"],
  additionalProperties: false,
};
const answer = { city: "Oslo", days: [{ day: "Mon", celsius: 4 }] };
const lookup = defineTool({ name: "lookup", description: "forecast data", parameters: { type: "object", properties: { city: { type: "string" } } }, execute: () => "Mon 4C" });

async function withServer(frames: Array<(turn: ScriptedTurn) => string[]>, turns: ScriptedTurn[], body: (server: TestServer) => Promise<void>): Promise<void> {
  const server = await startServer(turns.map((turn, index) => sse(frames[index % frames.length]!(turn))));
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

const toolTurn: ScriptedTurn = { toolCalls: [{ id: "call_1", name: "lookup", arguments: { city: "Oslo" } }] };
const jsonTurn: ScriptedTurn = { text: JSON.stringify(answer) };

async function run(model: Model) {
  return new Agent({ model, tools: [lookup], output: Forecast, instructions: "Forecasts." }).run("Forecast for Oslo");
}

describe("structured output on the wire", () => {
  test("Chat Completions: response_format json_schema, strict, on every request of the run", async () => {
    await withServer([chatFrames], [toolTurn, jsonTurn], async (server) => {
      const result = await run(openaiChat("gpt-test", { baseURL: `${server.url}/v1`, apiKey: "k" }));
      assert.equal(result.state, "COMPLETED", result.reason);
      assert.deepEqual(result.output, answer);
      assert.equal(server.requests.length, 2);
      for (const request of server.requests) {
        assert.deepEqual(request.body.response_format, { type: "json_schema", json_schema: { name: "output", schema: forecastSchema, strict: true } });
        // No instruction message: the schema travels natively.
        assert.deepEqual(
          request.body.messages.filter((message: { role: string }) => message.role === "system"),
          [{ role: "system", content: "Forecasts." }],
        );
      }
      assert.equal(server.requests[0]!.body.tools.length, 1);
    });
  });

  test("Responses: text.format json_schema with name and strict", async () => {
    await withServer([responsesFrames], [jsonTurn], async (server) => {
      const result = await run(openaiResponses("gpt-test", { baseURL: `${server.url}/v1`, apiKey: "k" }));
      assert.equal(result.state, "COMPLETED", result.reason);
      assert.deepEqual(result.output, answer);
      assert.deepEqual(server.requests[0]!.body.text, { format: { type: "json_schema", name: "output", schema: forecastSchema, strict: true } });
      assert.equal(server.requests[0]!.body.instructions, "Forecasts.");
    });
  });

  test("Anthropic Messages: output_config.format json_schema, no beta header", async () => {
    await withServer([anthropicFrames], [toolTurn, jsonTurn], async (server) => {
      const result = await run(anthropic("claude-test", { baseURL: server.url, apiKey: "k", promptCaching: false }));
      assert.equal(result.state, "COMPLETED", result.reason);
      assert.deepEqual(result.output, answer);
      for (const request of server.requests) {
        assert.deepEqual(request.body.output_config, { format: { type: "json_schema", schema: forecastSchema } });
        assert.equal(request.body.system, "Forecasts.");
        assert.equal(request.headers["anthropic-beta"], undefined);
      }
    });
  });

  test("a JSON Schema that is not strict-compatible is sent with strict: false, and still validated", async () => {
    const loose = { title: "Loose answer!", type: "object", properties: { note: { type: "string" } } };
    await withServer([chatFrames], [{ text: '{"note":5}' }, { text: '{"note":"five"}' }], async (server) => {
      const result = await new Agent({ model: openaiChat("gpt-test", { baseURL: `${server.url}/v1`, apiKey: "k" }), output: loose }).run("go");
      assert.equal(result.state, "COMPLETED", result.reason);
      assert.deepEqual(result.output, { note: "five" });
      assert.deepEqual(server.requests[0]!.body.response_format.json_schema, { name: "Loose_answer_", schema: loose, strict: false });
      const reask = server.requests[1]!.body.messages.at(-1);
      assert.equal(reask.role, "user");
      assert.match(reask.content, /field "note" must be string/);
    });
  });

  test("the re-ask after an invalid answer keeps the native format (Responses)", async () => {
    await withServer([responsesFrames], [{ text: '{"city":"Oslo"}' }, jsonTurn], async (server) => {
      const result = await run(openaiResponses("gpt-test", { baseURL: `${server.url}/v1`, apiKey: "k" }));
      assert.equal(result.state, "COMPLETED", result.reason);
      assert.equal(server.requests.length, 2);
      assert.equal(server.requests[1]!.body.text.format.type, "json_schema");
      assert.equal(server.requests[1]!.body.tool_choice, "none");
    });
  });
});
