/**
 * Serializes work per key: a task for a session starts only after the previous task for the
 * same session settled, so two requests never interleave their events in one session's log.
 * Different sessions run concurrently.
 */
export class SessionQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const current = previous.then(task, task);
    // The tail never rejects, so a failed task does not poison the queue.
    const tail = current.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return current;
  }

  /** Number of sessions with work queued or running. */
  get size(): number {
    return this.tails.size;
  }
}
