/** KAOS's memory endpoints: `GET /memory/sessions` and `GET /memory/events`. */
import { Hono } from "hono";
import { optionalSessionIdParam } from "../session-id.js";
import type { ServerContext } from "../context.js";
import { badRequest } from "../http-errors.js";
import { eventView } from "../memory.js";

export function memoryRoutes(server: ServerContext): Hono {
  const app = new Hono();
  const { memory, settings } = server;

  app.get("/memory/sessions", async (c) => {
    // KAOS lists session ids (least recently updated first); `agentloop sessions` shows the details.
    const ids = (await memory.store.listSessions()).map((session) => session.session_id);
    return c.json({ agent: settings.name, sessions: ids, total: ids.length });
  });

  app.get("/memory/events", async (c) => {
    const limitParam = c.req.query("limit");
    let limit = 100;
    if (limitParam !== undefined) {
      if (!/^\d+$/.test(limitParam) || Number(limitParam) < 1) throw badRequest("limit must be a positive integer", "limit", "invalid_limit");
      limit = Math.min(Number(limitParam), 1000);
    }
    const sessionId = optionalSessionIdParam(c.req.queries("session_id"), "session_id");
    // An unknown session has no events: 200 with an empty list, as KAOS answers.
    const stored = sessionId ? await memory.store.events(sessionId, { limit }) : await memory.store.latestEvents({ limit });
    const events = stored.map(eventView);
    return c.json({ agent: settings.name, events, total: events.length });
  });
  return app;
}
