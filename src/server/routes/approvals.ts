/**
 * `POST /v1/approvals`: goes on with a chat that stopped for approvals (`finish_reason:
 * "approval_required"`). Body: `{ session_id, decisions: { [tool_call_id]: { approve: true } |
 * { approve: false, reason? } }, stream? }` (each decision may carry the request's
 * `arguments_hash`). The checkpoint is read from the session's memory, so any replica sharing the
 * store can take it; the rest of the run streams as chat completion chunks (`stream: false`: one
 * completion body). Refusals are plain JSON errors: 404 nothing pending, 409 decided already, 400
 * bad decisions.
 */
import { Hono } from "hono";
import { onAbort } from "../../abort.js";
import type { ApprovalDecision } from "../../loop/checkpoint.js";
import type { RunResult } from "../../loop/events.js";
import { validSessionId } from "../session-id.js";
import { RequestController, sseHeaders, webSseSink } from "../chat-stream.js";
import { readJson, type ServerContext } from "../context.js";
import { badRequest } from "../http-errors.js";
import { completionOf, streamRun } from "./chat-completions.js";
import { durableApprovals } from "./runs.js";

export const APPROVALS_PATH = "/v1/approvals";

interface ApprovalRequestBody {
  sessionId: string;
  decisions: Record<string, ApprovalDecision>;
  stream: boolean;
}

export function parseApprovalRequest(body: unknown): ApprovalRequestBody {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw badRequest("the body must be a JSON object { session_id, decisions }");
  const value = body as Record<string, unknown>;
  const sessionId = validSessionId(value.session_id, "session_id");
  const raw = value.decisions;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw) || Object.keys(raw).length === 0) {
    throw badRequest("decisions must be an object { [tool_call_id]: { approve: true } | { approve: false, reason? } } with at least one decision", "decisions", "invalid_decisions");
  }
  const decisions: Record<string, ApprovalDecision> = {};
  for (const [callId, entry] of Object.entries(raw as Record<string, unknown>)) {
    const decision = entry as { approve?: unknown; reason?: unknown; arguments_hash?: unknown } | null;
    if (typeof decision !== "object" || decision === null || typeof decision.approve !== "boolean") {
      throw badRequest(`decisions.${callId} must be { approve: true } or { approve: false, reason? }`, `decisions.${callId}`, "invalid_decisions");
    }
    if (decision.reason !== undefined && typeof decision.reason !== "string") throw badRequest(`decisions.${callId}.reason must be a string`, `decisions.${callId}.reason`, "invalid_decisions");
    if (decision.arguments_hash !== undefined && typeof decision.arguments_hash !== "string") {
      throw badRequest(`decisions.${callId}.arguments_hash must be a string`, `decisions.${callId}.arguments_hash`, "invalid_decisions");
    }
    const argumentsHash = decision.arguments_hash as string | undefined;
    decisions[callId] = decision.approve ? { approve: true, argumentsHash } : { approve: false, reason: decision.reason as string | undefined, argumentsHash };
  }
  if (value.stream !== undefined && typeof value.stream !== "boolean") throw badRequest("stream must be a boolean", "stream", "invalid_stream");
  return { sessionId, decisions, stream: value.stream !== false };
}

export function approvalRoutes(server: ServerContext): Hono {
  const { runs, settings } = server;
  const app = new Hono();

  // Every call waiting for a decision, across sessions (the studio's approvals inbox).
  app.get(APPROVALS_PATH, async (c) => {
    const approvals = await pendingApprovals(server);
    return c.json({ pending: approvals, total: approvals.length });
  });

  app.post(APPROVALS_PATH, async (c) => {
    const { sessionId, decisions, stream } = parseApprovalRequest(await readJson(c));
    // Durable mode: the run waits in DBOS; the decisions are a message to it (any replica).
    if (server.durable) return durableApprovals(server, c, sessionId, decisions, stream);
    const controller = new RequestController();
    const unlink = onAbort(c.req.raw.signal, () => controller.disconnect());
    const model = settings.name;
    if (!stream) {
      try {
        return c.json(completionOf(await runs.track(runs.resume({ sessionId, decisions, controller })), model, sessionId));
      } finally {
        unlink();
      }
    }
    const { sink, body } = webSseSink(() => controller.disconnect());
    let accepted: () => void = () => undefined;
    const started = new Promise<void>((resolve) => {
      accepted = resolve;
    });
    let work: Promise<RunResult> | undefined;
    const streaming = streamRun(server, sink, { model, sessionId, progress: settings.progressBlocks }, (onEvent) => {
      work = runs.resume({ sessionId, decisions, controller, onEvent, onStart: accepted });
      return work;
    });
    void streaming.finally(unlink);
    // Refused before the run went on (nothing pending, decided already, bad decisions): a JSON error, not a stream.
    const refused = await Promise.race([started.then(() => undefined), work!.then(() => undefined, (error: unknown) => error)]);
    if (refused !== undefined) throw refused;
    return new Response(body, { headers: sseHeaders(sessionId) });
  });
  return app;
}

/** One call waiting for a person, as `GET /v1/approvals` lists it. */
export interface PendingApprovalView {
  session_id: string;
  checkpoint_id: string;
  run_id?: string;
  requested_at: string;
  tool_call_id: string;
  tool: string;
  arguments: unknown;
  arguments_hash: string;
  agent_path: string[];
}

/**
 * Every call waiting for a decision across sessions: the checkpoints recorded in the log
 * (`approval_requested` with a `checkpoint_id`) that no `approval_decided` answered yet, newest
 * first. Reads the store's latest approval events (the most recent `limit` of them).
 */
export async function pendingApprovals(server: ServerContext, limit = 1000): Promise<PendingApprovalView[]> {
  const events = await server.memory.store.latestEvents({ types: ["approval_requested", "approval_decided"], limit });
  const decided = new Set<string>();
  for (const event of events) {
    const id = (event.content as { checkpoint_id?: unknown } | null)?.checkpoint_id;
    if (event.event_type === "approval_decided" && typeof id === "string") decided.add(`${event.session_id}\n${id}`);
  }
  const pending: PendingApprovalView[] = [];
  for (const event of events.reverse()) {
    if (event.event_type !== "approval_requested") continue;
    const content = event.content as { checkpoint_id?: unknown; pending?: unknown } | null;
    if (typeof content?.checkpoint_id !== "string" || !Array.isArray(content.pending) || decided.has(`${event.session_id}\n${content.checkpoint_id}`)) continue;
    for (const entry of content.pending as Array<{ toolCallId: string; toolName: string; arguments: unknown; argumentsHash: string; agentPath?: string[] }>) {
      pending.push({
        session_id: event.session_id,
        checkpoint_id: content.checkpoint_id,
        run_id: typeof event.metadata.run_id === "string" ? event.metadata.run_id : undefined,
        requested_at: event.timestamp,
        tool_call_id: entry.toolCallId,
        tool: entry.toolName,
        arguments: entry.arguments,
        arguments_hash: entry.argumentsHash,
        agent_path: entry.agentPath ?? [server.settings.name],
      });
    }
  }
  return pending;
}
