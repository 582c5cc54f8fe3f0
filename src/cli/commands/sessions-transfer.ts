/**
 * `agentloop sessions export` / `import`: a store's event log as JSON lines (one `MemoryEvent` a
 * line, each session's events in seq order, least recently updated session first), to move
 * sessions between stores: embedded → PostgreSQL and back.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { createInterface } from "node:readline";
import { AgentLoopError } from "../../errors.js";
import type { MemoryStore, NewMemoryEvent } from "../../memory/index.js";
import { openCliStore } from "../agent-setup.js";
import type { CommandIO } from "./sessions.js";

/** Events appended per call when importing (one transaction each). */
const IMPORT_BATCH = 500;

export interface ExportOptions {
  agent?: string;
  /** Write to this file instead of stdout. */
  output?: string;
}

/** Writes the events of `sessionIds` (default: every session) as JSON lines. Exit code 1 when a named session does not exist. */
export async function exportSessionsCommand(sessionIds: string[], options: ExportOptions, io: CommandIO = process): Promise<number> {
  const store = await openCliStore(options.agent, io.env);
  try {
    const ids = sessionIds.length > 0 ? sessionIds : (await store.listSessions()).map((session) => session.session_id);
    for (const id of sessionIds) {
      if (!(await store.getSession(id))) {
        io.stderr.write(`agentloop: session "${id}" not found (list them with: agentloop sessions)\n`);
        return 1;
      }
    }
    const out: NodeJS.WritableStream = options.output ? createWriteStream(options.output) : io.stdout;
    let events = 0;
    for (const id of ids) {
      const lines = (await store.events(id)).map((event) => `${JSON.stringify(event)}\n`);
      events += lines.length;
      if (lines.length > 0 && !out.write(lines.join(""))) await new Promise((resolve) => out.once("drain", resolve));
    }
    if (options.output) {
      await new Promise<void>((resolve, reject) => {
        out.on("error", reject);
        out.end(resolve);
      });
    }
    io.stderr.write(`exported ${events} events of ${ids.length} sessions\n`);
    return 0;
  } finally {
    await store.close();
  }
}

interface ImportedEvent extends NewMemoryEvent {
  session_id: string;
}

/** Parses and checks every line first: a bad line imports nothing and names its line number. */
async function readEventLines(input: NodeJS.ReadableStream): Promise<ImportedEvent[]> {
  const events: ImportedEvent[] = [];
  let number = 0;
  for await (const line of createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
    number++;
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new AgentLoopError("invalid_request", `line ${number}: not JSON (${(error as Error).message})`);
    }
    const event = value as Partial<ImportedEvent> | null;
    if (typeof event !== "object" || event === null || Array.isArray(event)) throw new AgentLoopError("invalid_request", `line ${number}: expected an event object`);
    if (typeof event.session_id !== "string" || event.session_id === "") throw new AgentLoopError("invalid_request", `line ${number}: session_id must be a non-empty string`);
    if (typeof event.event_type !== "string" || event.event_type === "") throw new AgentLoopError("invalid_request", `line ${number}: event_type must be a non-empty string`);
    if (event.timestamp !== undefined && (typeof event.timestamp !== "string" || Number.isNaN(Date.parse(event.timestamp)))) {
      throw new AgentLoopError("invalid_request", `line ${number}: timestamp must be an ISO 8601 time`);
    }
    if (event.metadata !== undefined && (typeof event.metadata !== "object" || event.metadata === null || Array.isArray(event.metadata))) {
      throw new AgentLoopError("invalid_request", `line ${number}: metadata must be an object`);
    }
    if (event.event_id !== undefined && (typeof event.event_id !== "string" || event.event_id === "")) {
      throw new AgentLoopError("invalid_request", `line ${number}: event_id must be a non-empty string`);
    }
    events.push({
      session_id: event.session_id,
      event_type: event.event_type,
      event_id: event.event_id,
      timestamp: event.timestamp,
      content: event.content,
      metadata: event.metadata,
    });
  }
  return events;
}

/**
 * Appends every event to the store, session by session in the order they first appear (the
 * store gives them its own seqs, after any events the session already has). Events whose
 * `event_id` the session already holds are skipped, so an import can be run again.
 */
export async function importEvents(store: MemoryStore, events: readonly ImportedEvent[]): Promise<{ imported: number; skipped: number; sessions: number }> {
  const bySession = new Map<string, ImportedEvent[]>();
  for (const event of events) {
    const list = bySession.get(event.session_id);
    if (list) list.push(event);
    else bySession.set(event.session_id, [event]);
  }
  let imported = 0;
  let skipped = 0;
  for (const [sessionId, list] of bySession) {
    const known = new Set((await store.events(sessionId)).map((event) => event.event_id));
    const fresh = list.filter((event) => event.event_id === undefined || !known.has(event.event_id));
    skipped += list.length - fresh.length;
    for (let start = 0; start < fresh.length; start += IMPORT_BATCH) {
      const batch = fresh.slice(start, start + IMPORT_BATCH).map(({ session_id: _session, ...event }) => event);
      imported += (await store.append(sessionId, batch)).length;
    }
  }
  return { imported, skipped, sessions: bySession.size };
}

/** Reads JSON lines from `file` (default stdin, also `-`) into the store. Exit code 1 for bad input (nothing imported). */
export async function importSessionsCommand(
  file: string | undefined,
  options: { agent?: string },
  io: CommandIO & { stdin?: NodeJS.ReadableStream } = process,
): Promise<number> {
  const input = file === undefined || file === "-" ? (io.stdin ?? process.stdin) : createReadStream(file);
  let events: ImportedEvent[];
  try {
    events = await readEventLines(input);
  } catch (error) {
    const message = AgentLoopError.isInstance(error) ? error.message : `cannot read ${file}: ${(error as Error).message}`;
    io.stderr.write(`agentloop: import: ${message} (nothing was imported)\n`);
    return 1;
  }
  const store = await openCliStore(options.agent, io.env);
  try {
    const { imported, skipped, sessions } = await importEvents(store, events);
    io.stderr.write(`imported ${imported} events into ${sessions} sessions${skipped > 0 ? ` (${skipped} already there, skipped)` : ""}\n`);
    return 0;
  } finally {
    await store.close();
  }
}
