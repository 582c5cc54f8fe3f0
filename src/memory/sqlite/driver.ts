/**
 * The embedded store's SQLite driver (`libsql`: the synchronous connection, and `libsql/promise`
 * whose statements run on the driver's threads), and the SQL steps both connections run.
 */
import { createRequire } from "node:module";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { AgentLoopError } from "../../errors.js";

/** The part of a SQLite driver the store uses (libsql's better-sqlite3-style API). */
export interface Statement {
  run(params: unknown[]): unknown;
  all(params: unknown[]): unknown[];
  raw(toggle?: boolean): Statement;
}
export interface Database {
  prepare(sql: string): Statement;
  exec(sql: string): unknown;
  close(): void;
}
export type DatabaseConstructor = new (path: string, options?: { timeout?: number }) => Database;
/** The part of `libsql/promise` the writer connection uses: statements run on the driver's threads. */
export interface AsyncStatement {
  iterate(params: unknown[]): Promise<Iterable<unknown>>;
  raw(toggle?: boolean): AsyncStatement;
}
export interface AsyncDatabase {
  exec(sql: string): Promise<unknown>;
  prepare(sql: string): Promise<AsyncStatement>;
  close(): void;
}
export type AsyncDatabaseConstructor = new (path: string, options?: { timeout?: number }) => AsyncDatabase;

/**
 * One step of a write transaction, run on either connection: a read (a statement with `params`,
 * returning rows as arrays), or statements that return nothing, with their values written in as
 * literals (`sqlText`), so consecutive ones go to the driver in one `exec`.
 */
export interface SqlStep {
  sql: string;
  params?: unknown[];
}

/** Walks SQL steps: each write (no params) goes to `write`, each read to `read`, whose rows go back to the steps. */
export function walkSteps<T>(steps: Generator<SqlStep, T, unknown[][]>, read: (sql: string, params: unknown[]) => unknown[][], write: (sql: string) => void): T {
  let step = steps.next();
  while (!step.done) {
    const { sql, params } = step.value;
    if (params) step = steps.next(read(sql, params));
    else {
      write(sql);
      step = steps.next([]);
    }
  }
  return step.value;
}

/** `walkSteps` with a read that goes to another thread. */
export async function walkStepsAsync<T>(steps: Generator<SqlStep, T, unknown[][]>, read: (sql: string, params: unknown[]) => Promise<unknown[][]>, write: (sql: string) => void): Promise<T> {
  let step = steps.next();
  while (!step.done) {
    const { sql, params } = step.value;
    if (params) step = steps.next(await read(sql, params));
    else {
      write(sql);
      step = steps.next([]);
    }
  }
  return step.value;
}

/** A SQL string literal. */
export function sqlText(text: string): string {
  return text.includes("'") ? `'${text.replaceAll("'", "''")}'` : `'${text}'`;
}


let driver: DatabaseConstructor | undefined;
export function loadDriver(): DatabaseConstructor {
  if (!driver) {
    try {
      driver = createRequire(import.meta.url)("libsql") as DatabaseConstructor;
    } catch (error) {
      throw new AgentLoopError("configuration", `memory: the embedded store needs the "libsql" package and its binary for ${process.platform}-${process.arch}: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  return driver;
}

/** The promise API of the same driver (for the writer connection). */
export function loadAsyncDriver(): AsyncDatabaseConstructor {
  return createRequire(import.meta.url)("libsql/promise") as AsyncDatabaseConstructor;
}

/**
 * The statements a store's connections prepared, held weakly: what its `close()` waits to see
 * garbage collected (see `releaseClosedConnections`). A store prepares each text once, so these
 * stay a few dozen.
 */
export class PreparedStatements {
  private refs: Array<WeakRef<object>> = [];

  /** Notes a statement; returns it. */
  add<T extends object>(statement: T): T {
    this.refs.push(new WeakRef(statement));
    return statement;
  }

  /** Whether one of them is still alive (it then stays alive until this job ends: collect on a later turn). */
  anyAlive(): boolean {
    this.refs = this.refs.filter((ref) => ref.deref() !== undefined);
    return this.refs.length > 0;
  }
}

/**
 * libsql (0.5) closes a SQLite connection (its descriptors of the file, the -wal and the -shm; the
 * last connection to the file also checkpoints the log and deletes both) only once every statement
 * prepared on it is garbage collected: `close()` drops only the connection's own reference, and the
 * driver cannot finalize a statement. So a store that has closed its connections and dropped its
 * statements calls this: a full garbage collection on the next turn of the event loop (the
 * caller's job no longer on the stack), after which Node-API runs the driver's finalizers (on the
 * turn after), then another if one of the statements survived it (a collection already marking
 * when the store dropped them keeps them: the next one frees them). Closes in one turn share a
 * collection. Without a way to collect (another runtime), the connections close whenever their
 * statements are collected.
 */
export async function releaseClosedConnections(statements: PreparedStatements): Promise<void> {
  for (let attempt = 0; attempt < 3 && statements.anyAlive() && collector(); attempt++) await collectOnNextTurn();
}

let collection: Promise<void> | undefined;

function collectOnNextTurn(): Promise<void> {
  collection ??= new Promise<void>((resolve) => {
    setImmediate(() => {
      // A close from now on needs a collection of its own (its statements may be alive in this one).
      collection = undefined;
      try {
        collector()?.();
      } catch {
        // the statements are then finalized at a later collection
      }
      setImmediate(resolve);
    });
  });
  return collection;
}

let gcFunction: (() => void) | null | undefined;

function collector(): (() => void) | null {
  if (gcFunction === undefined) gcFunction = typeof globalThis.gc === "function" ? () => globalThis.gc?.() : exposedCollector();
  return gcFunction;
}

/** V8's `gc` without `--expose-gc`: the flag is set for the making of one context, then unset again. */
function exposedCollector(): (() => void) | null {
  try {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as unknown;
    return typeof gc === "function" ? () => gc() : null;
  } catch {
    return null;
  } finally {
    try {
      setFlagsFromString("--no-expose-gc");
    } catch {
      // a runtime without V8's flags
    }
  }
}
