/**
 * Per-request timeouts on one timer per timeout length. Every model call of an adapter has the same
 * `timeoutMs` (10 minutes by default), so their deadlines come in the order the calls start: a
 * queue per length, and a timer armed for its oldest deadline. A call that ends marks its entry
 * done; the timer is not touched (a `setTimeout` and a `clearTimeout` per call cost more than the
 * rest of the timeout's work: bench scenario 1). When the timer fires it expires what is due and is
 * armed again for the next live deadline, if any. The timer never keeps the process alive (the
 * request's socket does while a call is in flight).
 */

import { keepShape } from "../shapes.js";

/** One call's deadline; `cancel` it when the call ends. */
export interface Deadline {
  cancel(): void;
}

class Entry implements Deadline {
  done = false;
  constructor(
    readonly at: number,
    readonly onExpire: () => void,
    private readonly queue: DeadlineQueue,
  ) {}

  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.queue.dropDone();
  }
}
keepShape(new Entry(0.5, () => undefined, undefined as unknown as DeadlineQueue)); // see src/shapes.ts (a deadline is a fraction)

class DeadlineQueue {
  private entries: Entry[] = [];
  private head = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The `setTimeout` the timer was armed with, and its `clearTimeout`. */
  private armedWith: typeof setTimeout | undefined;
  private clearWith: typeof clearTimeout = clearTimeout;
  /** The deadline the timer was armed for: due when it fires, whatever `performance.now()` says (a fake clock). */
  private armedFor = 0;
  /** Expiring entries: an entry added meanwhile waits for the timer armed at the end. */
  private firing = false;

  constructor(private readonly ms: number) {}

  add(onExpire: () => void): Entry {
    const entry = new Entry(performance.now() + this.ms, onExpire, this);
    this.entries.push(entry);
    // A timer armed under a test's fake clock (or before one) is armed anew on the clock now in use.
    if (!this.firing && (this.timer === undefined || this.armedWith !== globalThis.setTimeout)) this.armForHead();
    return entry;
  }

  /** Drops the done entries at the head (the usual case: calls end in the order they started). */
  dropDone(): void {
    const { entries } = this;
    while (this.head < entries.length && entries[this.head]!.done) entries[this.head++] = undefined as unknown as Entry;
    if (this.head === entries.length) {
      entries.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > entries.length) {
      this.entries = entries.slice(this.head);
      this.head = 0;
    }
  }

  /** Arms the timer for the oldest live deadline (none: no timer). */
  private armForHead(): void {
    if (this.timer !== undefined) this.clearWith(this.timer);
    this.timer = undefined;
    const next = this.entries[this.head];
    if (next === undefined) return;
    this.armedFor = next.at;
    this.armedWith = globalThis.setTimeout;
    this.clearWith = globalThis.clearTimeout;
    this.timer = this.armedWith(this.fire, Math.max(0, next.at - performance.now()));
    this.timer.unref?.();
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.firing = true;
    try {
      const now = Math.max(performance.now(), this.armedFor);
      const { entries } = this;
      while (this.head < entries.length) {
        const entry = entries[this.head]!;
        // A timer may fire a little early: 1 ms of slack counts as due.
        if (!entry.done && entry.at > now + 1) break;
        entries[this.head++] = undefined as unknown as Entry;
        if (!entry.done) {
          entry.done = true;
          entry.onExpire();
        }
      }
    } finally {
      this.firing = false;
      this.dropDone();
      this.armForHead();
    }
  };
}

const queues = new Map<number, DeadlineQueue>();

/** Calls `onExpire` once `ms` milliseconds from now, unless cancelled first. */
export function deadline(ms: number, onExpire: () => void): Deadline {
  let queue = queues.get(ms);
  if (queue === undefined) {
    queue = new DeadlineQueue(ms);
    queues.set(ms, queue);
  }
  return queue.add(onExpire);
}
