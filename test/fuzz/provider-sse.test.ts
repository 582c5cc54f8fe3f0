// Property-based fuzzing (fast-check) of the three providers' stream readers, through a real
// loopback server: well-formed streams cut into arbitrary byte chunks (splitting UTF-8 sequences),
// with garbage frames, error frames and invalid bytes inserted, or truncated anywhere. Every call
// ends with exactly one terminal event (a finish, or an error of a known kind), never throws and
// never hangs; an unmutated stream, however it is chunked, gives back its text exactly. The cases come
// from a fixed seed (./seed.ts: AGENTLOOP_FUZZ_SEED to change it), printed by each test.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import fc from "fast-check";
import type { AgentLoopError } from "../../src/errors.js";
import { ServerSentEvents } from "../../src/providers/http.js";
import type { Model, ModelEvent } from "../../src/model/model.js";
import { anthropic } from "../../src/providers/anthropic/index.js";
import { google } from "../../src/providers/google/index.js";
import { openaiChat, openaiResponses } from "../../src/providers/openai/index.js";
import { type TestServer, startServer } from "../providers/fixture-server.js";
import { anthropicFrames, chatFrames, geminiFrames, responsesFrames, type ScriptedTurn } from "../providers/wire-scripts.js";
import { fuzzSeed, seeded, seedFrom } from "./seed.js";

const knownKinds = new Set(["server", "network", "timeout", "invalid_request", "rate_limit", "authentication", "permission", "not_found", "context_length", "refusal", "unknown"]);

interface Case {
  chunks: Buffer[];
  text: string;
  mutated: boolean;
}

/** What the loopback server sends for the current case. */
let current: Case = { chunks: [], text: "", mutated: false };

/** A turn's text: words with non-ASCII characters, so byte splits cut multi-byte sequences. */
const turnText = fc.array(fc.constantFrom("hello", "wörld", "日本語", "🙂🙃", "tab\there", "quote\"d", "back\\slash", "new\nline"), { minLength: 1, maxLength: 6 }).map((words) => words.join(" "));

/** Garbage a broken server or proxy might put in a stream. */
const garbage = fc.oneof(
  fc.string({ maxLength: 40 }).map((text) => `data: ${text}\n\n`),
  fc.constantFrom("data: {\"broken\n\n", ": keep-alive\n\n", "event: ping\ndata: {}\n\n", "data: [DONE]\n\n", "\n\n\n", "retry: 10\n\n", "id: 7\n\n", "data: {}\n\n", "data: null\n\n", "data: []\n\n"),
  fc.constantFrom(
    'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    'data: {"error":{"message":"boom","type":"server_error"}}\n\n',
    'event: response.failed\ndata: {"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"nope"}}}\n\n',
  ),
  fc.uint8Array({ maxLength: 24 }).map((bytes) => Buffer.from(bytes).toString("latin1")),
);

/** A stream for `frames`: maybe mutated, then cut into arbitrary byte chunks. */
function streamCase(frames: (turn: ScriptedTurn) => string[]) {
  return fc
    .record({
      text: turnText,
      inserts: fc.array(fc.tuple(fc.nat(), garbage), { maxLength: 3 }),
      truncateAt: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined, freq: 4 }),
      cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 }),
    })
    .map(({ text, inserts, truncateAt, cuts }): Case => {
      const list = frames({ text });
      for (const [position, frame] of inserts) list.splice(position % (list.length + 1), 0, frame);
      let bytes = Buffer.from(list.join(""), "utf8");
      if (truncateAt !== undefined) bytes = bytes.subarray(0, Math.floor(bytes.length * truncateAt));
      const points = [...new Set(cuts.map((cut) => Math.floor(cut * bytes.length)))].sort((a, b) => a - b);
      const chunks: Buffer[] = [];
      let last = 0;
      for (const point of [...points, bytes.length]) {
        if (point > last) chunks.push(bytes.subarray(last, point));
        last = point;
      }
      return { chunks, text, mutated: inserts.length > 0 || truncateAt !== undefined };
    });
}

async function collect(model: Model): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of model.stream({ messages: [{ role: "user", content: "hi" }] })) events.push(event);
  return events;
}

function checkCall(events: ModelEvent[], testCase: Case): void {
  const terminal = events.filter((event) => event.type === "finish" || event.type === "error");
  assert.equal(terminal.length, 1, `one terminal event, got ${JSON.stringify(events.slice(-3))}`);
  assert.equal(events.at(-1), terminal[0], "the terminal event is the last");
  const last = terminal[0]!;
  if (last.type === "error") {
    const error = last.error as AgentLoopError;
    assert.ok(knownKinds.has(error.kind), `error kind ${error.kind}: ${error.message}`);
    assert.ok(error.message.length > 0);
  }
  if (!testCase.mutated) {
    assert.equal(last.type, "finish", `an intact stream finishes: ${JSON.stringify(last)}`);
    const text = events.map((event) => (event.type === "text-delta" ? event.delta : "")).join("");
    assert.equal(text, testCase.text);
  }
}

describe("fuzz: provider stream readers over a loopback server", () => {
  let server: TestServer;
  before(async () => {
    server = await startServer(async (_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      for (const chunk of current.chunks) {
        response.write(chunk);
        // Let each chunk travel on its own now and then, so the reader sees real chunk boundaries.
        await new Promise((resolve) => setImmediate(resolve));
      }
      response.end();
    });
  });
  after(() => server.close());

  const limits = { retry: { maxRetries: 0 }, firstByteTimeoutMs: 5_000, idleTimeoutMs: 5_000 };
  const wires: Array<{ name: string; frames: (turn: ScriptedTurn) => string[]; model: () => Model }> = [
    { name: "Chat Completions", frames: (turn) => chatFrames(turn), model: () => openaiChat("m", { baseURL: `${server.url}/v1`, apiKey: "k", ...limits }) },
    { name: "Responses", frames: (turn) => responsesFrames(turn), model: () => openaiResponses("m", { baseURL: `${server.url}/v1`, apiKey: "k", ...limits }) },
    { name: "Anthropic Messages", frames: (turn) => anthropicFrames(turn), model: () => anthropic("m", { baseURL: server.url, apiKey: "k", ...limits }) },
    { name: "Gemini", frames: (turn) => geminiFrames(turn), model: () => google("m", { baseURL: server.url, apiKey: "k", ...limits }) },
  ];

  for (const wire of wires) {
    test(`${wire.name}: arbitrary chunking, garbage and truncation end in one finish or one clear error`, async (t) => {
      const model = wire.model();
      await fc.assert(
        fc.asyncProperty(streamCase(wire.frames), async (testCase) => {
          current = testCase;
          checkCall(await collect(model), testCase);
        }),
        seeded(t, 40),
      );
    });
  }
});

describe("fuzz: the SSE parser layer", () => {
  test("arbitrary bytes in arbitrary pieces never throw; every event's data is a string", (t) => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 12 }), (pieces) => {
        const events = new ServerSentEvents();
        const seen = [...pieces.flatMap((piece) => events.feed(piece)), ...events.end()];
        for (const event of seen) assert.equal(typeof event.data, "string");
      }),
      seeded(t, 300),
    );
  });

  test("however a stream is cut, the parser yields the same events", (t) => {
    fc.assert(
      fc.property(turnText, fc.array(fc.nat(), { maxLength: 10 }), (text, cuts) => {
        const bytes = Buffer.from(chatFrames({ text }).join(""), "utf8");
        const whole = new ServerSentEvents();
        const expected = [...whole.feed(bytes), ...whole.end()].map((event) => event.data);
        const pieces = new ServerSentEvents();
        const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
        const got: string[] = [];
        let last = 0;
        for (const point of [...points, bytes.length]) {
          got.push(...pieces.feed(bytes.subarray(last, point)).map((event) => event.data));
          last = point;
        }
        got.push(...pieces.end().map((event) => event.data));
        assert.deepEqual(got, expected);
      }),
      seeded(t, 200),
    );
  });
});

describe("fuzz: the seed", () => {
  test("the cases come from the seed: the same seed, the same cases; AGENTLOOP_FUZZ_SEED names it, a bad one is refused", () => {
    const sample = (seed: number) => fc.sample(streamCase((turn) => chatFrames(turn)), { seed, numRuns: 20 });
    assert.deepEqual(sample(fuzzSeed), sample(fuzzSeed));
    assert.notDeepEqual(sample(fuzzSeed), sample(fuzzSeed + 1));
    assert.equal(seedFrom(undefined), seedFrom(""));
    assert.equal(seedFrom("42"), 42);
    assert.ok(Number.isSafeInteger(seedFrom("random")));
    assert.throws(() => seedFrom("1.5e"), /AGENTLOOP_FUZZ_SEED must be an integer or "random", not "1\.5e"/);
  });
});
