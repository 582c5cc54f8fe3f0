/** `GET /health` and `GET /ready` (no auth: KAOS and Kubernetes probe them). */
import { Hono } from "hono";
import { type ServerContext, unixSeconds } from "../context.js";

export function healthRoutes(server: ServerContext): Hono {
  const app = new Hono();
  app.get("/health", (c) => c.json({ status: "healthy", name: server.settings.name, timestamp: unixSeconds() }));
  app.get("/ready", (c) => {
    const status = { ...server.readyStatus, timestamp: unixSeconds() };
    return c.json(status, status.status === "ready" || status.status === "degraded" ? 200 : 503);
  });
  return app;
}
