/**
 * A KAOS-style worker's streamed chat completion, read live: each progress block (a whole content
 * chunk `{"type":"progress",…}`) becomes a `progress` event and each answer delta a `text-delta`,
 * handed to `nest` (the delegating tool nests them under the worker). The stream's end says how
 * it finished: the answer text, the calls an agentloop worker waits on (`approval_required`), or
 * the error event it sent.
 */
import { createParser } from "eventsource-parser";
import type { LoopEvent } from "../loop/events.js";

export type StreamedCompletion = { answer: string; finishReason?: string; approvalRequired?: unknown } | { error: string };

interface Chunk {
  choices?: Array<{ delta?: { content?: unknown }; finish_reason?: unknown }>;
  approval_required?: unknown;
  error?: { message?: unknown; code?: unknown };
}

/** A content chunk that is a whole KAOS progress block, as a loop event; undefined for answer text. */
function progressOf(content: string, runId: string): LoopEvent | undefined {
  if (!content.startsWith('{"type":"progress"')) return undefined;
  try {
    const block = JSON.parse(content) as { step?: unknown; max_steps?: unknown; action?: unknown; target?: unknown };
    if (typeof block.step !== "number" || typeof block.max_steps !== "number" || typeof block.target !== "string") return undefined;
    const action = block.action === "delegate" ? "delegate" : "tool_call";
    return { type: "progress", runId, toolCallId: `${block.step}:${block.target}`, step: block.step, max_steps: block.max_steps, action, target: block.target };
  } catch {
    return undefined;
  }
}

/** Reads the SSE body to `[DONE]` (or its end), nesting the worker's events as they come. */
export async function readCompletionStream(body: ReadableStream<Uint8Array>, runId: string, nest: (event: LoopEvent) => void): Promise<StreamedCompletion> {
  let answer = "";
  let finishReason: string | undefined;
  let approvalRequired: unknown;
  let error: string | undefined;
  const parser = createParser({
    onEvent(message) {
      if (message.data === "[DONE]" || error !== undefined) return;
      let chunk: Chunk;
      try {
        chunk = JSON.parse(message.data) as Chunk;
      } catch {
        error = `a stream event is not JSON: ${message.data.slice(0, 200)}`;
        return;
      }
      if (chunk.error) {
        error = typeof chunk.error.message === "string" ? chunk.error.message : JSON.stringify(chunk.error);
        return;
      }
      const choice = chunk.choices?.[0];
      const content = choice?.delta?.content;
      if (typeof content === "string" && content !== "") {
        const progress = progressOf(content, runId);
        if (progress) nest(progress);
        else {
          answer += content;
          nest({ type: "text-delta", runId, turn: 0, delta: content });
        }
      }
      if (typeof choice?.finish_reason === "string") finishReason = choice.finish_reason;
      if (chunk.approval_required !== undefined) approvalRequired = chunk.approval_required;
    },
  });
  const decoder = new TextDecoder();
  for await (const bytes of body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(bytes, { stream: true }));
  if (error !== undefined) return { error };
  return { answer, finishReason, approvalRequired };
}
