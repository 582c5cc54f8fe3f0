/**
 * Provider-legal tool names. OpenAI and Anthropic accept `^[a-zA-Z0-9_-]{1,64}$`; agent tools
 * are often named `calendar.resolve_holiday`. Each request gets a two-way map so the model sees
 * legal names and the loop gets its own names back.
 */
import type { Message } from "../messages.js";
import type { ToolDefinition } from "../model/model.js";
import { keepShape } from "../shapes.js";
import { HistoryMemo } from "./history-memo.js";

const maxLength = 64;
const legalName = /^[a-zA-Z0-9_-]{1,64}$/;

/** The name with every illegal character replaced by `_`, cut to 64 characters. */
export function sanitizeToolName(name: string): string {
  const replaced = name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, maxLength);
  return replaced.length > 0 ? replaced : "tool";
}

/** The tool-call names of each conversation's last request (see `HistoryMemo`). */
const historyNames = new HistoryMemo<Set<string>>();

export class ToolNameMap {
  private readonly toProvider = new Map<string, string>();
  private readonly fromProvider = new Map<string, string>();

  /**
   * Names already legal keep themselves (they are claimed first); the others are sanitized and,
   * on a collision, get a numeric suffix.
   */
  constructor(names: Iterable<string>) {
    const all = names instanceof Set ? names : new Set(names);
    for (const name of all) if (legalName.test(name)) this.claim(name, name);
    for (const name of all) {
      if (this.toProvider.has(name)) continue;
      const base = sanitizeToolName(name);
      let candidate = base;
      for (let counter = 2; this.fromProvider.has(candidate); counter++) {
        const suffix = `_${counter}`;
        candidate = base.slice(0, maxLength - suffix.length) + suffix;
      }
      this.claim(name, candidate);
    }
  }

  /** The names of the request's tools and of every tool call in its history. */
  static forRequest(tools: readonly ToolDefinition[] | undefined, messages: readonly Message[]): ToolNameMap {
    // The history's names in order of first appearance, kept per conversation: a long session's
    // next request only adds the turn's messages to the last one, so only those are read.
    const match = historyNames.match(messages);
    const reuse = match !== undefined && match.shared === match.length;
    const called = reuse ? match.state : new Set<string>();
    for (let index = reuse ? match.shared : 0; index < messages.length; index++) {
      const message = messages[index]!;
      if (message.role !== "assistant") continue;
      for (const part of message.content) if (part.type === "tool-call") called.add(part.name);
    }
    historyNames.keep(messages, called);
    // The request's tools first, as always: the order decides which of two colliding names keeps its form.
    const names = new Set<string>();
    if (tools) for (const tool of tools) names.add(tool.name);
    for (const name of called) names.add(name);
    return new ToolNameMap(names);
  }

  /** The name sent to the provider. */
  toProviderName(name: string): string {
    return this.toProvider.get(name) ?? sanitizeToolName(name);
  }

  /** The agent's name for a name the provider sent (unknown names pass through unchanged). */
  fromProviderName(name: string): string {
    return this.fromProvider.get(name) ?? name;
  }

  private claim(name: string, providerName: string): void {
    this.toProvider.set(name, providerName);
    this.fromProvider.set(providerName, name);
  }
}
keepShape(new ToolNameMap([])); // see src/shapes.ts
