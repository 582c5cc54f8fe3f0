/**
 * Time limits on one model call: a first-byte limit (connect, headers and the first chunk of the
 * answer) and an idle limit (the longest silence between chunks after that). When one expires the
 * call's own signal is aborted with a `timeout` error, which ends the request on every adapter
 * (node:http and both SDKs honour the signal); the retry policy then retries it like any timeout.
 */
import { AgentLoopError } from "../errors.js";
import { keepShape } from "../shapes.js";

/** The limits of one call; 0 (or a negative number) turns one off. */
export interface CallLimits {
  /** Milliseconds until the first chunk of the answer (default 60 s). */
  firstByteTimeoutMs?: number;
  /** Milliseconds of silence allowed between chunks once the answer has started (default 30 s). */
  idleTimeoutMs?: number;
}

export const defaultFirstByteTimeoutMs = 60_000;
export const defaultIdleTimeoutMs = 30_000;

/** The limits in force: the request's own, else the adapter's, else the defaults. */
export function callLimits(request: CallLimits | undefined, adapter: CallLimits | undefined): { firstByteMs: number; idleMs: number } {
  return {
    firstByteMs: request?.firstByteTimeoutMs ?? adapter?.firstByteTimeoutMs ?? defaultFirstByteTimeoutMs,
    idleMs: request?.idleTimeoutMs ?? adapter?.idleTimeoutMs ?? defaultIdleTimeoutMs,
  };
}

/**
 * Watches one call. `alive()` marks activity (a chunk of the body, an SDK event); the first one
 * ends the first-byte phase. Idle time is checked lazily: one timer per idle period, re-armed for
 * the time left, so a fast stream costs one clock read per chunk.
 */
export class CallWatchdog {
  /** The timeout error once a limit expired. */
  expired?: AgentLoopError;
  private started = false;
  /** When the call was last alive (`performance.now()`); NaN, a fraction, until the idle phase starts (see src/shapes.ts). */
  private last = Number.NaN;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly provider: string,
    private readonly firstByteMs: number,
    private readonly idleMs: number,
    private readonly onExpire: (error: AgentLoopError) => void,
  ) {
    if (firstByteMs > 0) this.timer = setTimeout(() => this.expire(this.firstByteError()), firstByteMs);
    else this.startIdle();
  }

  /** Marks activity on the call. */
  alive(): void {
    if (this.expired) return;
    if (!this.started) this.startIdle();
    else this.last = performance.now();
  }

  /** Stops the timers (the call ended). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private startIdle(): void {
    this.started = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.idleMs <= 0) return;
    this.last = performance.now();
    this.timer = setTimeout(this.checkIdle, this.idleMs);
  }

  private readonly checkIdle = (): void => {
    const left = this.idleMs - (performance.now() - this.last);
    // A timer may fire a little early: 1 ms of slack counts as expired.
    if (left > 1) this.timer = setTimeout(this.checkIdle, left);
    else this.expire(new AgentLoopError("timeout", `${this.provider}: the response stream stalled: no data for ${this.idleMs} ms (idleTimeoutMs)`, { provider: this.provider }));
  };

  private firstByteError(): AgentLoopError {
    return new AgentLoopError("timeout", `${this.provider}: no response within ${this.firstByteMs} ms (firstByteTimeoutMs)`, { provider: this.provider });
  }

  private expire(error: AgentLoopError): void {
    this.timer = undefined;
    if (this.expired) return;
    this.expired = error;
    this.onExpire(error);
  }
}
keepShape(new CallWatchdog("", 0, 0, () => undefined)); // see src/shapes.ts
