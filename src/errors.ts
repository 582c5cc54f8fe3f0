/**
 * One error taxonomy for the whole runtime. Errors carry a stable `kind`, a `retryable`
 * flag and survive two copies of the package (`AgentLoopError.isInstance`).
 */
export type ErrorKind =
  | "authentication"
  | "permission"
  | "not_found"
  | "invalid_request"
  | "context_length"
  | "rate_limit"
  | "server"
  | "network"
  | "timeout"
  | "aborted"
  | "refusal"
  | "configuration"
  | "tool"
  /** The final answer did not match `AgentConfig.output`, also when asked again. */
  | "output_validation"
  | "unknown";

const marker = Symbol.for("agentloop.error");
const retryableKinds: ReadonlySet<ErrorKind> = new Set(["rate_limit", "server", "network", "timeout"]);

export interface AgentLoopErrorOptions {
  status?: number;
  retryAfterMs?: number;
  provider?: string;
  retryable?: boolean;
  cause?: unknown;
}

export class AgentLoopError extends Error {
  readonly kind: ErrorKind;
  readonly retryable: boolean;
  readonly status?: number;
  readonly retryAfterMs?: number;
  readonly provider?: string;
  readonly [marker] = true;

  constructor(kind: ErrorKind, message: string, options: AgentLoopErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = "AgentLoopError";
    this.kind = kind;
    this.retryable = options.retryable ?? retryableKinds.has(kind);
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.provider = options.provider;
  }

  /** Errors travel in JSON events (`--json`, SSE, memory): keep what a reader needs. */
  toJSON(): Record<string, unknown> {
    return { name: this.name, kind: this.kind, message: this.message, retryable: this.retryable, status: this.status, provider: this.provider };
  }

  static isInstance(value: unknown): value is AgentLoopError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }

  /** Wraps anything thrown into an AgentLoopError, keeping one that already is. */
  static from(value: unknown, fallbackKind: ErrorKind = "unknown"): AgentLoopError {
    if (AgentLoopError.isInstance(value)) return value;
    if (value instanceof Error && value.name === "AbortError") {
      return new AgentLoopError("aborted", value.message || "aborted", { cause: value });
    }
    const message = value instanceof Error ? value.message : String(value);
    return new AgentLoopError(fallbackKind, message, { cause: value });
  }
}

export function abortError(signal?: AbortSignal): AgentLoopError {
  const reason = signal?.reason;
  const text = reason instanceof Error ? reason.message : typeof reason === "string" ? reason : "aborted";
  return new AgentLoopError("aborted", text, { cause: reason });
}

/** An error's message, with its cause's when it says more (`fetch failed: connect ECONNREFUSED 127.0.0.1:9`). */
export function messageWithCause(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  return cause instanceof Error && cause.message && !error.message.includes(cause.message) ? `${error.message}: ${cause.message}` : error.message;
}
