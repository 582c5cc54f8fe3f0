/**
 * The PostgreSQL store's appends as its group statement reads them: each append one JSON text,
 * `[session_id, [[event_id, timestamp, event_type, content, metadata], ...]]`, made when `append`
 * is called (so it is a copy: the caller may change its objects afterwards), by one
 * `JSON.stringify` of the whole append. A group is those texts in one JSON array; the events an
 * append returns are parsed back from its text (fresh objects, what JSON makes of them, as every
 * store returns). Against a copy of every content and metadata in JavaScript and one JSON text
 * per value (bench/README.md, issue 33), it is one native call each way.
 */
import { randomUUID } from "node:crypto";
import { checkEvent, isoTimestamp, type MemoryEvent, type NewMemoryEvent, prepareEvent } from "./store.js";

/** An escaped NUL or lone surrogate in JSON text (`JSON.stringify` escapes both; neither can be stored as is). */
const UNSTORABLE_ESCAPE = /\\u0000|\\u[dD][89a-fA-F]/;

/** Whether JSON text holds an escaped NUL or lone surrogate, or what looks like one (then the value takes the copy that replaces them). */
export function hasUnstorableEscape(text: string): boolean {
  return text.includes("\\u") && UNSTORABLE_ESCAPE.test(text);
}

/** Whether JSON makes an object of this value without a copy to find out (a plain object without `toJSON`). */
export function plainObject(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return (prototype === Object.prototype || prototype === null) && typeof (value as { toJSON?: unknown }).toJSON !== "function";
}

/**
 * An append's JSON text (see above), its events checked as `prepareEvent` checks them. Content and
 * metadata are written as `JSON.stringify` writes them, which for plain data is what the other
 * stores' copy (`jsonCopy`) gives; when the text holds an escaped NUL or lone surrogate (or what
 * looks like one), when a metadata is not a plain object, or when a value cannot be written, the
 * events take `prepareEvent` (the same copies, replacements and errors) and are written from that.
 */
export function appendText(sessionId: string, events: readonly NewMemoryEvent[]): string {
  // Filled by push, not preallocated: JSON.stringify writes a holey array element by element, slowly.
  const rows: unknown[] = [];
  let plain = true;
  for (let index = 0; index < events.length; index++) {
    const event = events[index];
    checkEvent(event);
    const metadata = event.metadata ?? {};
    if (!plainObject(metadata)) plain = false;
    rows.push([event.event_id ?? randomUUID(), isoTimestamp(event.timestamp), event.event_type, event.content, metadata]);
  }
  if (plain) {
    let text: string | undefined;
    try {
      text = JSON.stringify([sessionId, rows]);
    } catch {
      // Something cannot be written: prepareEvent names it.
    }
    if (text !== undefined && !hasUnstorableEscape(text)) return text;
  }
  const prepared = events.map((event) => prepareEvent(sessionId, event));
  return JSON.stringify([sessionId, prepared.map((event) => [event.event_id, event.timestamp, event.event_type, event.content, event.metadata])]);
}

/** The events an append stored, parsed from its text: seqs from `firstSeq` on. */
export function storedEvents(text: string, firstSeq: number): MemoryEvent[] {
  const [sessionId, rows] = JSON.parse(text) as [string, Array<[string, string, string, unknown, MemoryEvent["metadata"]]>];
  const events: MemoryEvent[] = new Array(rows.length);
  for (let index = 0; index < rows.length; index++) {
    const [eventId, timestamp, eventType, content, metadata] = rows[index];
    events[index] = { event_id: eventId, session_id: sessionId, seq: firstSeq + index, timestamp, event_type: eventType, content: content ?? null, metadata };
  }
  return events;
}
