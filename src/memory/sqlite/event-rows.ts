/**
 * The embedded store's appends as its group writes them: each event's fields as SQL literals, its
 * content and metadata as JSON text made when `append` is called (so the text is the copy: the
 * caller may change its objects afterwards). One `JSON.stringify` per value, which the row needs
 * anyway, instead of a JavaScript copy of every value first (`prepareEvent`) and the text of the
 * copy in the group; the events an append returns, when the caller reads them, are parsed back
 * from that text (fresh objects, what JSON makes of them, as every store returns).
 */
import { randomUUID } from "node:crypto";
import { hasUnstorableEscape, plainObject } from "../sql-group.js";
import { checkEvent, checkSessionId, isoOf, type MemoryEvent, type NewMemoryEvent, prepareEvent, storableText, timestampMs } from "../store.js";
import { sqlText } from "./driver.js";

/** One event of an append, ready for its group. */
export interface EventRow {
  eventId: string;
  timestamp: string;
  eventType: string;
  /** JSON text. */
  content: string;
  /** JSON text of an object. */
  metadata: string;
  /** The end of the event's `VALUES` row after its session and seq: `,event_id,timestamp,timestamp_ms,event_type,content,metadata)` as SQL literals. */
  values: string;
}

/** Validates an append's arguments and every event before anything is stored (an append is all or nothing), as `prepareAppend` does. */
export function eventRows(sessionId: string, events: readonly NewMemoryEvent[]): EventRow[] {
  checkSessionId(sessionId);
  if (!Array.isArray(events)) throw new TypeError("memory: append expects an array of events");
  const rows: EventRow[] = new Array(events.length);
  for (let index = 0; index < events.length; index++) rows[index] = eventRow(sessionId, events[index]);
  return rows;
}

/**
 * One event's row. Content and metadata are written as `JSON.stringify` writes them, which for
 * plain data is what the other stores' copy (`jsonCopy`) gives; when a text holds an escaped NUL
 * or lone surrogate (or what looks like one), when the metadata is not a plain object, or when a
 * value cannot be written, the event takes `prepareEvent` (the same copies, replacements and
 * errors) and is written from that.
 */
function eventRow(sessionId: string, event: NewMemoryEvent): EventRow {
  checkEvent(event);
  const metadata = event.metadata ?? {};
  let contentText: string | undefined;
  let metadataText: string | undefined;
  if (plainObject(metadata)) {
    try {
      contentText = JSON.stringify(event.content) ?? "null";
      metadataText = JSON.stringify(metadata);
    } catch {
      // Something cannot be written: prepareEvent names it.
    }
  }
  if (contentText === undefined || metadataText === undefined || hasUnstorableEscape(contentText) || hasUnstorableEscape(metadataText)) {
    const prepared = prepareEvent(sessionId, event);
    return row(prepared.event_id, prepared.timestamp, Date.parse(prepared.timestamp), prepared.event_type, JSON.stringify(prepared.content), JSON.stringify(prepared.metadata));
  }
  const ms = timestampMs(event.timestamp);
  return row(storableText(event.event_id ?? randomUUID()), isoOf(ms), ms, storableText(event.event_type), contentText, metadataText);
}

function row(eventId: string, timestamp: string, ms: number, eventType: string, content: string, metadata: string): EventRow {
  return {
    eventId,
    timestamp,
    eventType,
    content,
    metadata,
    values: `,${sqlText(eventId)},${sqlText(timestamp)},${ms},${sqlText(eventType)},${sqlText(content)},${sqlText(metadata)})`,
  };
}

/** A stored event, read back from its row: fresh objects parsed from its text. */
export function storedEvent(sessionId: string, seq: number, row: EventRow): MemoryEvent {
  return {
    event_id: row.eventId,
    session_id: sessionId,
    seq,
    timestamp: row.timestamp,
    event_type: row.eventType,
    content: JSON.parse(row.content),
    metadata: JSON.parse(row.metadata),
  };
}
