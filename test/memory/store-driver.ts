// The embedded store's driver as a test uses it beside a store in the same process: a connection
// of the same SQLite the store runs on (never another copy of SQLite on the store's file: each copy
// keeps its own table of the file's POSIX locks, so their locks would not see each other), and the
// batches the store sends its writer thread, counted.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { driverName } from "../../src/memory/sqlite/driver.js";

export interface RawStatement {
  run(...params: unknown[]): unknown;
  get(...params: unknown[]): any;
  all(...params: unknown[]): any[];
}
export interface RawConnection {
  exec(sql: string): unknown;
  prepare(sql: string): RawStatement;
  close(): void;
}

/** A connection of the store's driver (libsql's API: values as one array or spread, rows as objects). */
export function rawConnection(path: string): RawConnection {
  const require = createRequire(import.meta.url);
  if (driverName() === "libsql") return new (require("libsql"))(path);
  const { DatabaseSync } = require("node:sqlite");
  const db = new DatabaseSync(path);
  const values = (params: unknown[]) => (params.length === 1 && Array.isArray(params[0]) ? params[0] : params);
  return {
    exec: (sql) => db.exec(sql),
    close: () => db.close(),
    prepare(sql) {
      const statement = db.prepare(sql);
      return {
        run: (...params) => statement.run(...values(params)),
        get: (...params) => statement.get(...values(params)),
        all: (...params) => statement.all(...values(params)),
      };
    },
  };
}

/** `new RawDatabase(path)`: `rawConnection(path)`, where a test had libsql's class. */
export const RawDatabase = function RawDatabase(path: string) {
  return rawConnection(path);
} as unknown as new (path: string) => RawConnection;

/** The batches sent to writer threads while `fn` runs (each a message to the thread and its answer). */
export async function batchesOf(fn: () => Promise<unknown>): Promise<number> {
  const { postMessage } = Worker.prototype;
  let batches = 0;
  Worker.prototype.postMessage = function (this: Worker, ...args: Parameters<Worker["postMessage"]>) {
    batches++;
    return postMessage.apply(this, args);
  };
  try {
    await fn();
  } finally {
    Worker.prototype.postMessage = postMessage;
  }
  return batches;
}

/** The writer threads that receive a batch while `fn` runs; `sent`: called with the thread right after each batch is posted. */
export async function writerThreadsOf(fn: () => Promise<unknown>, sent?: (thread: Worker) => void): Promise<Worker[]> {
  const { postMessage } = Worker.prototype;
  const workers = new Set<Worker>();
  Worker.prototype.postMessage = function (this: Worker, ...args: Parameters<Worker["postMessage"]>) {
    workers.add(this);
    const posted = postMessage.apply(this, args);
    sent?.(this);
    return posted;
  };
  try {
    await fn();
  } finally {
    Worker.prototype.postMessage = postMessage;
  }
  return [...workers];
}
