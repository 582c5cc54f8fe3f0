/**
 * An agentloop worker's loop events over A2A: the data part `{ "agentloop_event": <event> }` of a
 * `working` status update (the extension `AGENTLOOP_EVENTS_EXTENSION` on the card). The worker
 * sends its progress blocks, tool calls (`tool-start`, `tool-end`, grouped in waves by `step`) and
 * its own sub-agents' events (`nested`); a coordinator's `a2aAgentTool` turns them back into loop
 * events nested under the worker. Field names are snake_case, as on the rest of the wire.
 */
import type { LoopEvent } from "../loop/events.js";

export const AGENTLOOP_EVENTS_EXTENSION = "https://agentloop.dev/a2a/events/v1";

export type WireEvent =
  | { type: "progress"; step: number; max_steps: number; action: "tool_call" | "delegate"; target: string; tool_call_id: string }
  | { type: "tool-start"; step: number; tool_call_id: string; name: string; arguments: unknown; action: "tool_call" | "delegate" }
  | { type: "tool-end"; step: number; tool_call_id: string; name: string; action: "tool_call" | "delegate"; output: string; is_error: boolean; duration_ms: number }
  | { type: "nested"; agent: string; tool_call_id: string; event: WireEvent };

/** The wire form of the events a worker sends, undefined for the others. */
export function wireEventOf(event: LoopEvent): WireEvent | undefined {
  switch (event.type) {
    case "progress":
      return { type: "progress", step: event.step, max_steps: event.max_steps, action: event.action, target: event.target, tool_call_id: event.toolCallId };
    case "tool-start":
      return { type: "tool-start", step: event.step, tool_call_id: event.toolCallId, name: event.name, arguments: event.arguments, action: event.action };
    case "tool-end":
      return { type: "tool-end", step: event.step, tool_call_id: event.toolCallId, name: event.name, action: event.action, output: event.output, is_error: event.isError, duration_ms: event.durationMs };
    case "nested": {
      const inner = wireEventOf(event.event);
      return inner && { type: "nested", agent: event.agent, tool_call_id: event.toolCallId, event: inner };
    }
    default:
      return undefined;
  }
}

const isAction = (value: unknown): value is "tool_call" | "delegate" => value === "tool_call" || value === "delegate";

/** The loop event a wire event stands for (in the worker's run `runId`), undefined when it is malformed. */
export function loopEventOf(value: unknown, runId: string): LoopEvent | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const wire = value as Record<string, unknown>;
  const toolCallId = typeof wire.tool_call_id === "string" ? wire.tool_call_id : undefined;
  const step = typeof wire.step === "number" ? wire.step : 0;
  const action = isAction(wire.action) ? wire.action : "tool_call";
  if (toolCallId === undefined) return undefined;
  switch (wire.type) {
    case "progress":
      if (typeof wire.target !== "string" || typeof wire.max_steps !== "number") return undefined;
      return { type: "progress", runId, toolCallId, step, max_steps: wire.max_steps, action, target: wire.target };
    case "tool-start":
      if (typeof wire.name !== "string") return undefined;
      return { type: "tool-start", runId, toolCallId, step, name: wire.name, arguments: wire.arguments, action };
    case "tool-end": {
      if (typeof wire.name !== "string" || typeof wire.output !== "string") return undefined;
      const isError = wire.is_error === true;
      const result = { role: "tool" as const, toolCallId, toolName: wire.name, content: wire.output, isError };
      const durationMs = typeof wire.duration_ms === "number" ? wire.duration_ms : 0;
      return { type: "tool-end", runId, toolCallId, step, name: wire.name, action, output: wire.output, result, isError, truncated: false, durationMs };
    }
    case "nested": {
      const inner = loopEventOf(wire.event, runId);
      return inner && typeof wire.agent === "string" ? { type: "nested", runId, toolCallId, agent: wire.agent, event: inner } : undefined;
    }
    default:
      return undefined;
  }
}
