// One conformance test per UI protocol encoder, each run with the protocol's own schema and client
// code over the same scenarios (test/ui/scenarios.ts): every UI message chunk validated by the `ai`
// package's `uiMessageChunkSchema` and read into a message by its `readUIMessageStream`; every
// AG-UI event validated by `@ag-ui/core`'s schemas and its order checked by `@ag-ui/client`'s
// `verifyEvents`.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { verifyEvents } from "@ag-ui/client";
import { EventSchemas } from "@ag-ui/core/schemas";
import { readUIMessageStream, type UIMessage, type UIMessageChunk, uiMessageChunkSchema } from "ai";
import { from, lastValueFrom, toArray } from "rxjs";
import { Agent, ScriptedModel } from "../../src/index.js";
import { AgUiEncoder, type AgUiEvent, agUiResponse, UiMessageStreamEncoder, type UiMessageChunk, uiMessageStreamResponse } from "../../src/ui/index.js";
import { echo, type RecordedRun, scenarios } from "./scenarios.js";

const chunkSchema = uiMessageChunkSchema();

function uiChunksOf(run: RecordedRun, options: { messageId?: string; knownToolCallIds?: string[] } = {}): UiMessageChunk[] {
  const encoder = new UiMessageStreamEncoder(options);
  const chunks = run.events.flatMap((event) => encoder.event(event));
  return [...chunks, ...encoder.closing(run.result)];
}

/** The UIMessage useChat builds from the chunks (continuing `message` when given). */
async function messageOf(chunks: UiMessageChunk[], message?: UIMessage): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk as UIMessageChunk);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  // An `error` chunk is the protocol's end of a failed run: reported to onError, not thrown.
  for await (const value of readUIMessageStream({ stream, message, onError: () => undefined })) last = value;
  return structuredClone(last ?? message)!;
}

function agUiEventsOf(run: RecordedRun, runId: string): AgUiEvent[] {
  const encoder = new AgUiEncoder({ threadId: "thread-1", runId, model: "scripted" });
  return [...run.events.flatMap((event) => encoder.event(event)), ...encoder.closing(run.result)];
}

async function verified(events: AgUiEvent[]): Promise<AgUiEvent[]> {
  for (const event of events) {
    const parsed = EventSchemas.safeParse(event);
    assert.ok(parsed.success, `${JSON.stringify(event)}: ${parsed.success ? "" : parsed.error.message}`);
  }
  return (await lastValueFrom(from(events as never[]).pipe(verifyEvents(false), toArray()))) as AgUiEvent[];
}

type ToolPart = { type: string; toolCallId: string; state: string; input?: unknown; output?: unknown; errorText?: string; approval?: { id: string } };
const toolParts = (message: UIMessage) => message.parts.filter((part) => part.type.startsWith("tool-")) as unknown as ToolPart[];
const textOf = (message: UIMessage) =>
  message.parts
    .filter((part) => part.type === "text")
    .map((part) => (part as { text: string }).text)
    .join("");

describe("the UI message stream encoder (ai's uiMessageChunkSchema and readUIMessageStream)", () => {
  for (const scenario of scenarios) {
    it(`${scenario.name}: every chunk is valid`, async () => {
      for (const run of await scenario.runs()) {
        for (const chunk of uiChunksOf(run)) {
          const checked = await chunkSchema.validate!(chunk);
          assert.ok(checked.success, `${JSON.stringify(chunk)}: ${checked.success ? "" : checked.error.message}`);
        }
        await messageOf(uiChunksOf(run));
      }
    });
  }

  const byName = (name: string) => scenarios.find((scenario) => scenario.name.startsWith(name))!;

  it("a wave: both calls with their inputs and outputs (the failed one as output-error), then the answer, in steps", async () => {
    const [run] = await byName("a wave").runs();
    const chunks = uiChunksOf(run);
    // One data-wave part per wave, updated in place (same id) from started to finished.
    const waves = chunks.filter((chunk) => chunk.type === "data-wave").map((chunk) => (chunk as { data: { status: string } }).data.status);
    assert.deepEqual(waves, ["started", "finished"]);
    const message = await messageOf(chunks);
    assert.deepEqual(
      message.parts.filter((part) => part.type === "data-wave").map((part) => (part as { data: { status: string } }).data.status),
      ["finished"],
    );
    assert.deepEqual(
      toolParts(message).map((part) => [part.type, part.toolCallId, part.state, part.input, part.output ?? part.errorText]),
      [
        ["tool-echo", "call_a", "output-available", { text: "hi" }, "echo: hi"],
        ["tool-fails", "call_b", "output-error", { why: "disk full" }, toolParts(message)[1].errorText],
      ],
    );
    assert.match(toolParts(message)[1].errorText!, /disk full/);
    assert.equal(textOf(message), "Echo said hi; the other failed.");
    assert.equal(chunks.filter((chunk) => chunk.type === "start-step").length, 2);
    assert.equal(chunks.filter((chunk) => chunk.type === "finish-step").length, 2);
    assert.deepEqual(chunks.at(-1), { type: "finish", finishReason: "stop" });
  });

  it("reasoning comes as reasoning parts before the text", async () => {
    const [run] = await byName("reasoning").runs();
    const message = await messageOf(uiChunksOf(run));
    assert.deepEqual(
      message.parts.filter((part) => part.type === "reasoning" || part.type === "text").map((part) => [part.type, (part as { text: string }).text]),
      [
        ["reasoning", "The user greets; greet back."],
        ["text", "Hello there."],
      ],
    );
  });

  it("approvals: approval-requested parts, then the resumed stream continues the same message (approved: output; rejected: output-denied)", async () => {
    const [stopped, resumed] = await byName("an approval").runs();
    const first = await messageOf(uiChunksOf(stopped, { messageId: "m1" }));
    assert.deepEqual(
      toolParts(first).map((part) => [part.toolCallId, part.state, part.approval?.id]),
      [
        ["call_a", "approval-requested", "call_a"],
        ["call_b", "approval-requested", "call_b"],
      ],
    );
    assert.deepEqual(uiChunksOf(stopped).at(-1), { type: "finish", finishReason: "tool-calls" });
    const second = await messageOf(uiChunksOf(resumed, { messageId: "m1", knownToolCallIds: ["call_a", "call_b"] }), first);
    assert.equal(second.id, "m1");
    assert.deepEqual(
      toolParts(second).map((part) => [part.toolCallId, part.state, part.output]),
      [
        ["call_a", "output-available", "wrote a.txt"],
        ["call_b", "output-denied", undefined],
      ],
    );
    assert.equal(textOf(second), "Wrote a.txt.");
  });

  it("a guardrail's deny is output-denied", async () => {
    const [run] = await byName("a guardrail").runs();
    const message = await messageOf(uiChunksOf(run));
    assert.deepEqual(
      toolParts(message).map((part) => [part.toolCallId, part.state]),
      [["call_a", "output-denied"]],
    );
  });

  it("a step limit: a data-limit part naming it, finish length", async () => {
    const [run] = await byName("the step limit").runs();
    const chunks = uiChunksOf(run);
    const limit = chunks.find((chunk) => chunk.type === "data-limit") as { data: { state: string } } | undefined;
    assert.equal(limit?.data.state, "TURN_LIMIT");
    assert.deepEqual(chunks.at(-1), { type: "finish", finishReason: "length" });
  });

  it("a model failure ends with an error chunk naming it; an abort with an abort chunk", async () => {
    const [failed] = await byName("the model fails").runs();
    const last = uiChunksOf(failed).at(-1) as { type: string; errorText?: string };
    assert.equal(last.type, "error");
    assert.match(last.errorText!, /500/);
    const [aborted] = await byName("the client goes away").runs();
    assert.equal(aborted.result.state, "ABORTED");
    assert.equal(uiChunksOf(aborted).at(-1)?.type, "abort");
  });

  it("a sub-agent's events are data-subagent parts of the delegating call", async () => {
    const [run] = await byName("a sub-agent").runs();
    const chunks = uiChunksOf(run);
    const sub = chunks.filter((chunk) => chunk.type === "data-subagent").map((chunk) => (chunk as { data: { event: string; toolCallId: string } }).data);
    assert.ok(sub.length > 0);
    assert.deepEqual([sub[0].event, sub.at(-1)!.event], ["started", "finished"]);
    assert.ok(sub.some((entry) => entry.event === "tool-end"));
    assert.equal(textOf(await messageOf(chunks)), "The researcher found deep.");
  });
});

describe("the AG-UI encoder (@ag-ui/core schemas, @ag-ui/client verifyEvents)", () => {
  for (const scenario of scenarios) {
    it(`${scenario.name}: every event is valid and in order`, async () => {
      const runs = await scenario.runs();
      for (const [index, run] of runs.entries()) await verified(agUiEventsOf(run, `run-${index}`));
    });
  }

  const byName = (name: string) => scenarios.find((scenario) => scenario.name.startsWith(name))!;
  const types = (events: AgUiEvent[]) => events.map((event) => event.type);

  it("a wave is one step: its calls' START/ARGS/END, then each result; the answer is a text message", async () => {
    const [run] = await byName("a wave").runs();
    const events = await verified(agUiEventsOf(run, "r1"));
    const wave = types(events).slice(types(events).indexOf("STEP_STARTED"), types(events).indexOf("STEP_FINISHED") + 1);
    assert.deepEqual(wave, ["STEP_STARTED", ...Array(2).fill(["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]).flat(), "TOOL_CALL_RESULT", "TOOL_CALL_RESULT", "STEP_FINISHED"]);
    const text = events.filter((event) => event.type === "TEXT_MESSAGE_CONTENT").map((event) => event.delta).join("");
    assert.equal(text, "Echo said hi; the other failed.");
    assert.equal(events[0].type, "RUN_STARTED");
    assert.deepEqual([events.at(-2)?.type, events.at(-1)?.type], ["MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
    assert.deepEqual(events.at(-1)?.outcome, { type: "success" });
  });

  it("an approval stop is RUN_FINISHED with one interrupt per call, its toolCallId set", async () => {
    const [stopped] = await byName("an approval").runs();
    const events = await verified(agUiEventsOf(stopped, "r1"));
    const outcome = events.at(-1)?.outcome as { type: string; interrupts: Array<{ id: string; toolCallId: string }> };
    assert.equal(outcome.type, "interrupt");
    assert.deepEqual(
      outcome.interrupts.map((entry) => [entry.id, entry.toolCallId]),
      [
        ["call_a", "call_a"],
        ["call_b", "call_b"],
      ],
    );
  });

  it("reasoning: REASONING_START, message start/content/end, REASONING_END", async () => {
    const [run] = await byName("reasoning").runs();
    const events = await verified(agUiEventsOf(run, "r1"));
    assert.deepEqual(types(events).filter((type) => type.startsWith("REASONING")), ["REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END"]);
  });

  it("a model failure is RUN_ERROR; an abort is RUN_FINISHED cancelled; a limit names itself before RUN_FINISHED", async () => {
    const [failed] = await byName("the model fails").runs();
    assert.equal((await verified(agUiEventsOf(failed, "r1"))).at(-1)?.type, "RUN_ERROR");
    const [aborted] = await byName("the client goes away").runs();
    assert.deepEqual((await verified(agUiEventsOf(aborted, "r1"))).at(-1)?.outcome, { type: "cancelled" });
    const [limited] = await byName("the step limit").runs();
    const events = await verified(agUiEventsOf(limited, "r1"));
    assert.ok(events.some((event) => event.type === "CUSTOM" && event.name === "agentloop.outcome" && (event.value as { state: string }).state === "TURN_LIMIT"));
  });

  it("a sub-agent's events sit between SUBAGENT_STARTED and SUBAGENT_FINISHED, attributed to it", async () => {
    const [run] = await byName("a sub-agent").runs();
    const events = await verified(agUiEventsOf(run, "r1"));
    const started = events.findIndex((event) => event.type === "SUBAGENT_STARTED");
    const finished = events.findIndex((event) => event.type === "SUBAGENT_FINISHED");
    assert.ok(started > 0 && finished > started);
    assert.equal(events[started].parentToolCallId, "call_r");
    const inside = events.slice(started + 1, finished);
    assert.ok(inside.some((event) => event.type === "TOOL_CALL_RESULT" && event.toolCallId === "sub_1"));
    assert.ok(inside.every((event) => event.subagentRunId === events[started].subagentRunId));
  });
});

describe("the library's Response helpers (a user's own route)", () => {
  const sseData = (text: string) =>
    text
      .split("\n\n")
      .filter((block) => block.startsWith("data: "))
      .map((block) => block.slice("data: ".length));
  const agent = () => new Agent({ name: "lib", model: new ScriptedModel([JSON.stringify({ tool_calls: [{ id: "c1", name: "echo", arguments: { text: "x" } }] }), "Done."]), tools: [echo] });

  it("uiMessageStreamResponse(run): the v1 header, valid chunks, [DONE]", async () => {
    const response = uiMessageStreamResponse(agent().run("go"));
    assert.equal(response.headers.get("x-vercel-ai-ui-message-stream"), "v1");
    const data = sseData(await response.text());
    assert.equal(data.at(-1), "[DONE]");
    for (const text of data.slice(0, -1)) assert.ok((await chunkSchema.validate!(JSON.parse(text))).success, text);
    assert.ok(data.some((text) => text.includes('"tool-output-available"')));
  });

  it("agUiResponse(run): valid events in order, RUN_FINISHED last", async () => {
    const response = agUiResponse(agent().run("go"), { threadId: "t", runId: "r" });
    const events = (await verified(sseData(await response.text()).map((text) => JSON.parse(text)))) as AgUiEvent[];
    assert.equal(events.at(-1)?.type, "RUN_FINISHED");
  });
});
