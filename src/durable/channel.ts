/** A one-consumer queue: pushed values come out in order through `for await`. */
export class Channel<T> implements AsyncIterable<T> {
  private readonly values: T[] = [];
  private done = false;
  private error: unknown;
  private failed = false;
  private wake?: () => void;

  push(value: T): void {
    this.values.push(value);
    this.wake?.();
  }
  end(): void {
    this.done = true;
    this.wake?.();
  }
  fail(error: unknown): void {
    this.failed = true;
    this.error = error;
    this.end();
  }
  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      if (this.values.length) {
        yield this.values.shift()!;
        continue;
      }
      if (this.failed) throw this.error;
      if (this.done) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
  }
}
