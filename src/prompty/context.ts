/**
 * The context window of Prompty §13.3: a budget in characters, the specification's character
 * estimate, and its deterministic summary of the removed messages as a system message
 * `[Summary of earlier conversation] …` right after the system messages (as the vectors have it).
 * The agentloop trimmer does the removing (whole exchanges, a tool call never apart from its result).
 */
import type { ContextBudget } from "../loop/context.js";
import type { Message } from "../messages.js";

/** `estimate_chars` of §13.3 for one message. */
export function estimateChars(message: Message): number {
  let total = message.role.length + 4;
  const content = message.content;
  if (typeof content === "string") return total + content.length;
  const calls: unknown[] = [];
  for (const part of content) {
    if (part.type === "text" || part.type === "reasoning") total += part.text.length;
    else if (part.type === "tool-call") calls.push({ id: part.id, type: "function", function: { name: part.name, arguments: part.arguments } });
    else total += 200;
  }
  if (calls.length > 0) total += JSON.stringify(calls).length;
  return total;
}

const truncate = (text: string, length: number) => (text.length > length ? `${text.slice(0, length)}...` : text);

function textOf(message: Message): string {
  const content = message.content;
  if (typeof content === "string") return content;
  return content.map((part) => (part.type === "text" ? part.text : "")).join("");
}

/** `summarize_dropped` of §13.3: who asked what, what the assistant said and called; capped at ~4000 characters. */
export function summarizeDropped(messages: readonly Message[]): string {
  const lines: string[] = [];
  for (const message of messages) {
    if (message.role === "user") lines.push(`User asked: ${truncate(textOf(message), 200)}`);
    else if (message.role === "assistant") {
      const text = textOf(message);
      if (text) lines.push(`Assistant: ${truncate(text, 200)}`);
      const names = message.content.filter((part) => part.type === "tool-call").map((part) => (part.type === "tool-call" ? part.name : ""));
      if (names.length > 0) lines.push(`  Called tools: ${names.join(", ")}`);
    }
  }
  return truncate(lines.join("\n"), 4000);
}

/** How the summary of the removed messages begins. */
export const SUMMARY_PREFIX = "[Summary of earlier conversation] ";

/** `AgentConfig.context` for a Prompty `context_budget` (characters). */
export function promptyContextBudget(budgetChars: number): ContextBudget {
  return {
    maxTokens: budgetChars,
    useReportedUsage: false,
    estimator: estimateChars,
    strategy: "summarize",
    summarizer: summarizeDropped,
    reserveTokens: Math.min(5000, Math.floor(budgetChars * 0.05)),
    // The vectors' form (§13.3's prose: a user message `[Context summary: …]`).
    marker: ({ summary }) => `${SUMMARY_PREFIX}${summary ?? ""}`,
    markerRole: "system",
  };
}
