/**
 * The session log with its positions, for viewers that page through a session and follow it (the
 * studio's runs view, `agentloop events --follow` over HTTP):
 *
 * - `GET /v1/sessions?limit=` — `{ sessions: [{ session_id, created_at, updated_at, event_count,
 *   last_seq }], total }`, most recently updated first (KAOS's `/memory/sessions` lists ids only).
 * - `GET /v1/sessions/{session_id}/events?after_seq=&limit=` — `{ session_id, events, last_seq }`,
 *   oldest first, each event with its `seq`; `after_seq` gives the first `limit` events after it
 *   (default 1000, at most 10000), without it the last `limit` ones. A viewer follows a session by
 *   asking again with the last `seq` it has.
 * - `POST /v1/sessions/{session_id}/steer` `{ message }` — a message for the run going on in the
 *   session (it reads it before its next model call); `POST /v1/sessions/{session_id}/abort` ends
 *   that run (ABORTED). 404 `no_running_run` when none runs here.
 */
import { Hono } from "hono";
import type { ServerContext } from "../context.js";
import { readJson } from "../context.js";
import { badRequest, notFound } from "../http-errors.js";
import { validSessionId } from "../session-id.js";

const MAX_EVENTS = 10_000;

function integerQuery(value: string | undefined, name: string, minimum: number): number | undefined {
  if (value === undefined || value === "") return undefined;
  if (!/^\d+$/.test(value) || Number(value) < minimum) throw badRequest(`${name} must be an integer of at least ${minimum}, got "${value}"`, name, `invalid_${name}`);
  return Number(value);
}

export function sessionRoutes(server: ServerContext): Hono {
  const app = new Hono();
  const { memory } = server;

  app.get("/v1/sessions", async (c) => {
    const limit = integerQuery(c.req.query("limit"), "limit", 1);
    const sessions = (await memory.store.listSessions(limit ? { limit } : {})).reverse();
    return c.json({
      sessions: sessions.map(({ session_id, created_at, updated_at, event_count, last_seq }) => ({ session_id, created_at, updated_at, event_count, last_seq })),
      total: sessions.length,
    });
  });

  app.get("/v1/sessions/:session_id/events", async (c) => {
    const sessionId = validSessionId(c.req.param("session_id"), "session_id");
    const afterSeq = integerQuery(c.req.query("after_seq"), "after_seq", 0);
    const limit = Math.min(integerQuery(c.req.query("limit"), "limit", 1) ?? 1000, MAX_EVENTS);
    const events = await memory.store.events(sessionId, { limit, ...(afterSeq !== undefined ? { afterSeq } : {}) });
    const last = events.length > 0 ? events[events.length - 1].seq : afterSeq ?? 0;
    return c.json({ session_id: sessionId, events, last_seq: last });
  });

  const runningIn = (sessionId: string) => {
    const run = server.runs.activeRuns.get(sessionId);
    if (!run) throw notFound(`no run is going on in session "${sessionId}" on this server`, "no_running_run");
    return run;
  };

  app.post("/v1/sessions/:session_id/steer", async (c) => {
    const sessionId = validSessionId(c.req.param("session_id"), "session_id");
    const body = (await readJson(c)) as { message?: unknown } | null;
    if (typeof body?.message !== "string" || body.message.trim() === "") throw badRequest('the body must be { "message": "<text for the running run>" }', "message", "invalid_message");
    const run = runningIn(sessionId);
    run.steer(body.message);
    return c.json({ session_id: sessionId, run_id: run.id, steered: true });
  });

  app.post("/v1/sessions/:session_id/abort", async (c) => {
    const sessionId = validSessionId(c.req.param("session_id"), "session_id");
    const run = runningIn(sessionId);
    run.abort("aborted from the studio");
    return c.json({ session_id: sessionId, run_id: run.id, aborted: true });
  });
  return app;
}
