/**
 * Per-request timeouts on one timer per timeout length. Every model call of an adapter has the same
 * `timeoutMs` (10 minutes by default), so their deadlines come in the order the calls start: a
 * queue per length, and a timer armed for its oldest deadline. A call that ends marks its entry
 * done; the timer is not touched (a `setTimeout` and a `clearTimeout` per call cost a model call
 * more than everything else in its timeout: bench scenario 1). When the timer fires it expires
 * what is due and is armed again for the next live deadline, if any. The timer never keeps the
 * process alive (the request's socket does while a call is in flight).
 */

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

class DeadlineQueue {
  private entries: Entry[] = [];
  private head = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Expiring entries: an entry added meanwhile waits for the timer armed at the end. */
  private firing = false;
  /** When the armed timer should fire (`performance.now()` time). */
  private due = 0;

  constructor(private readonly ms: number) {}

  add(onExpire: () => void): Entry {
    const now = performance.now();
    const entry = new Entry(now + this.ms, onExpire, this);
    this.entries.push(entry);
    // A timer long overdue never fired (one armed under a test's fake clock): armed anew.
    if (!this.firing && (this.timer === undefined || now > this.due + overdueMs)) this.arm(this.ms, now);
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

  private arm(ms: number, now: number): void {
    clearTimeout(this.timer);
    this.due = now + ms;
    this.timer = setTimeout(this.fire, ms);
    this.timer.unref?.();
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.firing = true;
    try {
      const now = performance.now();
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
      const next = this.entries[this.head];
      if (next !== undefined) {
        const now = performance.now();
        this.arm(Math.max(0, next.at - now), now);
      }
    }
  };
}

/** How late a timer may be before it counts as never firing. */
const overdueMs = 1000;

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
