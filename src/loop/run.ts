import { onAbort } from "../abort.js";
import { AgentLoopError } from "../errors.js";
import { keepShape } from "../shapes.js";
import { ApprovalBroker } from "./approvals.js";
import type { LoopEvent, RunResult, RunState } from "./events.js";
import type { RunInfo, RunObserver } from "./types.js";

/** How long observers (memory writes) may still take once a run was aborted. */
const OBSERVER_GRACE_AFTER_ABORT_MS = 250;

/** What the loop uses to drive a run; the public `Run` only reads. */
export interface RunControl {
  readonly id: string;
  readonly signal: AbortSignal;
  emit(event: LoopEvent): void;
  setState(state: RunState): void;
  /** Steering messages queued since the last call. */
  takeSteering(): string[];
  /** The next queued follow-up input, if any. */
  takeFollowUp(): string | undefined;
  /** Observers attached to this run (set once the run info is known). */
  observe(observers: RunObserver[], info: RunInfo): void;
  /** Resolves when every observer has handled every event emitted so far. */
  flushObservers(): Promise<void>;
  /**
   * Runs `listener` once when the run aborts (at once if it has), right after the signal's own
   * listeners, without an EventTarget registration: cheap enough for every model and tool call.
   * Returns the function that removes it. Listeners must not throw.
   */
  onAbort(listener: () => void): () => void;
  /** The approvals this run (and its sub-agents) wait for. */
  readonly approvals: ApprovalBroker;
}

/**
 * One run of an agent: an async iterable of its events and a promise of its result, from the same
 * object. Every iterator replays the events from the start, so late consumers miss nothing.
 * `await run` never rejects: failures are a result with state FAILED.
 */
export class Run<Output = unknown> implements AsyncIterable<LoopEvent>, PromiseLike<RunResult<Output>> {
  readonly id: string;
  readonly result: Promise<RunResult<Output>>;
  private currentState: RunState = "CREATED";
  private readonly log: LoopEvent[] = [];
  private finished = false;
  private wake: Array<() => void> = [];
  private readonly controller = new AbortController();
  private readonly steering: string[] = [];
  private readonly followUps: string[] = [];
  private observers: ObserverEntry[] = [];
  /** Events waiting to be handed to the observers, in order (more than one only when an observer emits). */
  private readonly toObserve: LoopEvent[] = [];
  private observing = false;
  /** The caller's synchronous listener (`RunOptions.onEvent`). */
  private readonly onEvent?: (event: LoopEvent) => void;
  /** The run-end event, once emitted: nothing is logged after it. */
  private ending?: Extract<LoopEvent, { type: "run-end" }>;
  private runInfo?: RunInfo;
  /** The loop's own abort listeners (`RunControl.onAbort`). */
  private abortListeners: Array<() => void> = [];
  private readonly approvals: ApprovalBroker;

  constructor(
    id: string,
    execute: (control: RunControl) => Promise<RunResult>,
    fail: (error: unknown) => RunResult,
    signal?: AbortSignal,
    onEvent?: (event: LoopEvent) => void,
    approvals?: ApprovalBroker,
  ) {
    this.id = id;
    this.approvals = approvals ?? new ApprovalBroker();
    this.onEvent = onEvent;
    // Removed when the run ends: one caller signal may serve many runs.
    const disposeSignal = signal ? onAbort(signal, () => this.abortRun(signal.reason)) : undefined;
    this.result = this.start(execute, fail, disposeSignal) as Promise<RunResult<Output>>;
  }

  /** Runs the loop, started on the next microtask so callers can attach iterators first; never rejects. */
  private async start(execute: (control: RunControl) => Promise<RunResult>, fail: (error: unknown) => RunResult, disposeSignal?: () => void): Promise<RunResult> {
    try {
      await undefined;
      return await execute(this.control());
    } catch (error) {
      // The loop reported its end already (a wrapper failed after it): that result stands.
      if (this.ending) return this.ending.result;
      // Last resort (the loop catches its own errors): still end the event stream with run-end.
      const result = fail(error);
      this.currentState = result.state;
      this.log.push({ type: "error", runId: this.id, error: result.error!, fatal: true });
      this.log.push({ type: "run-end", runId: this.id, state: result.state, reason: result.reason, result });
      return result;
    } finally {
      disposeSignal?.();
      this.finished = true;
      this.notify();
    }
  }

  get state(): RunState {
    return this.currentState;
  }

  /** Events emitted so far (a copy). */
  get events(): LoopEvent[] {
    return [...this.log];
  }

  /** Injects a user message after the current wave (or before the answer is accepted). */
  steer(message: string): void {
    this.steering.push(message);
  }

  /** Queues a new input that starts when the current one completes. */
  followUp(message: string): void {
    this.followUps.push(message);
  }

  /** Approves a call waiting in an `approval-request` (a sub-agent's too). Throws when no such call waits. */
  approve(toolCallId: string): void {
    this.approvals.decide(toolCallId, { approve: true });
  }

  /** Rejects a waiting call: it gets the result `Rejected: <reason>` and the run goes on. Throws when no such call waits. */
  reject(toolCallId: string, reason = "rejected by the user"): void {
    this.approvals.decide(toolCallId, { approve: false, reason });
  }

  /** The ids of the calls waiting for `approve` / `reject` now. */
  get pendingApprovals(): string[] {
    return this.approvals.pending;
  }

  /** Aborts the run: the model stream and running tools receive the signal; the run ends ABORTED. */
  abort(reason: unknown = "aborted by the caller"): void {
    this.abortRun(reason);
  }

  private abortRun(reason: unknown): void {
    if (this.controller.signal.aborted) return;
    this.controller.abort(reason);
    const listeners = this.abortListeners;
    this.abortListeners = [];
    for (const listener of listeners) listener();
  }

  // biome-ignore lint/suspicious/noThenProperty: a Run is deliberately awaitable
  then<A = RunResult<Output>, B = never>(
    onFulfilled?: ((value: RunResult<Output>) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return this.result.then(onFulfilled, onRejected);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<LoopEvent> {
    let cursor = 0;
    for (;;) {
      while (cursor < this.log.length) yield this.log[cursor++];
      if (this.finished) return;
      await new Promise<void>((resolve) => this.wake.push(resolve));
    }
  }

  /** The text deltas of the run as they arrive. */
  async *textStream(): AsyncGenerator<string> {
    // Reads the log itself rather than the event iterator: one generator, and no step for the
    // events that are not answer text.
    let cursor = 0;
    for (;;) {
      while (cursor < this.log.length) {
        const event = this.log[cursor++];
        if (event.type === "text-delta") yield event.delta;
      }
      if (this.finished) return;
      await new Promise<void>((resolve) => this.wake.push(resolve));
    }
  }

  /**
   * Hands `event` to every observer, in emit order for each. An observer with nothing in flight is
   * called at once; only one that returned a promise makes the next events wait for it (no promise
   * and no microtask per event for observers that ignore most events, as memory does). An event
   * emitted while observers handle another (an observer that aborts the run) waits its turn.
   */
  private observe(event: LoopEvent): void {
    if (this.observing) {
      this.toObserve.push(event);
      return;
    }
    this.observing = true;
    try {
      for (const entry of this.observers) this.deliver(entry, event);
      for (let next = this.toObserve.shift(); next !== undefined; next = this.toObserve.shift()) {
        for (const entry of this.observers) this.deliver(entry, next);
      }
    } finally {
      this.observing = false;
    }
  }

  private deliver(entry: ObserverEntry, event: LoopEvent): void {
    if (entry.pending === 0 || entry.observer.ordersItself === true) {
      const settled = this.callObserver(entry.observer, event);
      if (!settled) return;
      const done = settled.then(() => void entry.pending--);
      // The chain settles once every event handed over so far was handled.
      entry.chain = entry.pending++ === 0 ? done : Promise.all([entry.chain, done]).then(() => undefined);
      return;
    }
    entry.pending++;
    entry.chain = entry.chain.then(() => this.callObserver(entry.observer, event)).then(() => void entry.pending--);
  }

  /** Calls one observer; returns a promise (that never rejects) only when it answered with one. */
  private callObserver(observer: RunObserver, event: LoopEvent): Promise<void> | undefined {
    try {
      const result = observer.onEvent(event, this.runInfo!);
      if (result && typeof (result as PromiseLike<void>).then === "function") {
        return Promise.resolve(result).then(undefined, (error: unknown) => this.observerFailed(event, error));
      }
    } catch (error) {
      this.observerFailed(event, error);
    }
    return undefined;
  }

  /** An observer failure is reported on the event stream but never stops the run. */
  private observerFailed(event: LoopEvent, error: unknown): void {
    if (event.type === "error" || this.ending) return;
    const message = error instanceof Error ? error.message : String(error);
    const report: LoopEvent = { type: "error", runId: this.id, error: observerError(message, error), fatal: false };
    this.log.push(report);
    this.notify();
    // The caller's listener sees it too (its own failure here is not reported again).
    try {
      this.onEvent?.(report);
    } catch {}
  }

  private notify(): void {
    // Called for every event: nothing to allocate when no iterator waits.
    if (this.wake.length === 0) return;
    const waiting = this.wake;
    this.wake = [];
    for (const resolve of waiting) resolve();
  }

  private control(): RunControl {
    return {
      id: this.id,
      signal: this.controller.signal,
      approvals: this.approvals,
      emit: (event) => {
        if (this.ending) return; // a straggler (a tool that outlived the run) cannot reopen it
        if (event.type === "run-end") this.ending = event;
        this.log.push(event);
        this.notify();
        if (this.onEvent) {
          try {
            this.onEvent(event);
          } catch (error) {
            // Like an observer's: reported on the stream, never a crash of the run.
            if (event.type !== "error" && !this.ending) {
              const message = error instanceof Error ? error.message : String(error);
              this.log.push({ type: "error", runId: this.id, error: new AgentLoopError("unknown", `onEvent failed: ${message}`, { cause: error }), fatal: false });
              this.notify();
            }
          }
        }
        if (this.observers.length > 0) this.observe(event);
      },
      setState: (state) => {
        this.currentState = state;
      },
      onAbort: (listener) => {
        if (this.controller.signal.aborted) {
          listener();
          return () => undefined;
        }
        this.abortListeners.push(listener);
        return () => {
          const listeners = this.abortListeners;
          const index = listeners.lastIndexOf(listener);
          // Usually the last one (one model call or one wave at a time): pop keeps the array's storage.
          if (index === listeners.length - 1) listeners.pop();
          else if (index !== -1) listeners.splice(index, 1);
        };
      },
      takeSteering: () => this.steering.splice(0),
      takeFollowUp: () => this.followUps.shift(),
      observe: (observers, info) => {
        this.runInfo = info;
        this.observers = observers.map((observer) => ({ observer, chain: Promise.resolve(), pending: 0 }));
      },
      flushObservers: async () => {
        // Nothing in flight (no observer, or none answered with a promise still pending): done.
        if (this.observers.every((entry) => entry.pending === 0)) return;
        const all = Promise.all(this.observers.map((entry) => entry.chain));
        // After an abort, observers get a short grace period, so a stuck one cannot hold the run.
        let dispose = () => {};
        const gaveUp = new Promise<void>((resolve) => {
          dispose = onAbort(this.controller.signal, () => {
            const timer = setTimeout(resolve, OBSERVER_GRACE_AFTER_ABORT_MS);
            timer.unref?.();
          });
        });
        await Promise.race([all, gaveUp]);
        dispose();
      },
    };
  }
}
// A run that never ends (its loop never settles), with its broker and controller (see src/shapes.ts).
keepShape(new Run("", () => new Promise<RunResult>(() => undefined), () => {
  throw new Error("never called");
}));


interface ObserverEntry {
  observer: RunObserver;
  /** Settles when every event handed to this observer so far was handled. */
  chain: Promise<void>;
  /** Events handed over whose promise has not settled yet. */
  pending: number;
}

function observerError(message: string, cause: unknown): AgentLoopError {
  return new AgentLoopError("unknown", `observer failed: ${message}`, { cause });
}
