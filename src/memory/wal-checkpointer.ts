/**
 * WAL checkpoints for the embedded store, off the JavaScript thread.
 *
 * SQLite's automatic checkpoint runs inside the `COMMIT` that crosses 1,000 pages: it copies the
 * log into the database file and fsyncs both, on the thread that committed, so every stream a
 * server holds waited for it (tens of ms on a loaded machine). Here the writing connections stop
 * checkpointing in `COMMIT` (a high `wal_autocheckpoint` stays as a backstop) and the store's
 * writer thread (`sqlite/writer.ts`) checkpoints instead, between the groups it writes:
 *
 * - `PASSIVE`, a little after commits (one at a time): copies what it can without waiting for
 *   anyone; the writer keeps committing meanwhile. Once a checkpoint has copied the whole log,
 *   the writer's next transaction starts the log over from its beginning (SQLite does that).
 * - Under nonstop writes that moment never comes (every checkpoint ends behind the frames
 *   committed while it ran), so the log would grow without bound. When a passive checkpoint finds
 *   the log `truncateFrames` long, this process holds its writes (`hold`: the store writes nothing
 *   and reads nothing until it settles; the event loop runs on) and a `TRUNCATE` checkpoint copies
 *   the few frames left and empties the file. Other processes' writers wait for it like for any
 *   writer; it waits for them at most `waitMs` (then it gives up and tries again later).
 */
export interface WalCheckpointerOptions {
  /**
   * Runs a checkpoint on the writer thread (a `TRUNCATE` one waiting `waitMs` at most for other
   * processes): how many frames the log holds.
   */
  checkpoint(mode: "PASSIVE" | "TRUNCATE"): Promise<number>;
  /** A passive checkpoint starts this long after a commit (never two at once). */
  delayMs: number;
  /** A log at least this many frames long is truncated, with this process's writes held. */
  truncateFrames: number;
  /** A checkpoint failed (none runs any more): the writers should checkpoint in `COMMIT` again. */
  onFailure(error: unknown): void;
}

export class WalCheckpointer {
  /** Set while a truncating checkpoint runs: the store must not touch the file until it settles (it never rejects). */
  hold: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private dirty = false;
  private stopped = false;

  constructor(private readonly options: WalCheckpointerOptions) {}

  /** The writer committed: a checkpoint follows (soon, and never two at once). */
  noteCommit(): void {
    if (this.stopped) return;
    this.dirty = true;
    if (!this.timer && !this.running) this.timer = setTimeout(() => this.start(), this.options.delayMs).unref();
  }

  /** Waits for a running checkpoint. No checkpoint starts after this. */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private start(): void {
    this.timer = undefined;
    this.dirty = false;
    this.running = this.cycle().finally(() => {
      this.running = undefined;
      if (this.dirty && !this.stopped) this.timer = setTimeout(() => this.start(), this.options.delayMs).unref();
    });
  }

  private async cycle(): Promise<void> {
    try {
      const logFrames = await this.options.checkpoint("PASSIVE");
      if (logFrames < this.options.truncateFrames || this.stopped) return;
      let release!: () => void;
      this.hold = new Promise<void>((resolve) => {
        release = resolve;
      });
      try {
        // Busy (another process's writer or reader past waitMs): the next cycle tries again.
        await this.options.checkpoint("TRUNCATE");
      } finally {
        this.hold = undefined;
        release();
      }
    } catch (error) {
      this.stopped = true;
      this.options.onFailure(error);
    }
  }
}
