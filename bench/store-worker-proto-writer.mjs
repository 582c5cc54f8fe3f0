// Scratch (session 23, perf-emb3): the writer thread of bench/store-worker-proto.ts. A synchronous
// `libsql` connection, statements prepared once; one message per group: [sessionId, iso, ms,
// maxSessions, ...event values (6 per event)], one answer: [id, error | null].
import { createRequire } from "node:module";
import { isMainThread, parentPort, workerData } from "node:worker_threads";

/** The writer: a function of one message to its answer (PROTO_INLINE: called on the main thread). */
export function makeWriter(options) {
  const nodeSqlite = options.driver === "node:sqlite";
  const Database = nodeSqlite ? createRequire(import.meta.url)("node:sqlite").DatabaseSync : createRequire(import.meta.url)(options.driver || "libsql");
  // better-sqlite3 and node:sqlite bind spread values; libsql one array (its `run` flattens a spread).
  const spread = nodeSqlite || (options.driver ?? "").includes("better-sqlite3");
  const run = spread ? (statement, values) => statement.run(...values) : (statement, values) => statement.run(values);
  const db = new Database(options.file, { timeout: 5000 });
  db.exec("PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 8192");
  const begin = db.prepare("BEGIN IMMEDIATE");
  const commit = db.prepare("COMMIT");
  const rollback = db.prepare("ROLLBACK");
  const insertSession = db.prepare(
    "INSERT INTO agentloop_sessions (session_id, created_at, updated_at, updated_ms, activity, last_seq, metadata) VALUES (?, ?, ?, ?, (SELECT coalesce(max(activity), 0) + 1 FROM agentloop_sessions), ?, '{}')",
  );
  const insertEvents = new Map();
  function eventsStatement(count) {
    let statement = insertEvents.get(count);
    if (!statement) {
      const rows = [];
      for (let index = 0; index < count; index++) rows.push(`(?,${index + 1},?,?,?,?,?,?)`);
      statement = db.prepare(`INSERT INTO agentloop_events (session_id, seq, event_id, timestamp, timestamp_ms, event_type, content, metadata) VALUES ${rows.join(",")}`);
      insertEvents.set(count, statement);
    }
    return statement;
  }
  const victims = "SELECT session_id FROM agentloop_sessions WHERE session_id <> ? ORDER BY activity ASC LIMIT max(0, (SELECT count(*) FROM agentloop_sessions) - ?)";
  const evictEvents = db.prepare(`DELETE FROM agentloop_events WHERE session_id IN (${victims})`);
  const evictSessions = db.prepare(`DELETE FROM agentloop_sessions WHERE session_id IN (${victims})`);
  const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  let timer;
  /** A PASSIVE checkpoint 100 ms after a commit (one pending at a time), on this connection. */
  const scheduleCheckpoint = () => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      checkpoint.all();
    }, 100);
  };

  return (message) => {
    if (message.length === 2) {
      // PROTO_SQLTEXT: the group as the store builds it today, SQL text with literals, in one exec.
      let error = null;
      try {
        db.exec(message[1]);
      } catch (caught) {
        try {
          rollback.run();
        } catch {}
        error = String(caught?.message ?? caught);
      }
      scheduleCheckpoint();
      return [message[0], error];
    }
    const [id, sessionId, iso, ms, maxSessions] = message;
    const values = message.slice(5);
    let error = null;
    begin.run();
    try {
      run(insertSession, [sessionId, iso, iso, ms, values.length / 6]);
      const count = values.length / 6;
      const bound = new Array(count * 7);
      for (let index = 0; index < count; index++) {
        bound[index * 7] = sessionId;
        for (let field = 0; field < 6; field++) bound[index * 7 + 1 + field] = values[index * 6 + field];
      }
      run(eventsStatement(count), bound);
      run(evictEvents, [sessionId, maxSessions]);
      run(evictSessions, [sessionId, maxSessions]);
      commit.run();
    } catch (caught) {
      try { rollback.run(); } catch {}
      error = String(caught?.message ?? caught);
    }
    scheduleCheckpoint();
    return [id, error];
  };
}

if (!isMainThread) {
  const write = makeWriter(workerData);
  parentPort.on("message", (message) => parentPort.postMessage(write(message)));
}
