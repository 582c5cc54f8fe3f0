/**
 * The one validator for every id that names a session: `X-Session-ID`, the body's `session_id`,
 * A2A's `contextId` and the `session_id` query parameter. A session id becomes a key in the
 * store and a path segment in `/memory/events?session_id=`, so only a safe alphabet is accepted.
 */
import { badRequest } from "./http-errors.js";

/** A session id a client may choose: 1-200 letters, digits and `_.:@-`, starting with a letter or digit (the server and the CLI agree). */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,199}$/;

/** The message of a rejected session id, naming where it came from. */
export const sessionIdProblem = (param: string) =>
  `${param} must be 1-200 characters of letters, digits, '_', '.', ':', '@' or '-', starting with a letter or digit`;

/** Checks a session id from a client; a 400 `invalid_session_id` naming `param` when it is not one. */
export function validSessionId(value: unknown, param: string): string {
  if (typeof value !== "string" || !SESSION_ID_PATTERN.test(value)) throw badRequest(sessionIdProblem(param), param, "invalid_session_id");
  return value;
}
