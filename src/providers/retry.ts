/**
 * The one retry policy for model calls: exponential backoff with jitter on rate limits, server
 * errors, network failures and timeouts, honouring the server's Retry-After. A call is retried
 * only while nothing of the answer has reached the caller: once its first event (after
 * `response-start`) is delivered, a failure ends the stream with its error event instead.
 */
import { AgentLoopError, abortError } from "../errors.js";
import type { Model, ModelEvent, ModelRequest } from "../model/model.js";

export interface RetryOptions {
  /** Retries after the first attempt (default 2; 0 disables retrying). */
  maxRetries?: number;
  /** Delay before the first retry (default 500 ms); doubles on each retry. */
  initialDelayMs?: number;
  /** Longest backoff delay (default 8,000 ms). */
  maxDelayMs?: number;
  /** A Retry-After longer than this is not waited for: the error is returned (default 60,000 ms). */
  maxRetryAfterMs?: number;
  /** Called before each wait, for logging. */
  onRetry?: (info: { attempt: number; delayMs: number; error: AgentLoopError }) => void;
}

export const defaultRetryOptions = { maxRetries: 2, initialDelayMs: 500, maxDelayMs: 8_000, maxRetryAfterMs: 60_000 } as const;

/** The wait before retry number `attempt` (1-based): the server's Retry-After when given, else backoff with jitter. */
export function retryDelayMs(attempt: number, error: AgentLoopError, options: RetryOptions = {}): number | undefined {
  const initial = options.initialDelayMs ?? defaultRetryOptions.initialDelayMs;
  const maxDelay = options.maxDelayMs ?? defaultRetryOptions.maxDelayMs;
  const maxRetryAfter = options.maxRetryAfterMs ?? defaultRetryOptions.maxRetryAfterMs;
  if (error.retryAfterMs !== undefined) return error.retryAfterMs <= maxRetryAfter ? error.retryAfterMs : undefined;
  const base = Math.min(maxDelay, initial * 2 ** (attempt - 1));
  // Jitter in [base/2, base] spreads clients that failed together.
  return Math.round(base / 2 + Math.random() * (base / 2));
}

function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** How many retries `options` allows after the first attempt. */
export function maxRetriesOf(options: RetryOptions): number {
  return Math.max(0, options.maxRetries ?? defaultRetryOptions.maxRetries);
}

/**
 * The error a new attempt is made for: `event`, arriving before anything of the answer was
 * delivered, is a retryable error, attempts are left and the request is not aborted.
 */
export function retryFor(event: ModelEvent, attemptNumber: number, maxRetries: number, signal?: AbortSignal): AgentLoopError | undefined {
  return event.type === "error" && event.error.retryable && attemptNumber < maxRetries && !signal?.aborted ? event.error : undefined;
}

/**
 * After attempt `attemptNumber` (0-based) failed with a retryable `error` before delivering
 * anything: waits the backoff (telling `onRetry`) and resolves with `undefined` to go on, or with
 * the error event that ends the stream (a Retry-After too long to wait, an abort during the wait).
 */
export async function backOff(attemptNumber: number, error: AgentLoopError, options: RetryOptions, signal?: AbortSignal): Promise<ModelEvent | undefined> {
  const delay = retryDelayMs(attemptNumber + 1, error, options);
  if (delay === undefined) return { type: "error", error };
  options.onRetry?.({ attempt: attemptNumber + 1, delayMs: delay, error });
  if (!(await sleep(delay, signal))) return { type: "error", error: abortError(signal) };
  return undefined;
}

/**
 * Runs `attempt` and forwards its events; while no event has been forwarded, a retryable error
 * event starts a new attempt after a backoff. Never throws. (The built-in adapters apply the same
 * policy in their one stream layer, `adapterStream` in shared.ts.)
 */
export async function* retryingStream(
  attempt: () => AsyncIterable<ModelEvent>,
  options: RetryOptions = {},
  signal?: AbortSignal,
): AsyncGenerator<ModelEvent> {
  const maxRetries = maxRetriesOf(options);
  for (let attemptNumber = 0; ; attemptNumber++) {
    let delivered = false;
    let retryError: AgentLoopError | undefined;
    // `response-start` carries no answer yet: it is held back until something else comes, so an
    // error right after it (Anthropic's overloaded_error after message_start) can still be retried.
    const held: ModelEvent[] = [];
    try {
      for await (const event of attempt()) {
        if (!delivered && event.type === "response-start") {
          held.push(event);
          continue;
        }
        if (!delivered) {
          retryError = retryFor(event, attemptNumber, maxRetries, signal);
          if (retryError) break;
          delivered = true;
          yield* held;
        }
        yield event;
      }
      if (!delivered && !retryError) yield* held;
    } catch (thrown) {
      // Adapters do not throw; this guards the contract for any wrapped model.
      const error = AgentLoopError.from(thrown);
      if (delivered || !error.retryable || attemptNumber >= maxRetries) {
        yield { type: "error", error };
        return;
      }
      retryError = error;
    }
    if (!retryError) return;
    const end = await backOff(attemptNumber, retryError, options, signal);
    if (end) {
      yield end;
      return;
    }
  }
}

/** Wraps any model with the retry policy (the built-in adapters already apply it). */
export function withRetry(model: Model, options: RetryOptions = {}): Model {
  const wrapped: Model = {
    provider: model.provider,
    modelId: model.modelId,
    stream: (request: ModelRequest) => retryingStream(() => model.stream(request), options, request.signal),
  };
  if (model.forRun) wrapped.forRun = () => withRetry(model.forRun!(), options);
  return wrapped;
}
