/** The checks before the routes: draining (503), bearer auth (401) and the body limit (413). */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { readNodeBodyBytes, requestTooLarge, sendNodeJson } from "../chat-stream.js";
import { type ServerContext, errorResponse, shuttingDownError } from "../context.js";
import { HttpError } from "../http-errors.js";

export const WWW_AUTHENTICATE = 'Bearer realm="agentloop"';

function constantTimeEqual(a: string, b: string): boolean {
  // Hashing first gives equal lengths, so timingSafeEqual never leaks the key's length.
  const left = createHash("sha256").update(a).digest();
  const right = createHash("sha256").update(b).digest();
  return timingSafeEqual(left, right);
}

/** Checks the bearer token when `AGENT_API_KEY` is set: the 401 to answer, or undefined. */
export function authorizationError(apiKey: string | undefined, header: string | undefined): HttpError | undefined {
  if (apiKey === undefined) return undefined;
  const match = /^Bearer\s+(.+)$/i.exec((header ?? "").trim());
  if (match && constantTimeEqual(match[1], apiKey)) return undefined;
  return new HttpError(401, "a valid bearer token is required (Authorization: Bearer <AGENT_API_KEY>)", "authentication_error", "invalid_api_key");
}

/** While the server drains, everything but `/health` gets 503 and `Connection: close`. */
export function drainingGuard(server: ServerContext): MiddlewareHandler {
  return async (c, next) => {
    if (server.draining && c.req.path !== "/health") {
      c.header("connection", "close");
      return errorResponse(c, shuttingDownError());
    }
    await next();
  };
}

/** Bearer auth (when `AGENT_API_KEY` is set). */
export function authGuard(server: ServerContext): MiddlewareHandler {
  return async (c, next) => {
    const denied = authorizationError(server.settings.apiKey, c.req.header("authorization"));
    if (denied) {
      c.header("www-authenticate", WWW_AUTHENTICATE);
      return errorResponse(c, denied);
    }
    return next();
  };
}

/** 413 for a body over the limit. */
export function bodyLimitGuard(server: ServerContext): MiddlewareHandler {
  return bodyLimit({ maxSize: server.bodyLimitBytes, onError: (c) => errorResponse(c, requestTooLarge(server.bodyLimitBytes)) });
}

/**
 * The same checks on node:http, before a body is read (the chat hot path, and the Hono routes'
 * requests with a body, which node reads first: `readBodyFirst`): answers 503, 401, or 413
 * for a declared length over the limit, and returns true; false lets the request go on. An answer
 * made before the body arrived ends once the body is read (`sendNodeJson`).
 */
export function answeredBeforeBody(server: ServerContext, incoming: IncomingMessage, outgoing: ServerResponse): boolean {
  if (server.draining) {
    sendNodeJson(outgoing, 503, shuttingDownError().body(), { connection: "close" });
    return true;
  }
  const denied = authorizationError(server.settings.apiKey, incoming.headers.authorization);
  if (denied) {
    sendNodeJson(outgoing, 401, denied.body(), { "www-authenticate": WWW_AUTHENTICATE });
    return true;
  }
  const declared = incoming.headers["content-length"];
  if (declared !== undefined && Number.parseInt(declared, 10) > server.bodyLimitBytes) {
    sendNodeJson(outgoing, 413, requestTooLarge(server.bodyLimitBytes).body());
    return true;
  }
  return false;
}

/**
 * A request with a body to the Hono routes, on node:http: node answers the checks that come before
 * a body (`answeredBeforeBody`) and reads the body itself, then Hono gets it whole (@hono/node-server's
 * `rawBody`). So an answer made before the body is in (a 413 on a chunked body too) ends only once
 * the rest is read, as on the chat route: ended earlier, node closes a `Connection: close` client's
 * connection on unread data and resets it (the client, still sending, gets EPIPE instead of the
 * answer). True when Hono should answer.
 */
export async function readBodyFirst(server: ServerContext, incoming: IncomingMessage, outgoing: ServerResponse): Promise<boolean> {
  if (answeredBeforeBody(server, incoming, outgoing)) return false;
  try {
    (incoming as IncomingMessage & { rawBody?: Buffer }).rawBody = await readNodeBodyBytes(incoming, server.bodyLimitBytes);
    return true;
  } catch (error) {
    const failure = server.httpErrorOfRequest(error, incoming.method ?? "POST", incoming.url ?? "/");
    sendNodeJson(outgoing, failure.status, failure.body());
    return false;
  }
}
