/**
 * The embedded store's writer thread: a `worker_threads` worker holding a synchronous connection
 * of the process's driver (`node:sqlite` or libsql, see `driverName`), on which the group commits
 * and the background checkpoints run, so SQLite's work on a commit never holds the event loop.
 *
 * One message per batch of statements, one answer: a statement's SQL goes over once (the worker
 * prepares it once and keeps it by number); after that a batch carries each statement's number and
 * values only. The worker runs the batch's statements in order and answers the rows of those that
 * read; when one fails, it rolls back whatever transaction is open (a group is written whole or
 * not at all) and answers the error. A transaction may span two batches (a group that reads first:
 * see `GroupCommit`).
 *
 * The worker's code is this module's `WRITER_SOURCE` (evaluated, not a file: it runs the same from
 * the sources, the package and a bundle). If the thread dies, every batch waiting for it is
 * rejected with a named error, and so is every later one.
 */
import { Worker } from "node:worker_threads";
import { AgentLoopError } from "../../errors.js";
import { type DriverName, driverModule, type SqlStep } from "./driver.js";

/** The worker: opens the connection (`workerData`), says `ready`, then runs batches (see the module's comment). */
const WRITER_SOURCE = `(() => {
const { parentPort, workerData } = require("node:worker_threads");
const { file, module, timeout, pragmas } = workerData;
let db;
try {
  if (module === "node:sqlite") {
    const { DatabaseSync } = require("node:sqlite");
    const connection = new DatabaseSync(file, { timeout });
    db = {
      prepare(sql, read) {
        const statement = connection.prepare(sql);
        if (!read) return (params) => { statement.run(...params); };
        statement.setReturnArrays(true);
        return (params) => statement.all(...params);
      },
      exec: (sql) => connection.exec(sql),
      close: () => connection.close(),
    };
  } else {
    const Database = require(module);
    const connection = new Database(file, { timeout });
    db = {
      prepare(sql, read) {
        const statement = connection.prepare(sql);
        if (!read) return (params) => { statement.run(params); };
        statement.raw(true);
        return (params) => statement.all(params);
      },
      exec: (sql) => connection.exec(sql),
      close: () => connection.close(),
    };
  }
  db.exec(pragmas);
} catch (error) {
  try { db?.close(); } catch {}
  parentPort.postMessage(["failed", String(error?.message ?? error)]);
  parentPort.close();
  return;
}
const texts = [];
let compiled = [];
parentPort.on("message", (message) => {
  const id = message[0];
  if (message[1] === "close") {
    compiled = [];
    try { db.close(); } catch {}
    parentPort.postMessage([id, null, null]);
    parentPort.close();
    return;
  }
  const defs = message[1];
  if (defs !== null) for (let index = 0; index < defs.length; index += 3) texts[defs[index]] = [defs[index + 1], defs[index + 2]];
  const steps = message[2];
  const rows = [];
  try {
    for (let index = 0; index < steps.length; index += 2) {
      const number = steps[index];
      let run = compiled[number];
      if (run === undefined) {
        run = db.prepare(texts[number][0], texts[number][1]);
        compiled[number] = run;
      }
      const read = run(steps[index + 1]);
      if (read !== undefined) rows.push(read);
    }
  } catch (error) {
    try { db.exec("ROLLBACK"); } catch {}
    parentPort.postMessage([id, null, { message: String(error?.message ?? error), code: error?.code, errcode: error?.errcode }]);
    return;
  }
  parentPort.postMessage([id, rows, null]);
});
parentPort.postMessage(["ready"]);
})();
`;

/** A batch's answer: the rows of each reading statement, or the error of the one that failed. */
type Answer = [number, unknown[][][] | null, { message: string; code?: unknown; errcode?: unknown } | null];

export interface WriterOptions {
  file: string;
  driver: DriverName;
  /** SQLite's busy timeout of the connection, ms. */
  timeout: number;
  /** Run once the connection is open (PRAGMAs). */
  pragmas: string;
}

export class WriterThread {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve(rows: unknown[][][]): void; reject(error: unknown): void }>();
  private nextId = 0;
  /** Each SQL text's number in the worker (sent with the first batch that uses it). */
  private readonly numbers = new Map<string, number>();
  /** Set once the thread is gone: every batch is rejected with it. */
  private stopped: AgentLoopError | undefined;
  private closing = false;
  private readonly exited: Promise<void>;

  /** Starts the thread and opens its connection; rejects with the reason when it cannot. */
  static async start(options: WriterOptions): Promise<WriterThread> {
    const writer = new WriterThread(options);
    await writer.ready;
    return writer;
  }

  private readonly ready: Promise<void>;

  private constructor(private readonly options: WriterOptions) {
    this.worker = new Worker(WRITER_SOURCE, {
      eval: true,
      workerData: { file: options.file, module: driverModule(options.driver), timeout: options.timeout, pragmas: options.pragmas },
      // The thread's own options: no loader of the parent's (the code is plain JavaScript).
      execArgv: [],
      stdout: false,
      stderr: false,
    });
    this.ready = new Promise<void>((resolve, reject) => {
      this.worker.once("message", (message: [string, string?]) => {
        if (message[0] === "ready") {
          this.worker.on("message", (answer: Answer) => this.answer(answer));
          this.worker.unref();
          resolve();
        } else reject(new Error(message[1]));
      });
      this.worker.once("error", reject);
    });
    this.exited = new Promise<void>((resolve) => {
      this.worker.once("exit", (code) => {
        this.stop(`it exited with code ${code}`);
        resolve();
      });
    });
    this.worker.on("error", (error) => this.stop(`${(error as Error)?.message ?? String(error)}`));
  }

  /**
   * Runs `steps` in order in the thread: the rows of the reading ones (in order). `transaction`:
   * `"opens"`, the batch leaves a transaction open for the caller's next batch (or keeps it open), `"closes"` (which
   * ends it, committed or rolled back); `"between"`, a batch of its own (a checkpoint) that waits
   * until no transaction is left open (one run inside another's transaction would fail, and its
   * failure roll that transaction back).
   */
  async run(steps: readonly SqlStep[], transaction?: "opens" | "closes" | "between"): Promise<unknown[][][]> {
    if (transaction === "between") while (this.open) await this.open.ended;
    if (this.stopped) throw this.stopped;
    // A second batch that "opens" continues the transaction the first one left open (a group with two reads).
    if (transaction === "opens" && !this.open) {
      let end!: () => void;
      const ended = new Promise<void>((resolve) => {
        end = resolve;
      });
      this.open = { ended, end };
    }
    const open = this.open;
    const ends = (failed: boolean) => {
      // A failed statement rolled back in the thread; a thread gone ended it too.
      if (open && (transaction === "closes" || failed || this.stopped) && this.open === open) {
        this.open = undefined;
        open.end();
      }
    };
    try {
      const rows = await this.send(steps);
      ends(false);
      return rows;
    } catch (error) {
      ends(true);
      throw error;
    }
  }

  /** A transaction one batch left open for the next (see `run`). */
  private open: { ended: Promise<void>; end(): void } | undefined;

  private send(steps: readonly SqlStep[]): Promise<unknown[][][]> {
    let defs: unknown[] | null = null;
    const flat: unknown[] = new Array(steps.length * 2);
    for (let index = 0; index < steps.length; index++) {
      const { sql, params, read } = steps[index];
      let number = this.numbers.get(sql);
      if (number === undefined) {
        number = this.numbers.size;
        this.numbers.set(sql, number);
        (defs ??= []).push(number, sql, read === true);
      }
      flat[index * 2] = number;
      flat[index * 2 + 1] = params;
    }
    const id = this.nextId++;
    return new Promise<unknown[][][]>((resolve, reject) => {
      // The process stays up while a batch is out (an append in flight is written), not while the thread idles.
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage([id, defs, flat]);
    });
  }

  /** Closes the connection and ends the thread (after the batches sent before). */
  async close(): Promise<void> {
    if (!this.stopped && !this.closing) {
      this.closing = true;
      const id = this.nextId++;
      const closed = new Promise<unknown>((resolve) => this.waiting.set(id, { resolve, reject: resolve }));
      this.worker.ref();
      this.worker.postMessage([id, "close"]);
      await closed;
    }
    await this.exited;
  }

  private answer([id, rows, error]: Answer): void {
    const entry = this.waiting.get(id);
    if (!entry) return;
    this.waiting.delete(id);
    if (this.waiting.size === 0 && !this.closing) this.worker.unref();
    if (error) entry.reject(Object.assign(new Error(error.message), { code: error.code, errcode: error.errcode }));
    else entry.resolve(rows!);
  }

  /** The thread is gone: what waits for it, and every later batch, is told so. */
  private stop(reason: string): void {
    if (this.stopped) return;
    this.stopped = this.closing
      ? new AgentLoopError("unknown", `memory (embedded): the writer thread of ${this.options.file} is closed`)
      : new AgentLoopError(
          "unknown",
          `memory (embedded): the writer thread of ${this.options.file} stopped (${reason}) before it answered: a group it was writing is in the file whole or not at all, and this store writes nothing more until it is opened again`,
        );
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    // No transaction is left: what waits for its end goes on (and is told the thread is gone).
    const open = this.open;
    this.open = undefined;
    open?.end();
    for (const entry of waiting) entry.reject(this.stopped);
  }
}
