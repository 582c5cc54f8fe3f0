/** The A2A JSON-RPC endpoint, at `/a2a` and at `/` (where some clients post). */
import { type Context, Hono } from "hono";
import { onAbort } from "../../abort.js";
import type { createA2AHandler } from "../a2a-endpoint.js";
import { A2A_PATH } from "../agent-card.js";
import { RequestController } from "../chat-stream.js";
import { readJson, type ServerContext } from "../context.js";
import { HttpError } from "../http-errors.js";
import { SESSION_ID_PATTERN, sessionIdProblem } from "../session-id.js";

/** JSON-RPC "Invalid params" / "Invalid Request". */
const INVALID_PARAMS = -32602;
const INVALID_REQUEST = -32600;

/**
 * The session ids an A2A request names (`params.message.contextId`, `params.contextId`) that the
 * session-id validator refuses: the first one's JSON path, or undefined when all are valid.
 */
function badContextId(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const params = (body as { params?: unknown }).params;
  if (typeof params !== "object" || params === null) return undefined;
  const message = (params as { message?: unknown }).message;
  const candidates: Array<[string, unknown]> = [["params.contextId", (params as { contextId?: unknown }).contextId]];
  if (typeof message === "object" && message !== null) candidates.push(["params.message.contextId", (message as { contextId?: unknown }).contextId]);
  for (const [path, value] of candidates) {
    // Absent (or empty: the SDK then makes one) is fine; anything else must be a valid session id.
    if (value === undefined || value === null || value === "") continue;
    if (typeof value !== "string" || !SESSION_ID_PATTERN.test(value)) return path;
  }
  return undefined;
}

const requestId = (body: unknown) => {
  const id = typeof body === "object" && body !== null ? (body as { id?: unknown }).id : undefined;
  return typeof id === "string" || typeof id === "number" ? id : null;
};

/**
 * The A2A endpoint and its SDK (with its JWT library, ~4 MB of RSS) load with the first A2A
 * request, not with the server: a server only chatted with never pays for them.
 */
let endpoint: Promise<typeof import("../a2a-endpoint.js")> | undefined;
const loadEndpoint = () => (endpoint ??= import("../a2a-endpoint.js"));

export function a2aRoutes(server: ServerContext): Hono {
  const app = new Hono();
  const { runs } = server;
  let handler: Promise<ReturnType<typeof createA2AHandler>> | undefined;
  const a2a = async (request: Request, body: unknown) => {
    handler ??= loadEndpoint().then(({ createA2AHandler }) =>
      createA2AHandler(server.card, ({ input, sessionId, signal, onEvent, decisions }) => {
        const controller = new RequestController();
        const unlink = onAbort(signal, () => controller.disconnect(signal.reason));
        // Decisions on an input-required task go on as POST /v1/approvals does: the checkpoint's resume.
        const work = decisions ? runs.resume({ sessionId, decisions, controller, onEvent }) : runs.run({ input, sessionId, controller, onEvent });
        return runs.track(work.finally(unlink));
      }),
    );
    return (await handler)(request, body);
  };
  const a2aRoute = async (c: Context) => {
    const rejected = (await loadEndpoint()).a2aContentTypeRejection(c.req.raw);
    if (rejected) return rejected;
    let body: unknown;
    try {
      body = await readJson(c);
    } catch (error) {
      // Too deep to be walked safely: a 400 naming the limit, not a parse error.
      if (error instanceof HttpError && error.code === "json_too_deep") {
        return c.json({ jsonrpc: "2.0", id: null, error: { code: INVALID_REQUEST, message: `Invalid Request: ${error.message}`, data: error.body().error } }, 400);
      }
      return c.json({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error: the body is not valid JSON" } });
    }
    const badPath = badContextId(body);
    if (badPath) {
      const problem = { message: sessionIdProblem(badPath), type: "invalid_request_error", param: badPath, code: "invalid_session_id" };
      return c.json({ jsonrpc: "2.0", id: requestId(body), error: { code: INVALID_PARAMS, message: `Invalid params: ${problem.message}`, data: problem } }, 400);
    }
    return a2a(c.req.raw, body);
  };
  app.post(A2A_PATH, a2aRoute);
  // Clients that join the card's URL with "/" (httpx's base_url does) post here.
  app.post(`${A2A_PATH}/`, a2aRoute);
  app.post("/", a2aRoute);
  return app;
}
