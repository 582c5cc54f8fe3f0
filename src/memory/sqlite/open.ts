/**
 * `openEmbeddedStore`: the embedded store's options, and opening its file (WAL mode, the tables,
 * the writer connection of the group commit, the background checkpoints).
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { AgentLoopError } from "../../errors.js";
import { defaultEmbeddedPath, type MemoryLimits, resolveLimits } from "../store.js";
import { WalCheckpointer } from "../wal-checkpointer.js";
import { type AsyncDatabase, type Database, loadAsyncDriver, loadDriver, PreparedStatements } from "./driver.js";
import { embeddedFileOf, SCHEMA } from "./schema.js";
import { EmbeddedMemoryStore } from "./store.js";

export const DEFAULT_EMBEDDED_PATH = defaultEmbeddedPath();

export interface EmbeddedStoreOptions extends MemoryLimits {
  /**
   * The database file (created with its folders if missing), or a directory to hold `memory.db`
   * (an existing directory, or a path ending with a separator). Default `.agentloop/agent/memory.db`.
   */
  path?: string;
  /**
   * How long a write waits for another process's write to finish before failing (SQLite's busy
   * timeout). Default 5000 ms.
   */
  busyTimeoutMs?: number;
  /**
   * `"normal"` (default): a commit survives the process being killed at any point; after a power
   * loss or OS crash the last commits may be lost, never the file's consistency (SQLite WAL with
   * `synchronous=NORMAL`). `"full"`: every commit also waits for the disk (fsync, ~1-2 ms here).
   */
  synchronous?: "normal" | "full";
  /**
   * Group commit: appends made in one turn of the event loop are written together in the next
   * (one transaction). `false`: each append is written at once, in a transaction of its own.
   */
  groupCommit?: boolean;
  /**
   * With group commit, where the groups are written. `true` (default): on a second connection
   * through `libsql/promise`, whose statements run on the driver's threads, so a commit never
   * holds the event loop (every stream a server holds) while SQLite writes; the JavaScript thread
   * only builds each group's few statements. `false`: on the JavaScript thread, synchronously.
   * Reads stay on the JavaScript thread either way (WAL: they never wait for the writer).
   */
  writesOffThread?: boolean;
  /**
   * WAL checkpoints (copying the log into the database file, with an fsync of each). `true`
   * (default): on a second connection whose statements run off the JavaScript thread, a little
   * after commits; when the log reaches `truncatePages` pages (default 4096, 16 MB) this process's
   * writes wait while it is emptied (see docs/memory.md). `false`: SQLite's own, inside the
   * `COMMIT` that crosses 1,000 pages, on the thread that commits.
   */
  backgroundCheckpoints?: boolean | { delayMs?: number; truncatePages?: number };
}

/** A background checkpoint starts this long after a commit. */
const CHECKPOINT_DELAY_MS = 100;
/** The log is emptied (writes held) once it is this many pages long: 16 MB with 4 KB pages. */
const TRUNCATE_PAGES = 4096;
/** How long the emptying waits for other processes' writers and readers before trying again later. */
const TRUNCATE_WAIT_MS = 100;

function positiveMs(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) throw new AgentLoopError("configuration", `memory: ${name} must be a non-negative integer, got ${String(value)}`);
  return value;
}

/**
 * Opens (creating if needed) the embedded store: its file, WAL mode, the tables. Several processes
 * may open one file at once. Rejects with a `configuration` error naming the file when it cannot.
 */
export async function openEmbeddedStore(options: EmbeddedStoreOptions = {}): Promise<EmbeddedMemoryStore> {
  const limits = resolveLimits(options);
  const busyTimeoutMs = positiveMs("busyTimeoutMs", options.busyTimeoutMs, 5000);
  const synchronous = options.synchronous ?? "normal";
  if (synchronous !== "normal" && synchronous !== "full") {
    throw new AgentLoopError("configuration", `memory: synchronous must be "normal" or "full", got ${JSON.stringify(synchronous)}`);
  }
  const background = options.backgroundCheckpoints ?? true;
  const tuning = typeof background === "object" && background !== null ? background : {};
  const checkpointDelayMs = positiveMs("backgroundCheckpoints.delayMs", tuning.delayMs, CHECKPOINT_DELAY_MS);
  const truncatePages = tuning.truncatePages ?? TRUNCATE_PAGES;
  if (!Number.isInteger(truncatePages) || truncatePages < 1) {
    throw new AgentLoopError("configuration", `memory: backgroundCheckpoints.truncatePages must be a positive integer, got ${String(truncatePages)}`);
  }
  const file = embeddedFileOf(options.path ?? DEFAULT_EMBEDDED_PATH);
  try {
    mkdirSync(dirname(file), { recursive: true });
  } catch (error) {
    throw new AgentLoopError("configuration", `memory: cannot create the folder of the embedded store ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const Driver = loadDriver();
  let db: Database | undefined;
  try {
    db = new Driver(file, { timeout: busyTimeoutMs });
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    // WAL: readers never block the writer nor each other; a commit is one append to the log.
    db.exec("PRAGMA journal_mode = WAL");
    db.exec(`PRAGMA synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}`);
    // With background checkpoints, SQLite's own (in COMMIT, on this thread) is only a backstop:
    // it runs if the log grows to twice the size the background empties it at.
    if (background !== false) db.exec(`PRAGMA wal_autocheckpoint = ${2 * truncatePages}`);
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(SCHEMA);
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
  } catch (error) {
    try {
      db?.close();
    } catch {
      // already failing
    }
    throw new AgentLoopError("configuration", `memory: cannot open the embedded store ${file}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
  }
  const writer = db;
  /** The connection group commits are written on (see `writesOffThread`), opened below. */
  let offThread: AsyncDatabase | undefined;
  /** What the store's close waits to see garbage collected (see `releaseClosedConnections`). */
  const prepared = new PreparedStatements();
  const checkpointer =
    background === false
      ? undefined
      : new WalCheckpointer({
          file,
          synchronous: synchronous === "full" ? "FULL" : "NORMAL",
          delayMs: checkpointDelayMs,
          truncateFrames: truncatePages,
          waitMs: Math.min(TRUNCATE_WAIT_MS, busyTimeoutMs),
          onFailure: () => {
            // The second connection failed: SQLite's own checkpoints take over again.
            try {
              writer.exec("PRAGMA wal_autocheckpoint = 1000");
            } catch {
              // the store is closed
            }
            offThread?.exec("PRAGMA wal_autocheckpoint = 1000").catch(() => {});
          },
          prepared: (statement) => prepared.add(statement),
        });
  const groupCommit = options.groupCommit ?? true;
  if (groupCommit && options.writesOffThread !== false) {
    try {
      const AsyncDriver = loadAsyncDriver();
      offThread = new AsyncDriver(file, { timeout: busyTimeoutMs });
      await offThread.exec(
        `PRAGMA busy_timeout = ${busyTimeoutMs}; PRAGMA synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}; PRAGMA wal_autocheckpoint = ${background === false ? 1000 : 2 * truncatePages};
         CREATE TEMP TABLE agentloop_guard (id INTEGER PRIMARY KEY, ok INTEGER CONSTRAINT agentloop_guard CHECK (ok))`,
      );
    } catch (error) {
      try {
        offThread?.close();
      } catch {
        // already failing
      }
      await checkpointer?.close();
      writer.close();
      throw new AgentLoopError("configuration", `memory: cannot open the writer connection of the embedded store ${file}: ${(error as Error)?.message ?? String(error)}`, { cause: error });
    }
  }
  return new EmbeddedMemoryStore(db, file, limits, groupCommit, checkpointer, offThread, prepared);
}

