/**
 * `agentloop/memory/embedded`: the durable default store. One SQLite file (through `libsql`, a
 * maintained driver with prebuilt binaries) in WAL mode: no server to run, opens in milliseconds,
 * many processes read it while one at a time writes (a server, `agentloop run --session` and
 * `agentloop events` on the same file at once).
 *
 * Appends are grouped: every append made in one turn of the event loop is written in the next, in
 * one transaction, on a second connection (`libsql/promise`) whose statements run on the driver's
 * threads, so SQLite's work on a commit never holds the event loop (see `writesOffThread`). Reads
 * run synchronously on the calling thread (tens of microseconds; WAL readers never wait).
 */
//
// The modules (src/memory/sqlite/): open.ts (the options, opening the file), store.ts (the store:
// reads, session locks, close), group-commit.ts (appends, lock attempts and releases queued and
// written in groups, off the JavaScript thread), group-steps.ts (one group as SQL), schema.ts (the
// file, the tables, rows to events), driver.ts (libsql and the SQL steps both connections run);
// ../wal-checkpointer.ts (checkpoints off the JavaScript thread).
import { defaultEmbeddedPath } from "./store.js";

export { DEFAULT_EMBEDDED_PATH, type EmbeddedStoreOptions, openEmbeddedStore } from "./sqlite/open.js";
export { embeddedFileOf } from "./sqlite/schema.js";
export { EmbeddedMemoryStore } from "./sqlite/store.js";
export { defaultEmbeddedPath };
