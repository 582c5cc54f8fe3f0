// The conversations of test/durable/child.ts, shared with the parent that serves them over HTTP.
import { type Plan, toolResults } from "./models.js";

const doneText = (results: string[]) => `done: ${results.join(" | ")}`;

/** Four waves of one `step` call (call_1..call_4), then the answer listing their results. */
export const stepsPlan: Plan = (messages) => {
  const results = toolResults(messages);
  if (results.length < 4) {
    const n = results.length + 1;
    return { calls: [{ id: `call_${n}`, name: "step", arguments: { n } }] };
  }
  return { text: doneText(results) };
};

/** One wave of three concurrent `step` calls (call_1..call_3), then the answer. */
export const wavePlan: Plan = (messages) => {
  const results = toolResults(messages);
  if (results.length === 0) return { calls: [1, 2, 3].map((n) => ({ id: `call_${n}`, name: "step", arguments: { n } })) };
  return { text: doneText(results) };
};

export const plans = { steps: stepsPlan, wave: wavePlan };

/** A run of test/durable/child.ts (its header says what each field does). */
export interface ChildRun {
  runId: string;
  file: string;
  model: "in-process" | "async-cleanup" | "http";
  plan: keyof typeof plans;
  idempotent?: boolean;
  approval?: boolean;
  decide?: boolean;
  hangAt?: number;
  hangAfter?: number;
}
