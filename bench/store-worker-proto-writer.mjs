// Scratch (session 23, perf-emb3): the writer thread of bench/store-worker-proto.ts. A synchronous
// `libsql` connection, statements prepared once; one message per group: [sessionId, iso, ms,
// maxSessions, ...event values (6 per event)], one answer: [id, error | null].
import { createRequire } from "node:module";
import { parentPort, workerData } from "node:worker_threads";

const Database = createRequire(import.meta.url)(workerData.driver ?? "libsql");
const db = new Database(workerData.file, { timeout: 5000 });
db.exec("PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 8192");
const begin = db.prepare("BEGIN IMMEDIATE");
const commit = db.prepare("COMMIT");
const rollback = db.prepare("ROLLBACK");
const insertSession = db.prepare(
  "INSERT INTO agentloop_sessions (session_id, created_at, updated_at, updated_ms, activity, last_seq, metadata) VALUES (?1, ?2, ?2, ?3, (SELECT coalesce(max(activity), 0) + 1 FROM agentloop_sessions), ?4, '{}')",
);
const insertEvents = new Map();
function eventsStatement(count) {
  let statement = insertEvents.get(count);
  if (!statement) {
    const rows = [];
    for (let index = 0; index < count; index++) rows.push(`(?1,${index + 1},?,?,?,?,?,?)`);
    statement = db.prepare(`INSERT INTO agentloop_events (session_id, seq, event_id, timestamp, timestamp_ms, event_type, content, metadata) VALUES ${rows.join(",")}`);
    insertEvents.set(count, statement);
  }
  return statement;
}
const victims = "SELECT session_id FROM agentloop_sessions WHERE session_id <> ?1 ORDER BY activity ASC LIMIT max(0, (SELECT count(*) FROM agentloop_sessions) - ?2)";
const evictEvents = db.prepare(`DELETE FROM agentloop_events WHERE session_id IN (${victims})`);
const evictSessions = db.prepare(`DELETE FROM agentloop_sessions WHERE session_id IN (${victims})`);
const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
let timer;

parentPort.on("message", (message) => {
  const [id, sessionId, iso, ms, maxSessions] = message;
  const values = message.slice(5);
  let error = null;
  begin.run([]);
  try {
    insertSession.run([sessionId, iso, ms, values.length / 6]);
    eventsStatement(values.length / 6).run([sessionId, ...values]);
    evictEvents.run([sessionId, maxSessions]);
    evictSessions.run([sessionId, maxSessions]);
    commit.run([]);
  } catch (caught) {
    try { rollback.run([]); } catch {}
    error = String(caught?.message ?? caught);
  }
  parentPort.postMessage([id, error]);
  timer ??= setTimeout(() => {
    timer = undefined;
    checkpoint.raw(true).all([]);
  }, 100);
});
