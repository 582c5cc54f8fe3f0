/**
 * The conformance suite every `Model` implementation must pass (the adapters and the scripted
 * model): text, streaming deltas, one tool, parallel tools, a 3-round loop, abort mid-stream, usage.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Message } from "../../src/messages.js";
import { type Model, type ModelEvent, type ModelRequest, type ToolDefinition, generate } from "../../src/model/model.js";
import { streamEvents as collect } from "../support.js";

export interface ConformanceToolCall {
  id: string;
  /** The agent's name (the harness sends a provider-legal one if needed). */
  name: string;
  arguments: Record<string, unknown>;
}

export interface ConformanceTurn {
  text?: string;
  toolCalls?: ConformanceToolCall[];
  usage?: { input: number; output: number; cached?: number; reasoning?: number };
}

export interface ConformanceSetup {
  model: Model;
  /** How many model requests reached the implementation so far. */
  requestCount(): number;
  close(): Promise<void>;
}

export interface ConformanceHarness {
  name: string;
  /** A model that answers `turns` in order; `chunkDelayMs` slows each streamed piece. */
  create(turns: ConformanceTurn[], options?: { chunkDelayMs?: number }): Promise<ConformanceSetup>;
  /** True when the scripted usage numbers are reported exactly (the scripted model estimates). */
  exactUsage: boolean;
  /**
   * False for a non-streaming variant (`stream: false`): its text comes as one delta, and its
   * `chunkDelayMs` delays the whole answer, so the abort test aborts while the answer is awaited.
   * Default true.
   */
  streaming?: boolean;
}

export const conformanceTools: ToolDefinition[] = [
  {
    name: "calendar.resolve_holiday",
    description: "Resolves a holiday name to dates",
    parameters: { type: "object", properties: { holiday: { type: "string" }, year: { type: "number" } }, required: ["holiday"] },
  },
  {
    name: "hotel.check_availability",
    description: "Checks room availability",
    parameters: { type: "object", properties: { start: { type: "string" }, nights: { type: "number" } } },
  },
];

function baseRequest(content: string): ModelRequest {
  return {
    messages: [
      { role: "system", content: "You are a concise assistant." },
      { role: "user", content },
    ],
    tools: conformanceTools,
  };
}

/** Exactly one terminal event, and it is the last one. */
function assertOneTerminal(events: ModelEvent[]): ModelEvent {
  const terminals = events.filter((event) => event.type === "finish" || event.type === "error");
  assert.equal(terminals.length, 1, `expected one finish/error event, got ${JSON.stringify(terminals)}`);
  assert.equal(events[events.length - 1], terminals[0]);
  return terminals[0];
}

const longText =
  "Hanukkah begins at sundown and lasts eight nights; the rooms near the old town fill early, so book the weekend soon and ask for late checkout on Sunday.";

export function runModelConformance(harness: ConformanceHarness): void {
  const streaming = harness.streaming !== false;
  describe(`Model conformance: ${harness.name}`, () => {
    test("answers with text and finishes with stop", async () => {
      const setup = await harness.create([{ text: "Hello there!", usage: { input: 12, output: 3 } }]);
      try {
        const response = await generate(setup.model, baseRequest("Say hello"));
        assert.equal(response.error, undefined);
        assert.deepEqual(
          response.message.content.filter((part) => part.type === "text").map((part) => (part as { text: string }).text),
          ["Hello there!"],
        );
        assert.equal(response.finishReason.unified, "stop");
      } finally {
        await setup.close();
      }
    });

    test("streams deltas that join to the full text", async () => {
      const setup = await harness.create([{ text: longText, usage: { input: 20, output: 30 } }]);
      try {
        const events = await collect(setup.model, baseRequest("Tell me about the holiday"));
        const deltas = events.filter((event) => event.type === "text-delta");
        if (streaming) assert.ok(deltas.length > 5, `expected many deltas, got ${deltas.length}`);
        else assert.ok(deltas.length >= 1, "expected the text as a delta");
        assert.equal(deltas.map((event) => event.delta).join(""), longText);
        const terminal = assertOneTerminal(events);
        assert.equal(terminal.type, "finish");
        assert.ok(events.findIndex((event) => event.type === "text-start") < events.findIndex((event) => event.type === "text-delta"));
      } finally {
        await setup.close();
      }
    });

    test("calls one tool, with the agent's tool name and parsed arguments", async () => {
      const setup = await harness.create([
        { toolCalls: [{ id: "call_holiday_1", name: "calendar.resolve_holiday", arguments: { holiday: "Hanukkah", year: 2026 } }], usage: { input: 30, output: 9 } },
      ]);
      try {
        const response = await generate(setup.model, baseRequest("When is Hanukkah?"));
        assert.equal(response.error, undefined);
        const calls = response.message.content.filter((part) => part.type === "tool-call");
        assert.equal(calls.length, 1);
        assert.equal(calls[0].type === "tool-call" && calls[0].name, "calendar.resolve_holiday");
        assert.equal(calls[0].type === "tool-call" && calls[0].id, "call_holiday_1");
        assert.deepEqual(JSON.parse(calls[0].type === "tool-call" ? calls[0].arguments : ""), { holiday: "Hanukkah", year: 2026 });
        assert.equal(response.finishReason.unified, "tool-calls");
      } finally {
        await setup.close();
      }
    });

    test("calls tools in parallel, in order, with distinct ids", async () => {
      const setup = await harness.create([
        {
          toolCalls: [
            { id: "call_a", name: "calendar.resolve_holiday", arguments: { holiday: "Hanukkah" } },
            { id: "call_b", name: "hotel.check_availability", arguments: { start: "2026-12-04", nights: 2 } },
          ],
          usage: { input: 30, output: 20 },
        },
      ]);
      try {
        const events = await collect(setup.model, baseRequest("Hanukkah and next weekend"));
        const ends = events.filter((event) => event.type === "tool-call-end");
        assert.deepEqual(
          ends.map((event) => [event.id, event.name, JSON.parse(event.arguments)]),
          [
            ["call_a", "calendar.resolve_holiday", { holiday: "Hanukkah" }],
            ["call_b", "hotel.check_availability", { start: "2026-12-04", nights: 2 }],
          ],
        );
        assert.equal(assertOneTerminal(events).type, "finish");
      } finally {
        await setup.close();
      }
    });

    test("runs a 3-round loop: tool, tool, answer", async () => {
      const setup = await harness.create([
        { toolCalls: [{ id: "call_1", name: "calendar.resolve_holiday", arguments: { holiday: "Hanukkah" } }], usage: { input: 10, output: 5 } },
        { toolCalls: [{ id: "call_2", name: "hotel.check_availability", arguments: { start: "2026-12-04", nights: 8 } }], usage: { input: 20, output: 5 } },
        { text: "Rooms are free for all eight nights.", usage: { input: 30, output: 8 } },
      ]);
      try {
        const messages: Message[] = [...baseRequest("Book Hanukkah").messages];
        let finalText = "";
        for (let round = 0; round < 3; round++) {
          const response = await generate(setup.model, { messages, tools: conformanceTools });
          assert.equal(response.error, undefined, `round ${round + 1}: ${response.error?.message}`);
          messages.push(response.message);
          const calls = response.message.content.filter((part) => part.type === "tool-call");
          if (calls.length === 0) {
            finalText = response.message.content.map((part) => (part.type === "text" ? part.text : "")).join("");
            break;
          }
          for (const call of calls) {
            if (call.type !== "tool-call") continue;
            messages.push({ role: "tool", toolCallId: call.id, toolName: call.name, content: `result of ${call.name}` });
          }
        }
        assert.equal(finalText, "Rooms are free for all eight nights.");
        assert.equal(setup.requestCount(), 3);
      } finally {
        await setup.close();
      }
    });

    test("abort mid-stream ends with an aborted error event, without throwing or hanging", async () => {
      const setup = await harness.create([{ text: longText, usage: { input: 5, output: 40 } }], { chunkDelayMs: 20 });
      try {
        const controller = new AbortController();
        const events: ModelEvent[] = [];
        const started = Date.now();
        // Without streaming nothing arrives before the whole answer: abort while it is awaited.
        const timer = streaming ? undefined : setTimeout(() => controller.abort(), 100);
        try {
          for await (const event of setup.model.stream({ ...baseRequest("Tell me slowly"), signal: controller.signal })) {
            events.push(event);
            if (event.type === "text-delta" && !controller.signal.aborted) controller.abort();
          }
        } finally {
          clearTimeout(timer);
        }
        assert.ok(Date.now() - started < 3000, "the stream ended promptly after the abort");
        const terminal = assertOneTerminal(events);
        assert.equal(terminal.type, "error");
        assert.equal(terminal.type === "error" && terminal.error.kind, "aborted");
        const text = events.map((event) => (event.type === "text-delta" ? event.delta : "")).join("");
        assert.ok(text.length < longText.length, "the answer was cut short");
      } finally {
        await setup.close();
      }
    });

    test("reports usage", async () => {
      const setup = await harness.create([{ text: "Four words right here.", usage: { input: 42, output: 7, cached: 10, reasoning: 2 } }]);
      try {
        const events = await collect(setup.model, baseRequest("Count"));
        const usageEvents = events.filter((event) => event.type === "usage");
        assert.equal(usageEvents.length, 1);
        const usage = usageEvents[0].usage;
        if (harness.exactUsage) {
          assert.equal(usage.inputTokens, 42);
          assert.equal(usage.outputTokens, 7);
          assert.equal(usage.totalTokens, 49);
          assert.equal(usage.cachedInputTokens, 10);
          assert.equal(usage.reasoningTokens, 2);
        } else {
          assert.ok(usage.inputTokens > 0 && usage.outputTokens > 0);
          assert.equal(usage.totalTokens, usage.inputTokens + usage.outputTokens);
        }
      } finally {
        await setup.close();
      }
    });
  });
}
