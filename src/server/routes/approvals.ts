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
import { parseDecisions } from "../decisions.js";
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
  const decisions = parseDecisions(value.decisions);
  if (value.stream !== undefined && typeof value.stream !== "boolean") throw badRequest("stream must be a boolean", "stream", "invalid_stream");
  return { sessionId, decisions, stream: value.stream !== false };
}

export function approvalRoutes(server: ServerContext): Hono {
  const { runs, settings } = server;
  const app = new Hono();

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
