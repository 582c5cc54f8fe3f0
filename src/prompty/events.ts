/**
 * The Prompty agent-loop events (specification §13.1), made from the loop's own events: the names
 * and payloads a Prompty runtime's `on_event(type, data)` callback receives.
 */
import type { LoopEvent } from "../loop/events.js";
import { type Message, textOf } from "../messages.js";

export type PromptyEventType =
  | "token"
  | "thinking"
  | "tool_call_start"
  | "tool_result"
  | "status"
  | "messages_updated"
  | "done"
  | "error"
  | "cancelled"
  | "compaction_start"
  | "compaction_complete"
  | "compaction_failed";

/** A tool's result as Prompty shows it: its parts. */
export interface PromptyToolResult {
  parts: Array<{ kind: "text"; value: string }>;
}

/** The payload of each event type (§13.1). */
export interface PromptyEventData {
  token: { token: string };
  thinking: { token: string };
  tool_call_start: { name: string; arguments: string };
  tool_result: { name: string; result: PromptyToolResult };
  status: { message: string };
  messages_updated: { messages: Message[] };
  done: { response: string; messages: Message[] };
  error: { message: string };
  cancelled: Record<string, never>;
  compaction_start: Record<string, never>;
  compaction_complete: { removed: number; remaining: number };
  compaction_failed: { message: string };
}

/**
 * Receives every Prompty event, synchronously and in order. An exception it throws is ignored
 * (the loop goes on), as §13.1 asks.
 */
export type PromptyEventHandler = <T extends PromptyEventType>(type: T, data: PromptyEventData[T]) => void;

/**
 * A `RunOptions.onEvent` that translates the loop's events for `handler`. `streaming: false`
 * sends no `token` events (the answer arrives whole). `onUnknownTool` is told of a call to a tool
 * the prompty does not have (the caller raises `Tool not registered`).
 */
export function promptyEventBridge(
  handler: PromptyEventHandler | undefined,
  options: { streaming: boolean; isKnownTool(name: string): boolean; onUnknownTool(name: string): void },
): (event: LoopEvent) => void {
  const rawArguments = new Map<string, string>();
  let steering = 0;
  let unknownTool = false;
  const send = <T extends PromptyEventType>(type: T, data: PromptyEventData[T]) => {
    if (!handler) return;
    try {
      handler(type, data);
    } catch {
      // §13.1: a failing callback must not stop the loop.
    }
  };
  return (event) => {
    if (steering > 0 && event.type !== "steering") {
      send("status", { message: `Injected ${steering} steering message(s)` });
      steering = 0;
    }
    switch (event.type) {
      case "text-delta":
        if (options.streaming) send("token", { token: event.delta });
        break;
      case "reasoning-delta":
        if (options.streaming) send("thinking", { token: event.delta });
        break;
      case "turn-end":
        for (const part of event.message.content) {
          if (part.type !== "tool-call") continue;
          rawArguments.set(part.id, part.arguments);
          // Before the wave starts: no call of it runs when one names a tool that does not exist.
          if (!unknownTool && !options.isKnownTool(part.name)) {
            unknownTool = true;
            options.onUnknownTool(part.name);
          }
        }
        break;
      case "tool-start":
        send("tool_call_start", { name: event.name, arguments: rawArguments.get(event.toolCallId) ?? JSON.stringify(event.arguments ?? {}) });
        break;
      case "tool-end": {
        rawArguments.delete(event.toolCallId);
        const text = typeof event.result.content === "string" ? event.result.content : textOf(event.result);
        send("tool_result", { name: event.name, result: { parts: [{ kind: "text", value: text }] } });
        if (event.isError && text.startsWith("Error: Tool ")) send("error", { message: text });
        break;
      }
      case "tool-error":
        if (event.kind === "unknown_tool" && !unknownTool) {
          unknownTool = true;
          options.onUnknownTool(event.name);
        }
        break;
      case "steering":
        steering++;
        break;
      case "loop-warning":
        send("status", { message: event.message });
        break;
      case "messages-updated":
        send("messages_updated", { messages: [...event.messages] });
        break;
      case "context-trimmed":
        send("compaction_start", {});
        if (event.summaryError) send("compaction_failed", { message: event.summaryError });
        send("compaction_complete", { removed: event.removedMessages, remaining: event.keptMessages });
        send("messages_updated", { messages: [...event.messages] });
        break;
      case "error":
        if (!event.fatal) send("error", { message: event.error.message });
        break;
      case "run-end":
        if (event.state === "COMPLETED") send("done", { response: event.result.text, messages: [...event.result.messages] });
        else if (event.state === "ABORTED" && !unknownTool) send("cancelled", {});
        break;
      default:
        break;
    }
  };
}
