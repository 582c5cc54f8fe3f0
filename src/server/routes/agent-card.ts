/** The A2A agent card at its three well-known paths. */
import { type Context, Hono } from "hono";
import type { ServerContext } from "../context.js";

export function agentCardRoutes(server: ServerContext): Hono {
  const app = new Hono();
  // The card lists the tools, so it waits for the MCP servers (bounded by the readiness timeout).
  const cardRoute = async (c: Context) => {
    await server.connecting;
    return c.json(server.card());
  };
  app.get("/.well-known/agent.json", cardRoute);
  app.get("/.well-known/agent-card.json", cardRoute);
  // Where KAOS's RemoteAgent looks for a peer's card (no extension): a KAOS parent can delegate here.
  app.get("/.well-known/agent", cardRoute);
  return app;
}
