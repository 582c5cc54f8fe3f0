/**
 * The embedded store's SQLite driver: Node's own `node:sqlite` where it is stable (Node 24.21 and
 * later: it loads without an experimental warning), `libsql` elsewhere (Node 20 and 22), the same
 * one for every connection of the process (two copies of SQLite in one process must never open
 * one file: each keeps its own table of the file's POSIX locks, and a close by one drops the
 * other's). Both behind the store's `Database`/`Statement` interface, and the SQL steps the store's
 * connections run.
 */
import { createRequire } from "node:module";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { AgentLoopError } from "../../errors.js";

/** The part of a SQLite driver the store uses (libsql's better-sqlite3-style API; `node:sqlite` adapted to it). */
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

/** The drivers the store runs on. */
export type DriverName = "node:sqlite" | "libsql";

/** The first Node release whose `node:sqlite` the store uses (it loads without an experimental warning there). */
export const NODE_SQLITE_SINCE = [24, 21] as const;

/**
 * The driver of this process: `AGENTLOOP_SQLITE_DRIVER` (`libsql` or `node:sqlite`) when set,
 * else `node:sqlite` on Node ≥ 24.21 and `libsql` before. A `configuration` error names a value it
 * does not know, or `node:sqlite` asked for on a Node that has no stable one.
 */
export function driverName(version: string = process.versions.node, setting: string | undefined = process.env.AGENTLOOP_SQLITE_DRIVER): DriverName {
  const [major, minor] = version.split(".").map(Number);
  const stable = major > NODE_SQLITE_SINCE[0] || (major === NODE_SQLITE_SINCE[0] && minor >= NODE_SQLITE_SINCE[1]);
  if (setting === undefined || setting === "") return stable ? "node:sqlite" : "libsql";
  if (setting === "libsql") return "libsql";
  if (setting === "node:sqlite") {
    if (stable) return "node:sqlite";
    throw new AgentLoopError("configuration", `memory: AGENTLOOP_SQLITE_DRIVER=node:sqlite needs Node ${NODE_SQLITE_SINCE.join(".")} or later (this is ${version}); unset it to use libsql`);
  }
  throw new AgentLoopError("configuration", `memory: AGENTLOOP_SQLITE_DRIVER must be "libsql" or "node:sqlite", got ${JSON.stringify(setting)}`);
}

/** `node:sqlite`'s statement and connection (the part used), as Node 24 has them. */
interface NodeStatementSync {
  run(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  setReturnArrays(enabled: boolean): void;
}
interface NodeDatabaseSync {
  prepare(sql: string): NodeStatementSync;
  exec(sql: string): void;
  close(): void;
}

/** `node:sqlite`'s `DatabaseSync` as the store's `Database`. */
function nodeSqliteDriver(DatabaseSync: new (path: string, options?: { timeout?: number }) => NodeDatabaseSync): DatabaseConstructor {
  class NodeStatement implements Statement {
    constructor(private readonly statement: NodeStatementSync) {}
    run(params: unknown[]): unknown {
      return this.statement.run(...params);
    }
    all(params: unknown[]): unknown[] {
      return this.statement.all(...params);
    }
    raw(toggle = true): Statement {
      this.statement.setReturnArrays(toggle);
      return this;
    }
  }
  return class NodeDatabase implements Database {
    private readonly db: NodeDatabaseSync;
    constructor(path: string, options?: { timeout?: number }) {
      this.db = new DatabaseSync(path, options?.timeout === undefined ? {} : { timeout: options.timeout });
    }
    prepare(sql: string): Statement {
      return new NodeStatement(this.db.prepare(sql));
    }
    exec(sql: string): unknown {
      return this.db.exec(sql);
    }
    close(): void {
      this.db.close();
    }
  };
}

const drivers = new Map<DriverName, DatabaseConstructor>();
/** The driver's connection class (see `driverName`); a `configuration` error when it cannot be loaded. */
export function loadDriver(name: DriverName = driverName()): DatabaseConstructor {
  let driver = drivers.get(name);
  if (!driver) {
    const require = createRequire(import.meta.url);
    try {
      driver = name === "node:sqlite" ? nodeSqliteDriver((require("node:sqlite") as { DatabaseSync: never }).DatabaseSync) : (require("libsql") as DatabaseConstructor);
    } catch (error) {
      throw new AgentLoopError("configuration", `memory: the embedded store needs the "${name}" package and its binary for ${process.platform}-${process.arch}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    drivers.set(name, driver);
  }
  return driver;
}

/** Where the writer thread loads the driver from: `node:sqlite`, or libsql's resolved file (a worker's `require` resolves from nowhere in particular). */
export function driverModule(name: DriverName): string {
  return name === "node:sqlite" ? "node:sqlite" : createRequire(import.meta.url).resolve("libsql");
}

/**
 * One statement of a write transaction, run on either connection: its SQL (a text the store makes
 * from the shape of a group only, so each is prepared once) and its values; `read`: its rows are
 * wanted (as arrays).
 */
export interface SqlStep {
  sql: string;
  params: unknown[];
  read?: true;
}

/** Walks SQL steps: each write goes to `write`, each read to `read`, whose rows go back to the steps. */
export function walkSteps<T>(steps: Generator<SqlStep, T, unknown[][]>, read: (step: SqlStep) => unknown[][], write: (step: SqlStep) => void): T {
  let step = steps.next();
  while (!step.done) {
    if (step.value.read) step = steps.next(read(step.value));
    else {
      write(step.value);
      step = steps.next([]);
    }
  }
  return step.value;
}

/** `walkSteps` with a read that goes to another thread. */
export async function walkStepsAsync<T>(steps: Generator<SqlStep, T, unknown[][]>, read: (step: SqlStep) => Promise<unknown[][]>, write: (step: SqlStep) => void): Promise<T> {
  let step = steps.next();
  while (!step.done) {
    if (step.value.read) step = steps.next(await read(step.value));
    else {
      write(step.value);
      step = steps.next([]);
    }
  }
  return step.value;
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
