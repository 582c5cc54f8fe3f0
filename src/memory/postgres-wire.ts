/**
 * A named statement written to a `pg` connection by hand (pg's `Submittable` interface, the one
 * pg-cursor uses): what the PostgreSQL store's group commit runs once per group. Against pg's own
 * `Query` it skips what this statement does not need: the Describe message and the row
 * description it brings back (the store knows its columns), the result object and its type
 * parsers (rows come back as text columns in the statement's order), the event emitter, and four
 * buffers and writes per run (here one). Measured under callgrind, one group of a chat's four
 * events: (bench/README.md, issue 33).
 */
import type pg from "pg";
import type { TextRow } from "./sql-store.js";

/** What pg's Connection keeps of named statements (pg 8: `Query` reads and writes the same fields). */
interface NamedStatements {
  stream: { write(data: Uint8Array): boolean };
  /** Parsed on this connection (set by the client on ParseComplete). */
  parsedStatements: Record<string, string>;
  /** Sent, not acknowledged yet (the client removes it when the statement fails). */
  submittedNamedStatements: Record<string, string>;
}

const noCallback = () => {};

/** One run of a named statement with text parameters; `callback` gets its rows, or the error. */
export class WireStatement implements pg.Submittable {
  private readonly rows: TextRow[] = [];

  constructor(
    /** pg's client reads `name` and `text`: it records the statement as parsed on ParseComplete. */
    readonly name: string,
    readonly text: string,
    private readonly values: ReadonlyArray<string | null>,
    public callback: (error: Error | undefined, rows?: TextRow[]) => void,
  ) {}

  submit(connection: pg.Connection): void {
    const statements = connection as unknown as NamedStatements;
    // Parsed once per connection, as pg's own named queries are (the same bookkeeping).
    const parse = statements.parsedStatements[this.name] === undefined && statements.submittedNamedStatements[this.name] === undefined;
    if (parse) statements.submittedNamedStatements[this.name] = this.text;
    statements.stream.write(encodeRun(parse ? this.text : undefined, this.name, this.values));
  }

  handleDataRow(message: { fields: TextRow }): void {
    this.rows.push(message.fields);
  }

  handleError(error: Error): void {
    const callback = this.callback;
    this.callback = noCallback;
    callback(error);
  }

  handleReadyForQuery(): void {
    const callback = this.callback;
    this.callback = noCallback;
    callback(undefined, this.rows);
  }

  // Messages this statement does not cause (no Describe, no COPY, no row limit); pg's client calls
  // these when the server sends them.
  handleRowDescription(): void {}
  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(connection: pg.Connection): void {
    (connection as unknown as { sendCopyFail(message: string): void }).sendCopyFail("agentloop: no COPY here");
  }
  handleCopyData(): void {}
}

/**
 * The messages of one run, in one buffer: Parse (only when `text` is given), Bind (every parameter
 * and every result column as text), Execute (all rows), Sync. PostgreSQL frontend protocol 3.0.
 */
export function encodeRun(text: string | undefined, name: string, values: ReadonlyArray<string | null>): Buffer {
  const nameBytes = Buffer.byteLength(name);
  const lengths = new Array<number>(values.length);
  let valueBytes = 0;
  for (let index = 0; index < values.length; index++) {
    const value = values[index];
    const length = value === null ? -1 : Buffer.byteLength(value);
    lengths[index] = length;
    valueBytes += 4 + Math.max(length, 0);
  }
  // Each message: a type byte and an int32 length that counts itself and what follows.
  const parseLength = text === undefined ? 0 : 4 + nameBytes + 1 + Buffer.byteLength(text) + 1 + 2;
  const bindLength = 4 + 1 + nameBytes + 1 + 2 + 2 + valueBytes + 2;
  const buffer = Buffer.allocUnsafe((parseLength > 0 ? 1 + parseLength : 0) + 1 + bindLength + 10 + 5);
  let at = 0;
  if (text !== undefined) {
    buffer[at] = 0x50; // Parse: statement name, text, no parameter types (the server infers them).
    buffer.writeInt32BE(parseLength, at + 1);
    at += 5;
    at += buffer.write(name, at);
    buffer[at++] = 0;
    at += buffer.write(text, at);
    buffer[at++] = 0;
    buffer.writeInt16BE(0, at);
    at += 2;
  }
  buffer[at] = 0x42; // Bind: the unnamed portal, the statement, text parameters, text results.
  buffer.writeInt32BE(bindLength, at + 1);
  at += 5;
  buffer[at++] = 0;
  at += buffer.write(name, at);
  buffer[at++] = 0;
  buffer.writeInt16BE(0, at);
  buffer.writeInt16BE(values.length, at + 2);
  at += 4;
  for (let index = 0; index < values.length; index++) {
    const length = lengths[index];
    buffer.writeInt32BE(length, at);
    at += 4;
    if (length > 0) at += buffer.write(values[index] as string, at);
  }
  buffer.writeInt16BE(0, at);
  at += 2;
  buffer[at] = 0x45; // Execute: the unnamed portal, every row.
  buffer.writeInt32BE(9, at + 1);
  buffer[at + 5] = 0;
  buffer.writeInt32BE(0, at + 6);
  at += 10;
  buffer[at] = 0x53; // Sync: ends the implicit transaction.
  buffer.writeInt32BE(4, at + 1);
  return buffer;
}
