// Scenario 10: instructions per chat, counted by valgrind's callgrind in the server's process, for
// the node:http floor and the agent server with memory off, the default embedded store and
// PostgreSQL, in one run. A count of executed instructions does not follow the machine's load the
// way wall or CPU time does: it repeats within a few percent on a busy 2-core machine where the
// latency and CPU figures of scenario 5 move by tens of percent (bench/README.md).
//
// Each server runs under `valgrind --tool=callgrind --instr-atstart=no` (not counting its start),
// gets WARM_UP chats, a full collection and AFTER_GC more chats (FULL_GC_FIRST), all of them and the
// counted ones on one keep-alive connection (a new one at the window's start deoptimized node's own
// stream and HTTP functions there: session 22; on PostgreSQL's row each uncounted chat followed by a
// read of the sessions list, READS: session 24), REHEARSAL chats paced as the counted ones (default
// none), then
// `callgrind_control` turns counting on and zeroes it, MEASURED chats run,
// and `callgrind_control -d` dumps the count: the dump's total over MEASURED is one chat's cost,
// in every thread of the server process (the event loop, V8's and libuv's helper threads, the
// embedded store's writer). PostgreSQL's own process is not counted.
//
//   node --import tsx bench/scenario-instructions.ts       # or: npm run bench -- instructions
//   BENCH_INSTRUCTIONS_KEEP=1 ...                           # keep the callgrind files (callgrind_annotate)
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { Agent as HttpAgent, type RequestOptions, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startChild } from "./child-process.js";
import { type BenchOptions, type ScenarioReport, format, isMain, machineInfo, markdownTable, parseBenchOptions, publish } from "./harness.js";
import { AG_UI, CHAT_COMPLETIONS, CHAT_COMPLETIONS_SESSION, PROTOCOLS, type Protocol, UI_CHAT, checkAnswer } from "./protocols.js";

const FLOOR = "node:http floor";
const OFF = "agentloop serve, memory off";
const EMBEDDED = "agentloop serve, embedded memory (the default store)";
const POSTGRES = "agentloop serve, PostgreSQL memory";
/** Not in a default run (`BENCH_INSTRUCTIONS_ROWS=in-process`): session memory on the in-process store, what recording costs without a database. */
const IN_PROCESS = "agentloop serve, in-process memory store";
const POSTGRES_URL = process.env.AGENTLOOP_TEST_PG_URL;
/** Chat completions per chat, ÷ the floor's. */
const TARGETS: Record<string, number> = { [OFF]: 1.3, [EMBEDDED]: 1.5, [POSTGRES]: 1.5 };
/**
 * A UI protocol's chat ÷ a chat completions chat on the same store (issue 29): with memory off the
 * plain chat completions row; on a store the one naming its session (`x-session-id`, a new one per
 * chat), as a `useChat` or AG-UI chat does (`id`, `threadId`): a named session takes the session's
 * lock and loads its history before the run, an unnamed one skips both (bench/README.md).
 */
const PROTOCOL_TARGET = 1.1;
/** Chats before counting (not instrumented, so cheap): after 50, V8's optimizing compiler still took ~15 % of the counted instructions and the count moved ~5 % run to run. */
const WARM_UP = Number(process.env.BENCH_INSTRUCTIONS_WARM_UP ?? 200);
/** Chats counted: 100 rather than 40 (session 15): a young collection every few chats, and the window holds more of them, so where they fall moves the count less. */
const MEASURED = Number(process.env.BENCH_INSTRUCTIONS_CHATS ?? 100);
/**
 * A pause after each counted chat, so the work a chat leaves behind (the embedded store's WAL
 * checkpoint 100 ms after a commit, PostgreSQL's lock release still on the wire) is done before the
 * next chat starts, in every run: back to back, how many checkpoints fell in the counted chats and
 * which path the next chat's lock attempt took depended on the clock (±5–7 % run to run).
 */
const PAUSE_MS = Number(process.env.BENCH_INSTRUCTIONS_PAUSE_MS ?? 300);
/**
 * A full (mark-compact) collection, not counted, just before the counted chats, in every row
 * (`BENCH_INSTRUCTIONS_FULL_GC=0`: none, as before session 17). One costs ~45 M instructions and
 * came every few hundred chats where the old generation's limit fell: in a 100-chat window or not
 * (±0.44 M per chat). Forced first, every row's window starts with an old generation just
 * collected, so the next one falls at the same point of the same work.
 */
const FULL_GC_FIRST = process.env.BENCH_INSTRUCTIONS_FULL_GC !== "0";
/**
 * Chats after that collection, not counted either: a forced full collection throws away code and
 * feedback V8 had (the floor's first try counted 1.28 M per chat instead of 1.06, 0.83 M of
 * optimizing compiler per chat, inline-cache misses and baseline code), which these chats rebuild.
 * 2500 since session 18 (was 100): the server's own code is still being optimized for the first
 * time up to ~2500 chats (`--trace-opt`: 31–53 TurboFan compilations per 500 chats up to chat 1500,
 * 12 at 2000–2500, 1–7 after 3000), so a window after 100 counted that code's slower unoptimized
 * runs, and which of them depended on timing (bench/FINDINGS.md, session 18).
 */
const AFTER_GC = Number(process.env.BENCH_INSTRUCTIONS_AFTER_GC ?? 2500);
/**
 * `BENCH_INSTRUCTIONS_REHEARSAL=N`: N chats played just before the counted ones, the same way (each
 * followed by the pause), not counted, so the counted chats' pattern (a timer that never fires back
 * to back, PostgreSQL's eviction after every chat) is not new to V8 when counting starts. Default 0:
 * tried in session 23 with 100 (three runs), it did not make PostgreSQL's row repeat (0.902, 0.956,
 * 0.940 M per chat) and left the other rows as they were (bench/FINDINGS.md).
 */
const REHEARSAL = Number(process.env.BENCH_INSTRUCTIONS_REHEARSAL ?? 0);
/**
 * On PostgreSQL's row, each uncounted chat followed by a read of the sessions list (`GET
 * /v1/sessions?limit=1`), which runs the store's eviction waiting for its gap first
 * (`BENCH_INSTRUCTIONS_READS=0`: none, as before session 24). The store evicts at most every 100 ms
 * (its `EVICT_GAP_MS`), each eviction a `count(*)` and a `DELETE` through pg's own query path (the
 * group write uses the store's `WireStatement`): unpaced, how many the uncounted chats ran followed
 * their speed (one per ~180 ms: 610 over the 2500 chats after the full collection under valgrind at
 * load 10–17, 2.7 sessions each), and that path's functions reach V8's optimizing compiler only
 * after ~650–770 evictions (pg's writer), ~1250–1370 (`Query`, `Result`), ~1660 (the pool's
 * `connect`, `_release`; `bench/pg-evict-trace.ts`), so the counted chats (one eviction each) ran
 * part of it unoptimized, more of it the faster the warm-up had gone (session 24, bench/FINDINGS.md). With a read after each, every uncounted chat's eviction runs
 * before the next chat, and pg's query path runs twice per chat more: optimized before counting
 * in every run. The counted chats are not followed by reads.
 */
const READS = process.env.BENCH_INSTRUCTIONS_READS !== "0";

/**
 * Server processes per row (`BENCH_INSTRUCTIONS_PROCESSES=N`, default 1); with more than one the
 * row's figure is the fewest instructions per chat among them, the processes run in rounds (one of
 * each row per round). Sessions 20–21 ran three for the rows with a target against the floor: a
 * process counted in one of two modes (the floor 0.70 or 0.74 M per chat), which the fewest of three
 * did not remove (the mode followed the time). Session 22 found the cause, a new connection at the
 * counted chats' start (see `countServer`), and removed it: one process per row repeats, at a third
 * of the time.
 */
const PROCESSES = process.env.BENCH_INSTRUCTIONS_PROCESSES === undefined ? 1 : Number(process.env.BENCH_INSTRUCTIONS_PROCESSES);
if (!(Number.isInteger(PROCESSES) && PROCESSES >= 1)) throw new Error(`BENCH_INSTRUCTIONS_PROCESSES must be a whole number ≥ 1, not ${process.env.BENCH_INSTRUCTIONS_PROCESSES}`);

/** One row: a server (its own process) and the protocol its chats go through. */
interface Row {
  server: string;
  protocol: Protocol;
  /** What `BENCH_INSTRUCTIONS_ROWS` names it by. */
  key: string;
}

function rows(): Row[] {
  const storeKey: Record<string, string> = { [FLOOR]: "floor", [OFF]: "off", [EMBEDDED]: "embedded", [POSTGRES]: "postgres", [IN_PROCESS]: "in-process" };
  const all: Row[] = [];
  // BENCH_INSTRUCTIONS_ROWS=floor,off,off/api/chat,off/ag-ui,embedded,embedded+session,embedded/api/chat,embedded/ag-ui,postgres,in-process (a subset; the floor always runs).
  const filter = process.env.BENCH_INSTRUCTIONS_ROWS?.split(",").map((word) => word.trim());
  for (const server of [FLOOR, OFF, EMBEDDED, ...(POSTGRES_URL ? [POSTGRES] : []), ...(filter?.includes("in-process") ? [IN_PROCESS] : [])]) {
    // The UI protocols on memory off and the default store (issue 29's rows); on the store, chat
    // completions naming its session too (their base), beside the plain row (issue 33's figure).
    const protocols = server === OFF ? PROTOCOLS : server === EMBEDDED ? [CHAT_COMPLETIONS, CHAT_COMPLETIONS_SESSION, UI_CHAT, AG_UI] : [CHAT_COMPLETIONS];
    for (const protocol of protocols) all.push({ server, protocol, key: storeKey[server] + protocolKey(protocol) });
  }
  return filter ? all.filter((row) => row.server === FLOOR || filter.includes(row.key)) : all;
}

/** A protocol's part of a row's key: "" for chat completions, "+session" naming its session, else its path. */
function protocolKey(protocol: Protocol): string {
  return protocol === CHAT_COMPLETIONS ? "" : protocol === CHAT_COMPLETIONS_SESSION ? "+session" : protocol.path;
}

/** Whether a protocol is chat completions (the rows ÷ floor). */
const isChatCompletions = (protocol: Protocol) => protocol === CHAT_COMPLETIONS || protocol === CHAT_COMPLETIONS_SESSION;

/** One request on `agent`'s socket: its whole body read, then `check(status, body)` (throws to reject). */
function exchange(options: RequestOptions, body: string | undefined, check: (status: number | undefined, body: string) => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const request = httpRequest(options, (response) => {
      response.setEncoding("utf8");
      let text = "";
      response.on("data", (chunk: string) => {
        text += chunk;
      });
      response.on("error", reject);
      response.on("end", () => {
        try {
          check(response.statusCode, text);
          resolve();
        } catch (error) {
          reject(error);
        }
      });
    });
    request.on("error", reject);
    request.end(body);
  });
}

/** One streaming chat on `agent`'s socket; checks the streamed answer. */
function chat(port: number, agent: HttpAgent, protocol: Protocol, index: number): Promise<void> {
  const chatBody = protocol.body(index);
  const headers = { "content-type": "application/json", "content-length": Buffer.byteLength(chatBody), ...protocol.headers?.(index) };
  return exchange({ host: "127.0.0.1", port, path: protocol.path, method: "POST", agent, headers }, chatBody, (status, body) => checkAnswer(protocol, status, body, protocol.path));
}

/**
 * One read of the sessions list (`GET /v1/sessions?limit=1`) on `agent`'s connection: a store's
 * read first runs the eviction waiting for its gap (see `READS`).
 */
function readSessions(port: number, agent: HttpAgent): Promise<void> {
  return exchange({ host: "127.0.0.1", port, path: "/v1/sessions?limit=1", method: "GET", agent }, undefined, (status, body) => {
    if (status !== 200 || !body.includes('"sessions"')) throw new Error(`GET /v1/sessions answered ${status}: ${body.slice(0, 200)}`);
  });
}

/** Chats and reads sent again on a new connection (see `chats`). */
let retried = 0;
/** Numbers the chats, so each UI chat is a session of its own. */
let chatCount = 0;

/** Sends a request; once more after a connection reset (see `chats`). */
async function onceMoreAfterReset(send: () => Promise<void>): Promise<void> {
  try {
    await send();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ECONNRESET") throw error;
    retried++;
    await send();
  }
}

/**
 * Sends `count` chats one after another on `agent`'s one keep-alive connection (the same work, in
 * the same order, every run). A server under valgrind on a loaded machine can sit descheduled past
 * its keep-alive timeout (5 s) with our next request already sent: its timer closes the connection
 * first and the request fails with ECONNRESET. Such a chat (or read, `read`: PostgreSQL's row, see
 * `READS`) is sent once more, on a new connection (counted in the notes).
 */
async function chats(port: number, agent: HttpAgent, count: number, protocol: Protocol, pauseMs = 0, read = false): Promise<void> {
  for (let index = 0; index < count; index++) {
    const number = chatCount++;
    await onceMoreAfterReset(() => chat(port, agent, protocol, number));
    if (read) await onceMoreAfterReset(() => readSessions(port, agent));
    if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}

function callgrindControl(option: string, pid: number): void {
  const result = spawnSync("callgrind_control", [option, String(pid)], { encoding: "utf8" });
  if (result.status !== 0 || !result.stdout.includes("OK")) throw new Error(`callgrind_control ${option} ${pid} failed: ${result.stdout}${result.stderr}`);
}

interface Count {
  row: Row;
  instructionsPerChat: number;
  /** Of those, V8's optimizing compiler (TurboFan, `v8::internal::compiler::`), per chat. */
  compilerPerChat: number;
  /** Of the counted instructions, V8's full (mark-compact) collections, per chat (see `majorGcInstructions`). */
  majorGcPerChat: number;
  /** Every process's instructions per chat, in the order they ran (the figure is the fewest: PROCESSES). */
  processes?: number[];
}

/**
 * Every row's count: PROCESSES server processes per row, the fewest instructions per chat. The
 * processes run in rounds (each row's first, then each row's second, ...), not a row's back to back:
 * the floor's mode follows the time its processes run in (session 20: all three of one run's floor
 * processes, back to back at its start, counted in the high mode and none of the other rows'), so a
 * row's processes are spread over the whole run and every row samples the same stretch of time.
 */
async function countRows(all: Row[], directory: string): Promise<Count[]> {
  const perRow = all.map(() => [] as Count[]);
  for (let round = 0; round < PROCESSES; round++) {
    for (const [index, row] of all.entries()) perRow[index].push(await countServer(row, directory));
  }
  return perRow.map((counts) => {
    const fewest = counts.reduce((best, count) => (count.instructionsPerChat < best.instructionsPerChat ? count : best));
    return { ...fewest, processes: counts.map((count) => count.instructionsPerChat) };
  });
}

/**
 * Instructions in V8's optimizing compiler in a dump (`callgrind_annotate`, per function). It
 * compiles when a function gets hot or after a deoptimization, mostly on a background thread, so
 * how much of it falls into the counted chats depends on timing: 50 warm-up chats left 40–60 % of
 * the agent server's count in it and the total moved ~5 % run to run. The measure leaves it out.
 */
export function compilerInstructions(dump: string): number {
  return dumpParts(dump).compiler;
}

/**
 * The optimizing compiler's instructions in a dump, and V8's full collections' (mark-compact: its
 * marking, sweeping and compaction functions). A full collection comes when the old generation
 * reaches its limit, every few hundred chats here (~14 KB promoted per chat on the embedded store),
 * and costs ~45 M instructions: whether one falls in the counted chats moves a row by ~0.45 M per
 * chat (session 16, bench/FINDINGS.md). Still counted; shown beside the figure so a row's change can
 * be told from one.
 */
export function dumpParts(dump: string): { compiler: number; majorGc: number } {
  const result = spawnSync("callgrind_annotate", ["--inclusive=no", "--threshold=100", dump], { encoding: "utf8", maxBuffer: 256 * 2 ** 20 });
  if (result.status !== 0) throw new Error(`callgrind_annotate ${dump} failed: ${result.stderr}`);
  let compiler = 0;
  let majorGc = 0;
  for (const line of result.stdout.split("\n")) {
    const match = /^\s*([\d,]+)\s.*?(v8::internal::compiler::|v8::internal::\S*(?:MarkCompact|Marking|Sweeper|MarkingVisitor))/.exec(line);
    if (!match) continue;
    const count = Number(match[1].replaceAll(",", ""));
    if (match[2] === "v8::internal::compiler::") compiler += count;
    else majorGc += count;
  }
  return { compiler, majorGc };
}

/** Starts one server under callgrind, warms it, counts MEASURED chats; returns instructions per chat. */
async function countServer(row: Row, directory: string): Promise<Count> {
  const { server, protocol } = row;
  const env: Record<string, string> = { BENCH_CHUNK_DELAY_MS: "0" };
  let schema: string | undefined;
  let storeDirectory: string | undefined;
  if (server === OFF) env.BENCH_SERVER_MEMORY = "off";
  if (server === IN_PROCESS) env.BENCH_SERVER_MEMORY = "memory";
  if (server === EMBEDDED) {
    storeDirectory = mkdtempSync(join(tmpdir(), "agentloop-bench-instructions-"));
    Object.assign(env, { BENCH_SERVER_MEMORY: "embedded", BENCH_SERVER_MEMORY_PATH: storeDirectory });
  }
  if (server === POSTGRES) {
    schema = `bench_instr_${process.pid}_${Date.now()}`;
    Object.assign(env, { BENCH_SERVER_MEMORY: "postgres", BENCH_SERVER_POSTGRES_URL: POSTGRES_URL!, BENCH_SERVER_POSTGRES_SCHEMA: schema });
  }
  const outFile = join(directory, `${row.key.replaceAll("/", "-")}.%p.out`);
  const traceFile = join(directory, `${row.key.replaceAll("/", "-")}.trace`);
  const child = await startChild(server === FLOOR ? "./server-floor.ts" : "./server-agentloop.ts", [], env, {
    prefix: ["valgrind", "-q", "--tool=callgrind", "--instr-atstart=no", `--callgrind-out-file=${outFile}`],
    // One thread for V8 (its compiler and GC on the main thread): code is optimized at the same
    // points of the same work every run. With background compilation, which functions ran
    // optimized during the counted chats varied, and the count with them (±20 %). A fixed young
    // generation of 1 MB: many young collections in the counted chats, of a size V8 does not
    // resize by timing (left to V8, or fixed at 16 MB, the count moved ±5–30 %; bench/FINDINGS.md).
    // --expose-gc: a full collection just before the counted chats (FULL_GC_FIRST). No memory
    // reducer: it starts full collections by the clock, when the process looks idle (as in the
    // pauses between counted chats), so whether one fell in the counted chats followed the clock.
    nodeArgs: ["--single-threaded", "--min-semi-space-size=1", "--max-semi-space-size=1", "--expose-gc", "--no-memory-reducer", ...(TRACE ? traceArgs(traceFile) : [])],
  });
  const phases: number[] = [];
  /** PostgreSQL's store counters and the time at each phase's end (the store's work per phase, printed for its row). */
  const stages: { name: string; at: number; counters?: Record<string, number> }[] = [{ name: "start", at: Date.now() }];
  const stage = async (name: string) => stages.push({ name, at: Date.now(), ...(schema ? { counters: await storeCounters(schema) } : {}) });
  const mark = () => phases.push(TRACE ? traceSize(traceFile) : 0);
  // One connection for the whole process, warm-up and counted chats alike: a new connection at the
  // counted chats' start (the warm-up's closed as the next opened, in whichever order the server saw
  // them) deoptimized node's stream and HTTP functions there (`Readable.read`, `flow`,
  // `parserOnHeadersComplete`, `resOnFinish`, ... "wrong map"), and whether they were optimized again
  // before the window's end decided the floor's two modes (0.70 / 0.74 M per chat; session 22).
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
  try {
    const reads = READS && server === POSTGRES;
    await chats(child.port, agent, WARM_UP, protocol, 0, reads);
    mark();
    await stage("warm-up");
    if (FULL_GC_FIRST) {
      let answer = await child.ask("gc");
      // A trace's lines V8 writes to stdout (not to the trace's file) come first: read on to the answer.
      for (let lines = 0; TRACE && answer !== "gc done" && lines < 10_000; lines++) answer = await child.ask("");
      if (answer !== "gc done") throw new Error(`${row.key}: the full collection before the counted chats failed: ${answer}`);
      mark();
      await stage("full collection");
      await chats(child.port, agent, AFTER_GC, protocol, 0, reads);
    }
    mark();
    await stage("after it");
    await chats(child.port, agent, REHEARSAL, protocol, PAUSE_MS);
    // The pause before the first counted chat too: the work the uncounted chats left behind (an
    // eviction of PostgreSQL's store waiting for its 100 ms gap, with a backlog of sessions that
    // depended on the chats' speed) is done before counting starts (session 23).
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
    await stage("rehearsal");
    const before = stages.at(-1)!.counters;
    mark();
    callgrindControl("--instr=on", child.ownPid);
    callgrindControl("--zero", child.ownPid);
    await chats(child.port, agent, MEASURED, protocol, PAUSE_MS);
    callgrindControl("--dump", child.ownPid);
    mark();
    if (schema && before) {
      // The statistics views lag up to a second behind the server's statements (PostgreSQL 15 flushes a backend's counts at most once a second).
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await stage("counted");
      console.log(`${row.key}: store per phase (counters' advance; the statistics views' may lag by up to a second): ${storeReport(stages)}`);
    }
    if (TRACE) console.log(`${row.key}: ${traceReport(traceFile, phases)}`);
  } finally {
    agent.destroy();
    await child.close();
    if (storeDirectory) rmSync(storeDirectory, { recursive: true, force: true });
    if (schema) await dropSchema(schema);
  }
  const prefix = outFile.replace("%p", String(child.ownPid)).split("/").pop()!;
  const dump = readdirSync(directory).find((name) => name.startsWith(`${prefix}.`));
  if (!dump) throw new Error(`no callgrind dump ${prefix}.N in ${directory}`);
  const totals = /^summary:\s+(\d+)/m.exec(readFileSync(join(directory, dump), "utf8"));
  if (!totals) throw new Error(`no summary line in ${dump}`);
  const { compiler, majorGc } = dumpParts(join(directory, dump));
  if (process.env.BENCH_INSTRUCTIONS_KEEP) console.log(`${row.key}: ${join(directory, dump)}`);
  return { row, instructionsPerChat: (Number(totals[1]) - compiler) / MEASURED, compilerPerChat: compiler / MEASURED, majorGcPerChat: majorGc / MEASURED };
}

/**
 * `BENCH_INSTRUCTIONS_TRACE=1` (a diagnosis, not the measure: the trace's own writes are counted):
 * each server with `--trace-opt --trace-deopt` written to a file of its own, and per phase (warm-up,
 * after the full collection, counted chats) the TurboFan compilations and deoptimizations printed.
 */
const TRACE = process.env.BENCH_INSTRUCTIONS_TRACE === "1";
const traceArgs = (file: string) => ["--trace-opt", "--trace-deopt", "--redirect-code-traces", `--redirect-code-traces-to=${file}`];
function traceSize(file: string): number {
  try {
    return readFileSync(file).length;
  } catch {
    return 0;
  }
}
function traceReport(file: string, phases: number[]): string {
  const text = readFileSync(file);
  const phaseNames = ["warm-up", "full collection", "after it", "rehearsal", "counted"];
  const parts = [0, ...phases].slice(0, -1).map((start, index) => {
    const part = text.subarray(start, phases[index]).toString("utf8");
    const compiled = part.split("[completed compiling").length - 1;
    const bailouts = part.split("\n").filter((line) => line.startsWith("[bailout"));
    const marked = part.split("\n").filter((line) => line.includes("for deoptimization"));
    const names = part.split("\n").filter((line) => line.startsWith("[completed compiling"));
    const detail = index === phases.length - 1 ? ` ${[...names, ...bailouts, ...marked].map((line) => line.replace(/0x[0-9a-f]+/g, "").slice(0, 160)).join(" | ")}` : "";
    return `${phaseNames[index] ?? index}: ${compiled} compiled, ${bailouts.length} bailouts, ${marked.length} marked for deoptimization${detail}`;
  });
  return parts.join("; ");
}

/**
 * PostgreSQL's counters of a schema's store: the sequences every group write and every event
 * advance, the sessions, and from the statistics views the sessions table's sequential scans (about
 * one per eviction, its `count(*)`; not exact: a statement's plan may scan the table too, e.g. a
 * prepared statement planned while the table was small) and deleted rows (exact: the evictions').
 */
async function storeCounters(schema: string): Promise<Record<string, number>> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT (SELECT last_value FROM "${schema}".agentloop_session_activity) AS activity, (SELECT last_value FROM "${schema}".agentloop_events_id_seq) AS events, (SELECT count(*) FROM "${schema}".agentloop_sessions) AS sessions,
              s.seq_scan, s.n_tup_del FROM pg_stat_user_tables s WHERE s.schemaname = $1 AND s.relname = 'agentloop_sessions'`,
      [schema],
    );
    const row = rows[0] ?? {};
    // Our own count(*) above is a sequential scan too: not the server's (one per reading, taken off).
    return { "activity nextvals": Number(row.activity), "events": Number(row.events), "sessions": Number(row.sessions), "evictions (seq scans)": Number(row.seq_scan), "sessions deleted": Number(row.n_tup_del) };
  } finally {
    await client.end();
  }
}

/** Each phase's chats' time and the store counters' advance, per chat and in all (the evictions' count less our own readings' scans). */
function storeReport(stages: { name: string; at: number; counters?: Record<string, number> }[]): string {
  const parts: string[] = [];
  for (let index = 1; index < stages.length; index++) {
    const [from, to] = [stages[index - 1], stages[index]];
    const chatsIn = to.counters && from.counters ? to.counters["activity nextvals"] - from.counters["activity nextvals"] : 0;
    const seconds = (to.at - from.at) / 1000;
    const delta = (key: string) => (to.counters?.[key] ?? 0) - (from.counters?.[key] ?? 0) - (key === "evictions (seq scans)" && from.counters ? 1 : 0);
    const keys = ["activity nextvals", "events", "sessions", "evictions (seq scans)", "sessions deleted"];
    parts.push(`${to.name}: ${format(seconds, 1)} s, ${keys.map((key) => `${key} ${delta(key)}${chatsIn > 0 ? ` (${format(delta(key) / chatsIn, 2)}/chat)` : ""}`).join(", ")}`);
  }
  return parts.join("; ");
}

async function dropSchema(schema: string): Promise<void> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

export async function runInstructionsScenario(options: BenchOptions): Promise<ScenarioReport> {
  const machine = machineInfo();
  const valgrind = spawnSync("valgrind", ["--version"], { encoding: "utf8" });
  if (valgrind.status !== 0) throw new Error("scenario 10 needs valgrind (Debian: apt-get install valgrind)");
  const directory = mkdtempSync(join(tmpdir(), "agentloop-callgrind-"));
  const counts: Count[] = [];
  try {
    counts.push(...(await countRows(rows(), directory)));
  } finally {
    if (process.env.BENCH_INSTRUCTIONS_KEEP) console.log(`callgrind files kept in ${directory}`);
    else rmSync(directory, { recursive: true, force: true });
  }
  const floor = counts[0].instructionsPerChat;
  /** A UI protocol's base on `server`: chat completions with memory off, naming its session on a store. */
  const baseProtocol = (server: string) => (server === OFF ? CHAT_COMPLETIONS : CHAT_COMPLETIONS_SESSION);
  const chatCompletions = (server: string) => counts.find((count) => count.row.server === server && count.row.protocol === baseProtocol(server));
  const results = counts.map((count) => {
    const { server, protocol } = count.row;
    const ratio = count.instructionsPerChat / floor;
    if (isChatCompletions(protocol)) {
      // The issue-33 target is the plain row's; the row naming its session is the UI rows' base.
      const target = protocol === CHAT_COMPLETIONS ? TARGETS[server] : undefined;
      return { ...count, ratio, target: target === undefined ? "" : `≤ ${target}× floor`, met: target === undefined ? undefined : ratio <= target };
    }
    const base = chatCompletions(server);
    const ofBase = base ? count.instructionsPerChat / base.instructionsPerChat : undefined;
    return { ...count, ratio, ofBase, target: `≤ ${PROTOCOL_TARGET}× ${baseProtocol(server).name}`, met: ofBase === undefined ? undefined : ofBase <= PROTOCOL_TARGET };
  });
  const millions = (value: number) => format(value / 1e6, 3);
  const storeName = (server: string) => server.replace("agentloop serve, ", "");
  return {
    id: "instructions",
    title: "10. Server: instructions per chat (callgrind)",
    machine,
    quick: options.quick,
    details: [
      markdownTable(
        ["server", "protocol", "instructions / chat (M)", "÷ floor", "÷ chat completions", "target", "met", "each process (M; the fewest counts)", "+ optimizing compiler / chat (M, not counted)", "of which full GCs / chat (M, counted)"],
        results.map((result) => [
          result.row.server,
          result.row.protocol.name,
          millions(result.instructionsPerChat),
          format(result.ratio, 3),
          "ofBase" in result && result.ofBase !== undefined ? format(result.ofBase, 3) : "",
          result.target,
          result.met === undefined ? "" : result.met ? "yes" : "**no**",
          (result.processes ?? []).map(millions).join(", "),
          millions(result.compilerPerChat),
          millions(result.majorGcPerChat),
        ]),
      ),
    ],
    summary: results
      .filter((result) => result.row.server !== FLOOR)
      .map((result) => {
        const ofFloor = isChatCompletions(result.row.protocol);
        const base = ofFloor ? floor : (chatCompletions(result.row.server)?.instructionsPerChat ?? Number.NaN);
        const label = result.row.protocol === CHAT_COMPLETIONS ? "" : ` ${result.row.protocol.name}`;
        return {
          scenario: "10 instructions",
          metric: `instructions / chat (M), ${storeName(result.row.server)}${label}`,
          values: { [ofFloor ? "raw-fetch" : "chat-completions"]: base / 1e6, agentloop: result.instructionsPerChat / 1e6 },
          target: result.target,
          met: result.met,
        };
      }),
    notes: [
      `Each server under \`valgrind --tool=callgrind --instr-atstart=no\`, unpaced (BENCH_CHUNK_DELAY_MS=0): ${WARM_UP} streaming chats one after another on one keep-alive connection (not counted), ${FULL_GC_FIRST ? `a full collection (\`--expose-gc\`) and ${AFTER_GC} more chats (not counted), ` : ""}${REHEARSAL > 0 ? `${REHEARSAL} chats paced as the counted ones (not counted, BENCH_INSTRUCTIONS_REHEARSAL), ` : ""}${READS ? "on PostgreSQL's row each of those chats followed by a read of the sessions list (`GET /v1/sessions?limit=1`, which runs the eviction waiting for the store's 100 ms gap first: the uncounted chats' evictions do not follow their speed; BENCH_INSTRUCTIONS_READS=0 for none), " : ""}then counting on and zeroed (\`callgrind_control\`), ${MEASURED} chats the same way, each followed by a pause of ${PAUSE_MS} ms (the work a chat leaves behind, a WAL checkpoint, an eviction or a lock release, done before the next), the count dumped: instructions per chat = the dump's total, less V8's optimizing compiler (\`v8::internal::compiler::\` functions in \`callgrind_annotate\`: when it runs depends on timing), ÷ ${MEASURED}. Every thread of the server's process counts (event loop, GC and compiler threads, libuv's pool, the embedded store's writer); PostgreSQL runs in its own process and is not counted. The client runs outside valgrind.`,
      PROCESSES === 1
        ? "One server process per row, all its chats (warm-up and counted) on one keep-alive connection: a new connection at the counted chats' start deoptimized node's stream and HTTP functions there, and whether they were optimized again within the window made two modes ~6 % apart (sessions 19–22)."
        : `Each row's figure is the fewest instructions per chat of ${PROCESSES} server processes, run in rounds, one process of each row per round (BENCH_INSTRUCTIONS_PROCESSES).`,
      "Each row is a server process of its own, whose chats all go through the row's protocol: `/api/chat` gets the body `useChat` sends for a new chat, `/ag-ui` a RunAgentInput, each chat a new session. The UI protocols' target is their cost beside chat completions on the same store (issue 29): with memory off the plain chat completions row, on a store the row naming its session (`x-session-id`, a new one per chat, as `id` and `threadId` do), since a named session takes the session's lock and loads its history before the run and an unnamed one skips both.",
      "One chat at a time, so each store's group commit holds one chat's appends (the worst case for grouping, and the same groups every run).",
      `Chats (and reads) sent again after a connection reset by a descheduled server's keep-alive timer: ${retried}.`,
    ],
  };
}

if (isMain(import.meta.url)) {
  const options = parseBenchOptions();
  publish(await runInstructionsScenario(options), options);
}
