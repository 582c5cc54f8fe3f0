/**
 * The decisions a person sends for calls waiting for approval, in the wire shape shared by
 * `POST /v1/approvals` and an A2A message on an `input-required` task:
 * `{ [tool_call_id]: { approve: true, arguments_hash? } | { approve: false, reason?, arguments_hash? } }`.
 */
import type { ApprovalDecision } from "../loop/checkpoint.js";
import { badRequest } from "./http-errors.js";

/** The decisions in `raw` (the field `param`), or a 400 `invalid_decisions` naming what is wrong. */
export function parseDecisions(raw: unknown, param = "decisions"): Record<string, ApprovalDecision> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw) || Object.keys(raw).length === 0) {
    throw badRequest(`${param} must be an object { [tool_call_id]: { approve: true } | { approve: false, reason? } } with at least one decision`, param, "invalid_decisions");
  }
  const decisions: Record<string, ApprovalDecision> = {};
  for (const [callId, entry] of Object.entries(raw as Record<string, unknown>)) {
    const decision = entry as { approve?: unknown; reason?: unknown; arguments_hash?: unknown } | null;
    const at = `${param}.${callId}`;
    if (typeof decision !== "object" || decision === null || typeof decision.approve !== "boolean") {
      throw badRequest(`${at} must be { approve: true } or { approve: false, reason? }`, at, "invalid_decisions");
    }
    if (decision.reason !== undefined && typeof decision.reason !== "string") throw badRequest(`${at}.reason must be a string`, `${at}.reason`, "invalid_decisions");
    if (decision.arguments_hash !== undefined && typeof decision.arguments_hash !== "string") {
      throw badRequest(`${at}.arguments_hash must be a string`, `${at}.arguments_hash`, "invalid_decisions");
    }
    const argumentsHash = decision.arguments_hash as string | undefined;
    decisions[callId] = decision.approve ? { approve: true, argumentsHash } : { approve: false, reason: decision.reason as string | undefined, argumentsHash };
  }
  return decisions;
}
