import type { RunResult } from "../loop/events.js";
import type { DurableRunResult } from "./types.js";

/** A run's result as DBOS stores it: JSON, the transcript left out, the error as its kind and message. */
export function storedResult(result: RunResult): DurableRunResult {
  const { error, messages: _messages, ...rest } = result;
  const plain = JSON.parse(JSON.stringify(rest)) as DurableRunResult;
  if (error) plain.error = { kind: error.kind, message: error.message };
  return plain;
}
