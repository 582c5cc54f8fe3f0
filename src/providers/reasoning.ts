/**
 * The one reasoning setting (`ModelOptions.reasoning`: `{ effort }` or `{ budgetTokens }`) and how
 * each provider's own knob is derived from it: an effort for the wires that take one (Chat
 * Completions `reasoning_effort`, Responses `reasoning.effort`, Gemini 3 `thinkingLevel`), a token
 * budget for the ones that take a budget (Anthropic `budget_tokens`, Gemini 2.5 `thinkingBudget`).
 */
import { AgentLoopError } from "../errors.js";
import type { ModelRequest, ReasoningEffort, ReasoningSetting } from "../model/model.js";

const efforts: readonly ReasoningEffort[] = ["minimal", "low", "medium", "high"];

/** Budgets an effort stands for on the budget-based wires. */
const budgetOfEffort: Record<ReasoningEffort, number> = { minimal: 1024, low: 2048, medium: 8192, high: 24576 };

/** The request's reasoning setting, checked (a bad one is a `configuration` error naming the field). */
export function reasoningSetting(request: ModelRequest): ReasoningSetting | undefined {
  const setting = request.options?.reasoning;
  if (setting === undefined) return undefined;
  if (setting && typeof setting === "object") {
    if ("effort" in setting && efforts.includes(setting.effort)) return setting;
    if ("budgetTokens" in setting && Number.isInteger(setting.budgetTokens) && setting.budgetTokens >= 0) return setting;
  }
  throw new AgentLoopError(
    "configuration",
    `reasoning must be { effort: "minimal" | "low" | "medium" | "high" } or { budgetTokens: <whole number ≥ 0> }, got ${JSON.stringify(setting)}`,
    { retryable: false },
  );
}

/** The setting as a token budget. */
export function reasoningBudget(setting: ReasoningSetting): number {
  return "budgetTokens" in setting ? setting.budgetTokens : budgetOfEffort[setting.effort];
}

/** The setting as an effort (a budget maps to the nearest effort at or above it). */
export function reasoningEffort(setting: ReasoningSetting): ReasoningEffort {
  if ("effort" in setting) return setting.effort;
  return efforts.find((effort) => setting.budgetTokens <= budgetOfEffort[effort]) ?? "high";
}
