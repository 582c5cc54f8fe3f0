import type { ContentfulStatusCode } from "hono/utils/http-status";
import { AgentLoopError } from "../errors.js";

/** The OpenAI error body every failed request gets: `{ error: { message, type, param, code } }`. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** An error with the HTTP status and OpenAI-style body it should be answered with. */
export class HttpError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
    readonly type: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = "HttpError";
  }

  body(): OpenAIErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export const badRequest = (message: string, param: string | null = null, code = "invalid_request") =>
  new HttpError(400, message, "invalid_request_error", code, param);

export const notFound = (message: string, code = "not_found", param: string | null = null) => new HttpError(404, message, "not_found_error", code, param);

/** Maps a run's error to the status a client should see: upstream failures are 502/504, not 500. */
export function httpErrorOfRun(error: unknown): HttpError {
  const failure = AgentLoopError.from(error);
  switch (failure.kind) {
    case "timeout":
      return new HttpError(504, failure.message, "server_error", "timeout");
    case "aborted":
      return new HttpError(503, failure.message, "server_error", "aborted");
    case "rate_limit":
      return new HttpError(429, failure.message, "rate_limit_error", "rate_limit");
    case "context_length":
      return new HttpError(400, failure.message, "invalid_request_error", "context_length_exceeded");
    case "configuration":
      return new HttpError(503, failure.message, "server_error", "configuration");
    default:
      return new HttpError(502, failure.message, "server_error", failure.kind);
  }
}
