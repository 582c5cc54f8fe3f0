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

/** A tool's result as Prompty's events show it: its text. */
export type PromptyToolResult = string;

/** The payload of each event type (§13.1, as the specification's vectors have them). */
export interface PromptyEventData {
  token: { token: string };
  thinking: { token: string };
  tool_call_start: { name: string; arguments: string };
  tool_result: { name: string; result: PromptyToolResult };
  status: { message: string };
  messages_updated: { messages: Message[] };
  done: { response: string; messages: Message[] };
  error: { message: string };
  cancelled: { reason: string };
  compaction_start: Record<string, never>;
  compaction_complete: { removed: number; remaining: number };
  compaction_failed: { message: string };
}

/**
 * Receives every Prompty event, synchronously and in order. An exception it throws is ignored
 * (the loop goes on), as §13.1 asks.
 */
export type PromptyEventHandler = <T extends PromptyEventType>(type: T, data: PromptyEventData[T]) => void;

/** Translates one run's loop events into Prompty events. */
export interface PromptyEventBridge {
  /** The `RunOptions.onEvent` of the run. */
  onEvent(event: LoopEvent): void;
  /** A tool's handler is about to run for this call: its `tool_call_start` goes out now. */
  executing(toolCallId: string): void;
}

/** The status that opens the first tool round of a run (the vectors' `Starting agent loop`). */
export const LOOP_STARTED = "Starting agent loop";
/** The status before injected steering messages are reported. */
export const STEERING_INJECTED = "Injecting steering message";

/**
 * The Prompty events of one run, made from the loop's events as the specification's vectors
 * expect them:
 * - `messages_updated` after a tool round's results joined the messages, after steering messages
 *   joined them (each its own event, after the status `Injecting steering message`), and after the
 *   context was trimmed; not for the input, the model's answers, or a round cut short by an abort;
 * - `tool_call_start` when the call's handler starts (or, for a call refused before it could run,
 *   with its result); a call the run's abort kept from running has no events at all;
 * - `status` `Starting agent loop` before the first round of tool calls.
 * `streaming: false` sends no `token` events. `onUnknownTool` is told of a call to a tool the
 * prompty does not have (the caller raises `Tool not registered`).
 */
export function promptyEventBridge(
  handler: PromptyEventHandler | undefined,
  options: { streaming: boolean; isKnownTool(name: string): boolean; onUnknownTool(name: string): void },
): PromptyEventBridge {
  const send = <T extends PromptyEventType>(type: T, data: PromptyEventData[T]) => {
    if (!handler) return;
    try {
      handler(type, data);
    } catch {
      // §13.1: a failing callback must not stop the loop.
    }
  };
  const rawArguments = new Map<string, string>();
  /** Calls whose tool-start came but whose `tool_call_start` did not go out yet. */
  const waiting = new Map<string, PromptyEventData["tool_call_start"]>();
  const announce = (toolCallId: string) => {
    const start = waiting.get(toolCallId);
    if (!start) return;
    waiting.delete(toolCallId);
    send("tool_call_start", start);
  };
  let unknownTool = false;
  let loopStarted = false;
  // The transcript as reported: how far it was looked at, the last growth not yet looked at.
  let seen = 0;
  let growth: { count: number; messages: readonly Message[] } | undefined;
  let steering = 0;
  // The round in progress: results reported, and whether a call of it was kept from running.
  let results = 0;
  let cut = false;
  const update = (messages: readonly Message[], count: number) => {
    seen = count;
    send("messages_updated", { messages: messages.slice(0, count) });
  };
  // The transcript grew to `count`: reported when what joined is a whole round's tool results.
  const settle = (messages: readonly Message[], count: number) => {
    const added = messages.slice(seen, count);
    seen = count;
    if (!added.some((message) => message.role === "tool")) return;
    if (results > 0 && !cut) update(messages, count);
    results = 0;
    cut = false;
  };

  const onEvent = (event: LoopEvent) => {
    // The loop announces a grown transcript before the next event; which event follows says why.
    if (event.type === "messages-updated") {
      growth = { count: event.count, messages: event.messages };
      return;
    }
    if (event.type === "steering") {
      // The steering message is in the growth; what came before it (a round's results) is its own update.
      if (steering === 0 && growth) settle(growth.messages, growth.count - 1);
      steering++;
      return;
    }
    if (steering > 0) {
      send("status", { message: STEERING_INJECTED });
      steering = 0;
      if (growth) update(growth.messages, growth.count);
    } else if (growth) settle(growth.messages, growth.count);
    growth = undefined;
    switch (event.type) {
      case "text-delta":
        if (options.streaming) send("token", { token: event.delta });
        break;
      case "reasoning-delta":
        if (options.streaming) send("thinking", { token: event.delta });
        break;
      case "turn-end": {
        let calls = 0;
        for (const part of event.message.content) {
          if (part.type !== "tool-call") continue;
          calls++;
          rawArguments.set(part.id, part.arguments);
          // Before the wave starts: no call of it runs when one names a tool that does not exist.
          if (!unknownTool && !options.isKnownTool(part.name)) {
            unknownTool = true;
            options.onUnknownTool(part.name);
          }
        }
        if (calls > 0 && !unknownTool && !loopStarted) {
          loopStarted = true;
          send("status", { message: LOOP_STARTED });
        }
        break;
      }
      case "tool-start":
        waiting.set(event.toolCallId, { name: event.name, arguments: rawArguments.get(event.toolCallId) ?? JSON.stringify(event.arguments ?? {}) });
        break;
      case "tool-end": {
        rawArguments.delete(event.toolCallId);
        if (waiting.has(event.toolCallId) && event.errorKind === "cancelled") {
          // Never ran: the run was aborted before its turn (§13.2: no pending tool call runs).
          waiting.delete(event.toolCallId);
          cut = true;
          break;
        }
        announce(event.toolCallId);
        const text = typeof event.result.content === "string" ? event.result.content : textOf(event.result);
        send("tool_result", { name: event.name, result: text });
        results++;
        break;
      }
      case "tool-error":
        if (event.kind === "unknown_tool" && !unknownTool) {
          unknownTool = true;
          options.onUnknownTool(event.name);
        }
        break;
      case "guardrail":
        if (!event.allowed && event.guardrail !== "tool") {
          send("error", { message: `${event.guardrail === "input" ? "Input" : "Output"} guardrail denied: ${event.reason}` });
        }
        break;
      case "loop-warning":
        send("status", { message: event.message });
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
        else if (event.state === "ABORTED" && !unknownTool) send("cancelled", { reason: event.reason.replace(/^aborted: /, "") });
        break;
      default:
        break;
    }
  };
  return { onEvent, executing: announce };
}
