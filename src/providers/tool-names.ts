/**
 * Provider-legal tool names. OpenAI and Anthropic accept `^[a-zA-Z0-9_-]{1,64}$`; agent tools
 * are often named `calendar.resolve_holiday`. Each request gets a two-way map so the model sees
 * legal names and the loop gets its own names back.
 */
import type { Message } from "../messages.js";
import type { ToolDefinition } from "../model/model.js";

const maxLength = 64;
const legalName = /^[a-zA-Z0-9_-]{1,64}$/;

/** The name with every illegal character replaced by `_`, cut to 64 characters. */
export function sanitizeToolName(name: string): string {
  const replaced = name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, maxLength);
  return replaced.length > 0 ? replaced : "tool";
}

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
    // A set, not a list: a long session's history calls the same few tools a thousand times, and
    // this runs before every model call (a list of every call's name was O(history) garbage per turn).
    const names = new Set<string>();
    if (tools) for (const tool of tools) names.add(tool.name);
    for (const message of messages) {
      if (message.role !== "assistant") continue;
      for (const part of message.content) if (part.type === "tool-call") names.add(part.name);
    }
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
