/**
 * Approvals over A2A (the worker's side). A run that stops for approvals puts its task in
 * `input-required`; the status message carries a text part saying so and a data part
 * `{ "approval_required": { session_id, checkpoint_id, pending: [{ tool_call_id, tool, arguments,
 * arguments_hash, agent_path }] } }` (the `approval_required` field of a chat completion). A
 * message on that task with a data part `{ "decisions": { [tool_call_id]: { approve, reason?,
 * arguments_hash? } } }` (the body of `POST /v1/approvals`) resumes the run.
 */
import type { Message, Part } from "@a2a-js/sdk";
import type { ApprovalDecision } from "../loop/checkpoint.js";
import type { ApprovalRequired } from "./chat-stream.js";
import { parseDecisions } from "./decisions.js";

/** The media type of agentloop's data parts. */
export const DATA_MEDIA_TYPE = "application/json";

export const dataPart = (value: Record<string, unknown>): Part => ({ content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: DATA_MEDIA_TYPE });

/** The parts of an `input-required` status message. */
export function approvalParts(approvals: ApprovalRequired, textPart: (text: string) => Part): Part[] {
  const names = approvals.pending.map((entry) => `${entry.tool} (${entry.tool_call_id})`).join(", ");
  return [textPart(`Approval required: ${approvals.pending.length} tool call(s) wait for a decision: ${names}`), dataPart({ approval_required: approvals })];
}

/**
 * The decisions a message carries (its first data part with `decisions`): undefined when it carries
 * none; throws a 400 `HttpError` naming the problem when they are malformed.
 */
export function decisionsOf(message: Message): Record<string, ApprovalDecision> | undefined {
  for (const part of message.parts) {
    const content = part.content;
    if (content?.$case !== "data" || typeof content.value !== "object" || content.value === null || !("decisions" in content.value)) continue;
    return parseDecisions((content.value as { decisions: unknown }).decisions, "decisions");
  }
  return undefined;
}
