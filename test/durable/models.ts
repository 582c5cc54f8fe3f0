// The models the durable tests run their conversations against. A test's model answers from the
// conversation it is given (as a real, stateless model does: a recovered run asks it only what was
// not answered), through one `Plan`, served as:
// - "http": a real OpenAI-compatible server on 127.0.0.1 (test/providers/fixture-server.ts) read by
//   the `agentloop/openai` Chat Completions adapter. Its SSE frames are the recorded qwen3-max
//   streams of test/fixtures/provider-streams/openai-chat (alibaba-tool-call, alibaba-text) with the
//   plan's calls and text in place of the recorded ones: the same chunk layout, a finish chunk, a
//   last usage chunk with empty choices, then `[DONE]`.
// - "async-cleanup": an in-process model whose stream's cleanup is asynchronous (its generator's
//   `finally` awaits a timer), as an HTTP adapter's is: the loop reads the `finish` and goes on
//   before the stream's `return()` settles.
import type { AssistantPart, Message } from "../../src/messages.js";
import type { Model, ModelEvent } from "../../src/model/model.js";
import { parseScriptEntry } from "../../src/model/scripted.js";
import { openaiChat } from "../../src/providers/openai/index.js";
import { fixtureLines, type Responder, sse, startServer, type TestServer } from "../providers/fixture-server.js";

export const MODEL_KINDS = ["http", "async-cleanup"] as const;
export type ModelKind = (typeof MODEL_KINDS)[number];

export interface PlannedCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}
/** One answer: tool calls (one wave), or the final text. */
export type Answer = { calls: PlannedCall[] } | { text: string };
/** What the model answers to a conversation. */
export type Plan = (messages: Message[]) => Answer;

/** The tool results of a conversation after its last user message, as text, in order. */
export function toolResults(messages: Message[]): string[] {
  const last = messages.findLastIndex((message) => message.role === "user");
  return messages.slice(last + 1).flatMap((message) => (message.role === "tool" ? [typeof message.content === "string" ? message.content : ""] : []));
}

/**
 * A scripted plan with the ScriptedModel's reading of a script: the entry at the position of the
 * conversation (the assistant turns after its last user message). Entries' calls must name their ids.
 */
export function scriptPlan(script: readonly string[]): Plan {
  return (messages) => {
    const last = messages.findLastIndex((message) => message.role === "user");
    const position = messages.slice(last + 1).filter((message) => message.role === "assistant").length;
    const { content, toolCalls } = parseScriptEntry(script[position] ?? "[no more mock responses]");
    if (toolCalls.length === 0) return { text: content };
    return {
      calls: toolCalls.map((call, index) => ({ id: call.id ?? `call_${position}_${index}`, name: call.name, arguments: (call.arguments ?? {}) as Record<string, unknown> })),
    };
  };
}

/** The model events of one answer. */
function* answerEvents(answer: Answer): Generator<ModelEvent> {
  const usage = { inputTokens: 10, outputTokens: 5, totalTokens: 15 };
  if ("calls" in answer) {
    for (const call of answer.calls) {
      const args = JSON.stringify(call.arguments);
      yield { type: "tool-call-start", id: call.id, name: call.name };
      yield { type: "tool-call-delta", id: call.id, delta: args };
      yield { type: "tool-call-end", id: call.id, name: call.name, arguments: args };
    }
    yield { type: "finish", reason: { unified: "tool-calls" }, usage };
    return;
  }
  yield { type: "text-start", id: "t" };
  for (const word of answer.text.match(/\s*\S+\s*/g) ?? []) yield { type: "text-delta", id: "t", delta: word };
  yield { type: "text-end", id: "t" };
  yield { type: "finish", reason: { unified: "stop" }, usage };
}

/** An in-process model of `plan` (its stream's cleanup asynchronous, unless `asyncCleanup: false`). */
export function asyncCleanupModel(plan: Plan, { asyncCleanup = true } = {}): Model {
  return {
    provider: "test",
    modelId: asyncCleanup ? "async-cleanup" : "in-process",
    async *stream(request) {
      try {
        yield* answerEvents(plan(request.messages));
      } finally {
        if (asyncCleanup) await new Promise((resolve) => setTimeout(resolve, 0));
      }
    },
  };
}

/** The conversation of a Chat Completions request body, as agentloop messages (what a plan reads). */
function wireMessages(body: { messages?: Array<Record<string, any>> }): Message[] {
  const names = new Map<string, string>();
  const text = (content: unknown) =>
    typeof content === "string" ? content : Array.isArray(content) ? content.map((part: { text?: string }) => part.text ?? "").join("") : "";
  return (body.messages ?? []).map((message): Message => {
    if (message.role === "assistant") {
      const parts: AssistantPart[] = text(message.content) ? [{ type: "text", text: text(message.content) }] : [];
      for (const call of message.tool_calls ?? []) {
        names.set(call.id, call.function.name);
        parts.push({ type: "tool-call", id: call.id, name: call.function.name, arguments: call.function.arguments });
      }
      return { role: "assistant", content: parts };
    }
    if (message.role === "tool") return { role: "tool", toolCallId: message.tool_call_id, toolName: names.get(message.tool_call_id) ?? "", content: text(message.content) };
    if (message.role === "system" || message.role === "developer") return { role: "system", content: text(message.content) };
    return { role: "user", content: text(message.content) };
  });
}

/** The SSE frames of one answer, laid out as the recorded qwen3-max streams are. */
export function answerFrames(answer: Answer): string[] {
  const recorded = (name: string) => fixtureLines("openai-chat", name).map((line) => JSON.parse(line) as Record<string, any>);
  const frames: object[] = [];
  if ("calls" in answer) {
    // alibaba-tool-call: the call's id and name with empty arguments, the arguments in pieces, an
    // empty closing delta, the finish chunk, the usage chunk.
    const [opening, piece, , closing, finish, usage] = recorded("alibaba-tool-call");
    answer.calls.forEach((call, index) => {
      const first = structuredClone(opening);
      Object.assign(first.choices[0].delta.tool_calls[0], { index, id: call.id, function: { name: call.name, arguments: "" } });
      frames.push(first);
      const args = JSON.stringify(call.arguments);
      for (const part of [args.slice(0, Math.ceil(args.length / 2)), args.slice(Math.ceil(args.length / 2))]) {
        const next = structuredClone(piece);
        Object.assign(next.choices[0].delta.tool_calls[0], { index, function: { arguments: part } });
        frames.push(next);
      }
      const end = structuredClone(closing);
      end.choices[0].delta.tool_calls[0].index = index;
      frames.push(end);
    });
    frames.push(finish, usage);
  } else {
    // alibaba-text: a role chunk, content deltas, the finish chunk, the usage chunk.
    const lines = recorded("alibaba-text");
    const [role, delta] = lines;
    const finish = lines.find((line) => line.choices[0]?.finish_reason);
    const usage = lines.at(-1)!;
    frames.push(role);
    for (const word of answer.text.match(/\s*\S+\s*/g) ?? []) {
      const next = structuredClone(delta);
      next.choices[0].delta.content = word;
      frames.push(next);
    }
    frames.push(finish!, usage);
  }
  return [...frames.map((frame) => `data: ${JSON.stringify(frame)}\n\n`), "data: [DONE]\n\n"];
}

/** A loopback OpenAI-compatible server answering every request from its conversation with `plan` (a text answer's frames `textDelayMs` apart). */
export function planServer(plan: Plan, options: { textDelayMs?: number } = {}): Promise<TestServer> {
  const responder: Responder = (request, response) => {
    const answer = plan(wireMessages(request.body));
    return sse(answerFrames(answer), "text" in answer ? { delayMs: options.textDelayMs } : {})(request, response);
  };
  return startServer(responder);
}

/** `model` with an asynchronous stream cleanup (its stream's `finally` awaits a timer). */
export function withAsyncCleanup(model: Model): Model {
  return {
    provider: model.provider,
    modelId: model.modelId,
    async *stream(request) {
      try {
        yield* model.stream(request);
      } finally {
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
    },
  };
}

/** The `agentloop/openai` Chat Completions adapter on a plan server, with its default options (retries included, as users have them). */
export function httpModel(url: string): Model {
  return openaiChat("qwen3-max", { baseURL: `${url}/v1`, apiKey: "test-key" });
}

/** A model of `plan` of the given kind, and how to stop what it started. */
export async function planModel(kind: ModelKind, plan: Plan): Promise<{ model: Model; close(): Promise<void> }> {
  if (kind === "async-cleanup") return { model: asyncCleanupModel(plan), close: async () => undefined };
  const server = await planServer(plan);
  return { model: httpModel(server.url), close: () => server.close() };
}
