/**
 * The conversation a session's next run continues, projected from its event log.
 */
import type { AssistantMessage, Message, ToolCallPart, ToolResultMessage } from "../messages.js";
import type { MemoryEvent } from "./store.js";

export const DEFAULT_CONTEXT_LIMIT = 6;

/** The result text given to a tool call whose run stopped before it finished (process killed, aborted). */
export const INTERRUPTED_TOOL_RESULT = "[interrupted: the run stopped before this tool call finished]";

export interface HistoryOptions {
  /** Keep only the last N exchanges (an exchange starts at a user message). Default 6; `Infinity` keeps all. */
  contextLimit?: number;
}

interface ToolCallEntry {
  part: ToolCallPart;
  result?: ToolResultMessage;
}

type Block =
  | { kind: "user"; text: string; startsExchange: boolean }
  | { kind: "assistant"; text: string }
  | { kind: "tools"; key: string; text: string; calls: ToolCallEntry[] };

function text(content: unknown): string {
  if (typeof content === "string") return content;
  if (content === null || content === undefined) return "";
  return JSON.stringify(content);
}

function metadataString(event: MemoryEvent, key: string): string | undefined {
  const value = event.metadata?.[key];
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

/** The arguments exactly as the model produced them, or the best reconstruction from the content. */
function rawArguments(event: MemoryEvent): string {
  const raw = metadataString(event, "raw_arguments");
  if (raw !== undefined) return raw;
  const content = event.content as Record<string, unknown> | null;
  if (content && typeof content === "object") {
    if (event.event_type === "delegation_request" && "task" in content) return JSON.stringify({ task: content.task });
    if ("arguments" in content) return typeof content.arguments === "string" ? content.arguments : JSON.stringify(content.arguments ?? {});
  }
  return "{}";
}

function toolName(event: MemoryEvent): string {
  const name = metadataString(event, "tool_name");
  if (name) return name;
  const content = event.content as Record<string, unknown> | null;
  if (content && typeof content === "object") {
    if (typeof content.tool === "string") return content.tool;
    if (typeof content.agent === "string") return `delegate_to_${content.agent}`;
  }
  return "unknown_tool";
}

/** What the model saw as the result: the truncated text when there was one, else the output. */
function resultText(event: MemoryEvent): string {
  const sent = event.metadata?.model_result;
  if (typeof sent === "string") return sent;
  const content = event.content as Record<string, unknown> | null;
  if (content && typeof content === "object") {
    if ("result" in content) return text(content.result);
    if ("response" in content) return text(content.response);
  }
  return text(event.content);
}

/**
 * Rebuilds unified messages from a session's events (oldest first):
 * - `user_message` and `steering` become user messages, `agent_response` an assistant message;
 * - the tool calls of one model turn (`tool_call` / `delegation_request`) become one assistant
 *   message with tool-call parts, followed by their results in call order;
 * - a result whose call is not in the log is dropped; a call without a result (an interrupted
 *   run) gets an error result saying it was interrupted, so no call is left dangling;
 * - everything before the first user message is dropped (its question was trimmed away);
 * - only the last `contextLimit` exchanges are kept; a call is never separated from its result.
 * Other events (state, errors, warnings, delegated-task receipts) are not part of the conversation.
 */
export function historyFromEvents(events: readonly MemoryEvent[], options: HistoryOptions = {}): Message[] {
  const contextLimit = options.contextLimit ?? DEFAULT_CONTEXT_LIMIT;
  if (Number.isNaN(contextLimit) || contextLimit < 0) throw new TypeError(`memory: contextLimit must be a non-negative number, got ${contextLimit}`);
  const blocks: Block[] = [];
  const callsById = new Map<string, ToolCallEntry>();
  for (const event of events) {
    switch (event.event_type) {
      case "user_message":
        blocks.push({ kind: "user", text: text(event.content), startsExchange: true });
        break;
      case "steering":
        blocks.push({ kind: "user", text: text(event.content), startsExchange: false });
        break;
      case "agent_response": {
        const answer = text(event.content);
        if (answer.length > 0) blocks.push({ kind: "assistant", text: answer });
        break;
      }
      case "tool_call":
      case "delegation_request": {
        const id = metadataString(event, "tool_call_id") ?? event.event_id;
        if (callsById.has(id)) break; // a duplicate write: the first one counts
        const entry: ToolCallEntry = { part: { type: "tool-call", id, name: toolName(event), arguments: rawArguments(event) } };
        callsById.set(id, entry);
        // Calls of one model turn share an assistant message: same run and turn, no other block between.
        const runId = metadataString(event, "run_id") ?? "";
        const turn = event.metadata?.turn;
        const key = `${runId}\u0000${turn === undefined ? event.event_id : String(turn)}`;
        const last = blocks[blocks.length - 1];
        if (last?.kind === "tools" && last.key === key) last.calls.push(entry);
        else blocks.push({ kind: "tools", key, text: metadataString(event, "assistant_text") ?? "", calls: [entry] });
        break;
      }
      case "tool_result":
      case "delegation_response": {
        const id = metadataString(event, "tool_call_id");
        const entry = id === undefined ? undefined : callsById.get(id);
        if (!entry || entry.result) break; // orphaned or duplicate: never sent to a provider
        entry.result = {
          role: "tool",
          toolCallId: entry.part.id,
          toolName: entry.part.name,
          content: resultText(event),
          ...(event.metadata?.is_error === true ? { isError: true } : {}),
        };
        break;
      }
      default:
        break;
    }
  }

  // Keep the last `contextLimit` exchanges; blocks before the first user message are dropped.
  const starts: number[] = [];
  blocks.forEach((block, index) => {
    if (block.kind === "user" && block.startsExchange) starts.push(index);
  });
  // A fractional limit counts whole exchanges (1.9 keeps one, 0.5 none).
  const keep = Math.floor(Math.min(contextLimit, starts.length));
  if (keep === 0) return [];
  const keepFrom = starts[starts.length - keep];

  const messages: Message[] = [];
  for (const block of blocks.slice(keepFrom)) {
    if (block.kind === "user") messages.push({ role: "user", content: block.text });
    else if (block.kind === "assistant") messages.push({ role: "assistant", content: [{ type: "text", text: block.text }] });
    else {
      const assistant: AssistantMessage = {
        role: "assistant",
        content: [...(block.text ? [{ type: "text" as const, text: block.text }] : []), ...block.calls.map((call) => call.part)],
      };
      messages.push(assistant);
      for (const call of block.calls) {
        messages.push(
          call.result ?? { role: "tool", toolCallId: call.part.id, toolName: call.part.name, content: INTERRUPTED_TOOL_RESULT, isError: true },
        );
      }
    }
  }
  return messages;
}
