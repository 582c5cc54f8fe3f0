/** The agent cards: A2A's at `/.well-known/agent.json` and `/.well-known/agent-card.json`, KAOS's at `/.well-known/agent`. */
import { type Context, Hono } from "hono";
import { A2A_VERSION_HEADER, agentCardForVersion } from "../agent-card.js";
import type { ServerContext } from "../context.js";

export function agentCardRoutes(server: ServerContext): Hono {
  const app = new Hono();
  // The card lists the tools, so it waits for the MCP servers (bounded by the readiness timeout).
  const cardRoute = async (c: Context) => {
    await server.connecting;
    c.header("vary", A2A_VERSION_HEADER);
    return c.json(agentCardForVersion(server.card(), c.req.header(A2A_VERSION_HEADER)));
  };
  app.get("/.well-known/agent.json", cardRoute);
  app.get("/.well-known/agent-card.json", cardRoute);
  // Where KAOS's RemoteAgent looks for a peer's card (no extension): KAOS's own card shape.
  app.get("/.well-known/agent", async (c) => {
    await server.connecting;
    return c.json(server.kaosCard());
  });
  return app;
}
