/** The A2A JSON-RPC endpoint, at `/a2a` and at `/` (where some clients post). */
import { Hono, type Context } from "hono";
import { onAbort } from "../../abort.js";
import type { createA2AHandler } from "../a2a-endpoint.js";
import { A2A_PATH } from "../agent-card.js";
import { RequestController } from "../chat-stream.js";
import { type ServerContext, readJson } from "../context.js";

export function a2aRoutes(server: ServerContext): Hono {
  const app = new Hono();
  const { runs } = server;
  // The A2A SDK loads on the first A2A request, not when the server starts.
  let handler: Promise<ReturnType<typeof createA2AHandler>> | undefined;
  const a2a = async (request: Request, body: unknown) => {
    handler ??= import("../a2a-endpoint.js").then(({ createA2AHandler }) =>
      createA2AHandler(server.card, ({ input, sessionId, signal, onEvent }) => {
        const controller = new RequestController();
        const unlink = onAbort(signal, () => controller.disconnect(signal.reason));
        return runs.track(runs.run({ input, sessionId, controller, onEvent }).finally(unlink));
      }),
    );
    return (await handler)(request, body);
  };
  const a2aRoute = async (c: Context) => {
    let body: unknown;
    try {
      body = await readJson(c);
    } catch {
      return c.json({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error: the body is not valid JSON" } });
    }
    return a2a(c.req.raw, body);
  };
  app.post(A2A_PATH, a2aRoute);
  app.post("/", a2aRoute);
  return app;
}
