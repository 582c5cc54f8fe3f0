/**
 * Serializes work per key: a task for a session starts only after the previous task for the
 * same session settled, so two requests never interleave their events in one session's log.
 * Different sessions run concurrently.
 */
export class SessionQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key);
    // Nothing queued for the key (a new session, the common case): the task starts at once.
    const current = previous ? previous.then(task, task) : startNow(task);
    // The tail never rejects, so a failed task does not poison the queue; the last one out clears the key.
    const settled = () => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    const tail: Promise<void> = current.then(settled, settled);
    this.tails.set(key, tail);
    return current;
  }

  /** Number of sessions with work queued or running. */
  get size(): number {
    return this.tails.size;
  }
}

/** Calls `task` now; a synchronous throw becomes a rejected promise, as it would inside `then`. */
function startNow<T>(task: () => Promise<T>): Promise<T> {
  try {
    return task();
  } catch (error) {
    return Promise.reject(error);
  }
}
