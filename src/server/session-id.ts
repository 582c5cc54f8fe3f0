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

/**
 * An optional session id from a query parameter (all its values, `c.req.queries(param)`): undefined
 * when absent or empty (as KAOS reads `?session_id=`); a 400 `invalid_session_id` when it is given
 * more than once (which one would be meant?) or is not a valid session id.
 */
export function optionalSessionIdParam(values: readonly string[] | undefined, param: string): string | undefined {
  if (values === undefined || values.length === 0) return undefined;
  if (values.length > 1) throw badRequest(`${param} must be given once, got ${values.length} values`, param, "invalid_session_id");
  return values[0] === "" ? undefined : validSessionId(values[0], param);
}
