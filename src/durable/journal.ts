// A run's journal: the items (the server's SSE chunks) made from its events, kept in the run's DBOS
// stream so any process reads them, live from the process that runs it.
import { DBOS, Error as DBOSErrors } from "@dbos-inc/dbos-sdk";
import type { JournalEntry } from "./types.js";

// Stryker disable next-line StringLiteral: the stream's name, written and read from here (any name does)
const JOURNAL_KEY = "agentloop.journal";

/**
 * The journal of one execution of a run in this process: its items (seq = index + 1), handed to
 * local readers as they come and written to the run's DBOS stream in batches, before each step and
 * at the end. A stream write is an operation of the workflow (numbered like a step), so a recovered
 * run does not write again what was written: the batches before the crash are skipped on replay.
 */
export class Journal {
  readonly items: string[] = [];
  private written = 0;
  private readonly writes: Promise<void>[] = [];
  ended = false;
  readonly readers = new Set<() => void>();

  push(item: string): void {
    this.items.push(item);
    for (const wake of this.readers) wake();
  }
  /** Writes what is not written yet (called in the workflow, before a step: its number is taken now). */
  flush(): void {
    if (this.written === this.items.length) return;
    // Writes may commit out of order (each takes the stream's next offset): a batch says where it starts.
    const batch: JournalBatch = { from: this.written + 1, items: this.items.slice(this.written) };
    this.written = this.items.length;
    const write = DBOS.writeStream(JOURNAL_KEY, batch);
    write.catch(() => undefined);
    this.writes.push(write);
  }
  async close(): Promise<void> {
    this.flush();
    await Promise.all(this.writes);
    await DBOS.closeStream(JOURNAL_KEY);
    this.ended = true;
    for (const wake of this.readers) wake();
  }
}

interface JournalBatch {
  /** The seq of the first item. */
  from: number;
  items: string[];
}

/** The journals of the runs executing in this process, and readers waiting for a run to start here. */
export const journals = new Map<string, Journal>();
export const journalWaiters = new Map<string, Set<() => void>>();

/** The journal of the run whose workflow is calling (flushed before its next step). */
export function flushJournal(): void {
  const runId = DBOS.workflowID;
  if (runId) journals.get(runId)?.flush();
}

/**
 * Reads a run's journal after `after`: from the run's execution in this process when there is one
 * (live, item by item), else from the database (batch by batch, as the run writes them). Both give
 * the same items at the same positions, so the reader takes each position once, from whichever
 * source has it first. A run that does not exist (not started yet, or a wrong id) fails the read.
 */
export async function* readJournal(runId: string, after: number): AsyncGenerator<JournalEntry> {
  let cursor = after;
  let done = false;
  let wake: (() => void) | undefined;
  const signal = () => {
    const resume = wake;
    wake = undefined;
    resume?.();
  };
  const fromDatabase = new Map<number, string>();
  let databaseEnded = false;
  let databaseError: unknown;
  // The database: every batch the run wrote, in order, to the stream's end (or the run's). DBOS
  // wakes the read when a batch is written (LISTEN/NOTIFY); the poll is its fallback. Not read while
  // the run executes here (many clients reattaching to the replica that recovered their runs would
  // only take its pool's connections): started when it does not, or stops doing so unfinished.
  let reading = false;
  const readDatabase = () => {
    if (reading) return;
    reading = true;
    const stream = DBOS.readStream<JournalBatch>(runId, JOURNAL_KEY, { pollingIntervalMs: 200 });
    void (async () => {
      try {
        for await (const batch of stream) {
          batch.items.forEach((item, index) => {
            if (batch.from + index > cursor) fromDatabase.set(batch.from + index, item);
          });
          signal();
          if (done) break;
        }
      } catch (error) {
        // No run of that id (yet): said so, naming it, rather than waiting (a wrong id would wait for good).
        databaseError =
          error instanceof DBOSErrors.DBOSNonExistentWorkflowError ? new Error(`durable readJournal: no run "${runId}" (a run's journal is readable once run() has returned its id)`) : error;
      }
      databaseEnded = true;
      signal();
    })();
  };
  // This process: the run's journal while it executes here (or once it starts here).
  let local = journals.get(runId);
  if (!local) readDatabase();
  const onLocal = () => {
    local ??= journals.get(runId);
    if (local && !local.readers.has(signal)) local.readers.add(signal);
    signal();
  };
  let waiters = journalWaiters.get(runId);
  if (!local) {
    if (!waiters) journalWaiters.set(runId, (waiters = new Set()));
    waiters.add(onLocal);
  } else local.readers.add(signal);
  try {
    for (;;) {
      let progressed = false;
      if (local) {
        while (cursor < local.items.length) {
          cursor++;
          fromDatabase.delete(cursor);
          progressed = true;
          yield { seq: cursor, item: local.items[cursor - 1]! };
        }
        if (local.ended) return;
        const current = journals.get(runId);
        if (current && current !== local) {
          // A new execution of the run began here (a cancelled run resumed while the cancelled
          // execution had not let go of its journal): its items take the same positions.
          local.readers.delete(signal);
          local = current;
          local.readers.add(signal);
          continue;
        }
        // The execution here stopped unfinished (its process lost the run to another): the rest is in the database.
        if (!current) readDatabase();
      }
      while (fromDatabase.has(cursor + 1)) {
        cursor++;
        const item = fromDatabase.get(cursor)!;
        fromDatabase.delete(cursor);
        progressed = true;
        yield { seq: cursor, item };
      }
      if (reading && databaseEnded && !fromDatabase.has(cursor + 1)) {
        if (databaseError) throw databaseError;
        return;
      }
      if (!progressed) await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    done = true;
    waiters?.delete(onLocal);
    if (waiters?.size === 0 && journalWaiters.get(runId) === waiters) journalWaiters.delete(runId);
    local?.readers.delete(signal);
  }
}
