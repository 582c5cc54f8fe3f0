/**
 * WAL checkpoints for the embedded store, off the JavaScript thread.
 *
 * SQLite's automatic checkpoint runs inside the `COMMIT` that crosses 1,000 pages: it copies the
 * log into the database file and fsyncs both, on the thread that committed, so every stream a
 * server holds waited for it (tens of ms on a loaded machine). Here the writing connection stops
 * checkpointing in `COMMIT` (a high `wal_autocheckpoint` stays as a backstop) and a second
 * connection, through `libsql/promise`, whose statements run on the driver's own threads, checkpoints
 * instead:
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
import { createRequire } from "node:module";

/** The part of `libsql/promise` used here. */
interface AsyncStatement {
  iterate(): Promise<Iterator<{ log: number }>>;
}
interface AsyncDatabase {
  exec(sql: string): Promise<unknown>;
  prepare(sql: string): Promise<AsyncStatement>;
  close(): void;
}
type AsyncDatabaseConstructor = new (path: string, options?: { timeout?: number }) => AsyncDatabase;

export interface WalCheckpointerOptions {
  /** The database file. */
  file: string;
  synchronous: "NORMAL" | "FULL";
  /** A passive checkpoint starts this long after a commit (never two at once). */
  delayMs: number;
  /** A log at least this many frames long is truncated, with this process's writes held. */
  truncateFrames: number;
  /** How long a truncating checkpoint waits for other processes' writers and readers. */
  waitMs: number;
  /** The connection failed (it is closed): the writer should checkpoint in `COMMIT` again. */
  onFailure(error: unknown): void;
  /** Told each statement prepared (the store's close waits for them to be garbage collected: libsql closes a connection only then). */
  prepared?(statement: object): void;
}

export class WalCheckpointer {
  /** Set while a truncating checkpoint runs: the store must not touch the file until it settles (it never rejects). */
  hold: Promise<void> | undefined;
  private db: AsyncDatabase | undefined;
  private statements = new Map<string, Promise<AsyncStatement>>();
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

  /** Waits for a running checkpoint, then closes the connection. No checkpoint starts after this. */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    this.closeConnection();
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
      const logFrames = await this.checkpoint("PASSIVE");
      if (logFrames < this.options.truncateFrames || this.stopped) return;
      let release!: () => void;
      this.hold = new Promise<void>((resolve) => {
        release = resolve;
      });
      try {
        // Busy (another process's writer or reader past waitMs): the next cycle tries again.
        await this.checkpoint("TRUNCATE");
      } finally {
        this.hold = undefined;
        release();
      }
    } catch (error) {
      this.stopped = true;
      this.closeConnection();
      this.options.onFailure(error);
    }
  }

  /** Runs a checkpoint: how many frames the log holds (`busy`, when another process held a lock it needed, is not told apart). */
  private async checkpoint(mode: "PASSIVE" | "TRUNCATE"): Promise<number> {
    const statement = await this.statement(`PRAGMA wal_checkpoint(${mode})`);
    const row = (await statement.iterate()).next().value;
    if (!row) throw new Error(`PRAGMA wal_checkpoint(${mode}) answered no row`);
    return Number(row.log);
  }

  private statement(sql: string): Promise<AsyncStatement> {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.connection()
        .then((db) => db.prepare(sql))
        .then((prepared) => {
          this.options.prepared?.(prepared);
          return prepared;
        });
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private async connection(): Promise<AsyncDatabase> {
    if (!this.db) {
      const Driver = createRequire(import.meta.url)("libsql/promise") as AsyncDatabaseConstructor;
      const db = new Driver(this.options.file, { timeout: this.options.waitMs });
      this.db = db;
      await db.exec(`PRAGMA busy_timeout = ${this.options.waitMs}; PRAGMA synchronous = ${this.options.synchronous}`);
    }
    return this.db;
  }

  private closeConnection(): void {
    const db = this.db;
    this.db = undefined;
    this.statements.clear();
    try {
      db?.close();
    } catch {
      // already unusable
    }
  }
}
