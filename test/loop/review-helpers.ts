// Shared checks for the review tests: the invariants every finished run must satisfy.
import assert from "node:assert/strict";
import type { LoopEvent, Message, RunResult, ToolResultMessage } from "../../src/index.js";

/** Every tool call in the transcript has exactly one result, after it; no assistant message is empty. */
export function assertTranscriptConsistent(messages: Message[]): void {
  const pending = new Map<string, number>();
  const answered = new Set<string>();
  for (const [index, message] of messages.entries()) {
    if (message.role === "assistant") {
      const parts = message.content;
      assert.ok(parts.length > 0, `assistant message ${index} has no parts`);
      for (const part of parts) {
        if (part.type === "text") assert.ok(part.text.length > 0, `assistant message ${index} has an empty text part`);
        if (part.type === "tool-call") {
          assert.ok(!pending.has(part.id) && !answered.has(part.id), `tool call ${part.id} asked twice`);
          pending.set(part.id, index);
        }
      }
    }
    if (message.role === "tool") {
      const result = message as ToolResultMessage;
      assert.ok(pending.has(result.toolCallId), `result for ${result.toolCallId} without an open call (or a second result)`);
      pending.delete(result.toolCallId);
      answered.add(result.toolCallId);
    }
  }
  assert.deepEqual([...pending.keys()], [], "tool calls without a result");
}

/** run-start first, run-end last and once; per call: progress → tool-start → tool-end, each once. */
export function assertEventOrder(events: LoopEvent[]): void {
  assert.equal(events[0]?.type, "run-start", "run-start comes first");
  assert.equal(events.at(-1)?.type, "run-end", `run-end comes last (last events: ${events.slice(-3).map((event) => event.type)})`);
  assert.equal(events.filter((event) => event.type === "run-start").length, 1, "one run-start");
  assert.equal(events.filter((event) => event.type === "run-end").length, 1, "one run-end");
  const seen = new Map<string, string[]>();
  for (const event of events) {
    if (event.type === "progress" || event.type === "tool-start" || event.type === "tool-end" || event.type === "tool-progress") {
      const list = seen.get(event.toolCallId) ?? [];
      list.push(event.type);
      seen.set(event.toolCallId, list);
    }
  }
  for (const [id, list] of seen) {
    const lifecycle = list.filter((type) => type !== "tool-progress");
    assert.deepEqual(lifecycle, ["progress", "tool-start", "tool-end"], `call ${id}: ${list.join(", ")}`);
    const start = list.indexOf("tool-start");
    const end = list.indexOf("tool-end");
    list.forEach((type, index) => {
      if (type === "tool-progress") assert.ok(index > start && index < end, `call ${id}: tool-progress outside its call (${list.join(", ")})`);
    });
  }
}

export function assertRunInvariants(result: RunResult, events: LoopEvent[]): void {
  assertTranscriptConsistent(result.messages);
  assertEventOrder(events);
  const end = events.at(-1);
  assert.ok(end?.type === "run-end" && end.state === result.state, "run-end states the result's state");
}

/** Resolves with the value, or with "timeout" after `ms` (the timer is cleared either way). */
export async function within<T>(promise: PromiseLike<T>, ms: number): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), ms);
  });
  try {
    return await Promise.race([Promise.resolve(promise), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
