/**
 * Checks the A2A SDK's request handler does not make (as of @a2a-js/sdk 1.3): a negative
 * `historyLength` and a timestamp that is not RFC 3339 are rejected as invalid params instead of
 * being read leniently, and `ListTasks` reports the number of tasks it returned as its page size.
 */

/** The JSON-RPC "invalid params" code of both protocol versions. */
export const INVALID_PARAMS = -32602;

type Params = Record<string, unknown>;

const isObject = (value: unknown): value is Params => typeof value === "object" && value !== null && !Array.isArray(value);

/** RFC 3339 date-time (A2A's timestamps): `2026-01-31T12:00:00Z`, fractions and offsets allowed. */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** Whether a text is an RFC 3339 timestamp of a real moment (no February 30th, no hour 25). */
export function isRfc3339(value: string): boolean {
  const match = RFC3339.exec(value);
  if (!match) return false;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 60) return false;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > daysInMonth) return false;
  if (match[9] !== undefined && (Number(match[9]) > 23 || Number(match[10]) > 59)) return false;
  return true;
}

function historyLengthProblem(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) return `${field} must be a non-negative integer, got ${JSON.stringify(value)}`;
  return undefined;
}

/**
 * What is wrong with a request's params, or undefined. Methods of both versions are covered:
 * `GetTask` / `tasks/get` and `ListTasks` (`historyLength`), `SendMessage` / `message/send` and
 * the streaming variants (`configuration.historyLength`), `ListTasks` timestamps.
 */
export function a2aParamsProblem(method: string, params: unknown): string | undefined {
  if (!isObject(params)) return undefined;
  switch (method) {
    case "GetTask":
    case "tasks/get":
      return historyLengthProblem(params.historyLength ?? params.history_length, "historyLength");
    case "ListTasks": {
      const history = historyLengthProblem(params.historyLength ?? params.history_length, "historyLength");
      if (history) return history;
      for (const field of ["statusTimestampAfter", "status_timestamp_after"]) {
        const value = params[field];
        if (value === undefined || value === null || value === "") continue;
        if (typeof value !== "string" || !isRfc3339(value)) return `statusTimestampAfter must be an RFC 3339 timestamp such as 2026-01-31T12:00:00Z, got ${JSON.stringify(value)}`;
      }
      return undefined;
    }
    case "SendMessage":
    case "SendStreamingMessage":
    case "message/send":
    case "message/stream": {
      const configuration = params.configuration;
      if (!isObject(configuration)) return undefined;
      return historyLengthProblem(configuration.historyLength ?? configuration.history_length, "configuration.historyLength");
    }
    default:
      return undefined;
  }
}

/** The JSON-RPC error body of an invalid-params answer (1.0 errors carry an ErrorInfo detail). */
export function invalidParamsError(message: string, legacy: boolean): Record<string, unknown> {
  if (legacy) return { code: INVALID_PARAMS, message };
  return {
    code: INVALID_PARAMS,
    message,
    data: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "INVALID_PARAMS", domain: "a2a-protocol.org" }],
  };
}

/** `ListTasks` results say how many tasks they hold (the SDK's store echoes the requested page size). */
export function withReturnedPageSize(method: string, outcome: unknown): unknown {
  if (method !== "ListTasks" || !isObject(outcome) || !isObject(outcome.result)) return outcome;
  const result = outcome.result;
  if (!Array.isArray(result.tasks)) return outcome;
  return { ...outcome, result: { ...result, pageSize: result.tasks.length } };
}

/** The task id a subscription asks for (`SubscribeToTask` in 1.0, `tasks/resubscribe` in 0.3), if any. */
export function subscribedTaskId(method: string, params: unknown): string | undefined {
  if (method !== "SubscribeToTask" && method !== "tasks/resubscribe") return undefined;
  return isObject(params) && typeof params.id === "string" && params.id !== "" ? params.id : undefined;
}

/** Whether a Content-Type header names JSON (`application/json`, `application/*+json`); a missing one is let through. */
export function isJsonContentType(header: string | null | undefined): boolean {
  if (header === null || header === undefined || header.trim() === "") return true;
  const type = header.split(";")[0].trim().toLowerCase();
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}
