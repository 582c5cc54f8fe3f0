/**
 * Lenient JSON extraction from model text, shared by the text tool-calling protocols.
 * Models wrap JSON in ``` fences, surround it with prose, leave trailing commas or stop in the
 * middle of an object; these helpers find what can be read and say what could not.
 */
import { dropTrailingCommas } from "../tools/parse-arguments.js";

export type JsonObject = Record<string, unknown>;

/** One `{...}` found in a text: its span and its parsed value. */
export interface FoundObject {
  start: number;
  end: number;
  value: JsonObject;
}

export interface ExtractedObjects {
  /** Every top-level object that parsed, in order of appearance (nested ones are not listed separately). */
  objects: FoundObject[];
  /** Where the first `{` that never closes starts (a truncated object), when there is one. */
  unterminatedAt?: number;
}

const FENCE = /```[a-zA-Z0-9_-]*[ \t]*\r?\n?([\s\S]*?)```/g;

/** The bodies of all ``` fenced blocks, in order (an unclosed last fence is not included). */
export function codeFenceBodies(text: string): string[] {
  return [...text.matchAll(FENCE)].map((match) => match[1].trim());
}

/** If the whole (trimmed) text is one fenced block, its body; otherwise the trimmed text. */
export function stripCodeFence(text: string): string {
  const trimmed = text.trim();
  const match = /^```[a-zA-Z0-9_-]*[ \t]*\r?\n?([\s\S]*?)```$/.exec(trimmed);
  return match ? match[1].trim() : trimmed;
}

/** `JSON.parse`, then again with trailing commas dropped. Undefined when neither reads. */
export function parseLenientJson(text: string): { value: unknown } | undefined {
  for (const attempt of [text, dropTrailingCommas(text)]) {
    try {
      return { value: JSON.parse(attempt) };
    } catch {
      // try the next form
    }
  }
  return undefined;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether the `{` at `index` starts something JSON-like (`{"`, `{}` or `{` + newline + `"`). */
function looksLikeJsonStart(text: string, index: number): boolean {
  const next = text[skipWhitespace(text, index + 1)];
  return next === '"' || next === "}";
}

/**
 * Whether the span starting at `index` can parse as an object (leniently): `{`, whitespace, then
 * `}`, a dropped `,`, or a first key and its `:`. Saves a thrown `JSON.parse` per brace of prose.
 */
function mayBeObject(text: string, index: number): boolean {
  let next = skipWhitespace(text, index + 1);
  const char = text[next];
  if (char === "}" || char === ",") return true;
  if (char !== '"') return false;
  // The first key (looked at for 256 characters at most): a string, then `:`.
  const limit = Math.min(text.length, next + 256);
  for (next++; next < limit; next++) {
    if (text[next] === "\\") next++;
    else if (text[next] === '"') return text[skipWhitespace(text, next + 1)] === ":";
  }
  return true;
}

function skipWhitespace(text: string, from: number): number {
  let next = from;
  while (next < text.length && (text[next] === " " || text[next] === "\n" || text[next] === "\r" || text[next] === "\t")) next++;
  return next;
}

const UNKNOWN = -2;
const NEVER_CLOSES = -1;
const NOT_SCANNED = -3;

/**
 * Where each `{` of a text closes, found by scanning from it as `firstBalancedObject` does (string
 * literals respected), in linear time. One scan settles every brace it reads outside a string:
 * a later scan from such a brace would see exactly the same characters in the same state, so a
 * text of 200 KB of `{` is one pass, not 200,000. A brace every earlier scan read inside a string
 * gets a scan of its own, within a budget of a few passes over the text; past it (only
 * adversarial quoting gets there) such braces count as text inside a string.
 */
class BraceCloser {
  private readonly closes: Int32Array;
  private budget: number;

  constructor(private readonly text: string) {
    this.closes = new Int32Array(text.length).fill(UNKNOWN);
    this.budget = 4 * text.length + 4_096;
  }

  /** The index just past the `}` that closes the `{` at `start`, NEVER_CLOSES, or NOT_SCANNED (budget spent). */
  closeOf(start: number): number {
    if (this.closes[start] === UNKNOWN) {
      if (this.budget <= 0) return NOT_SCANNED;
      this.scan(start);
    }
    return this.closes[start]!;
  }

  private scan(from: number): void {
    const text = this.text;
    const open: number[] = [];
    let inString = false;
    let index = from;
    for (; index < text.length; index++) {
      const char = text[index];
      if (inString) {
        if (char === "\\") index++;
        else if (char === '"') inString = false;
      } else if (char === '"') inString = true;
      else if (char === "{") open.push(index);
      else if (char === "}") {
        this.closes[open.pop()!] = index + 1;
        // The first brace closed: nothing after it belongs to this scan.
        if (open.length === 0) break;
      }
    }
    this.budget -= index - from + 1;
    for (const start of open) this.closes[start] = NEVER_CLOSES;
  }
}

/**
 * Finds the JSON objects in free text. Scans for `{`; a balanced span that parses (leniently) is
 * taken whole; one that does not parse is searched inside, so `{prose {"a":1}}` still yields
 * `{"a":1}`. A JSON-looking `{"...` that never closes is a truncated object: it is reported as
 * `unterminatedAt` and nothing inside it is taken. A `{` in prose that never closes is skipped.
 * Linear in the text's length for the brace matching (see `BraceCloser`); a span is parsed only
 * when it can be an object, and the trailing-comma retry only when the span has a `,` before `}`/`]`.
 */
export function extractJsonObjects(text: string): ExtractedObjects {
  const objects: FoundObject[] = [];
  const closer = new BraceCloser(text);
  const commas = trailingCommaCounts(text);
  let index = text.indexOf("{");
  while (index !== -1) {
    const end = closer.closeOf(index);
    if (end === NEVER_CLOSES && looksLikeJsonStart(text, index)) return { objects, unterminatedAt: index };
    if (end < 0) {
      index = text.indexOf("{", index + 1);
      continue;
    }
    const parsed = mayBeObject(text, index) ? parseSpan(text.slice(index, end), commas[end]! > commas[index]!) : undefined;
    if (parsed && isJsonObject(parsed.value)) {
      objects.push({ start: index, end, value: parsed.value });
      index = text.indexOf("{", end);
    } else {
      index = text.indexOf("{", index + 1);
    }
  }
  return { objects };
}

function parseSpan(span: string, mayHaveTrailingCommas: boolean): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(span) };
  } catch {
    return mayHaveTrailingCommas ? parseLenientJson(span) : undefined;
  }
}

/** counts[i]: how many `,` (followed by whitespace and `}` or `]`) come before index i; strings not considered (a superset is enough). */
function trailingCommaCounts(text: string): Int32Array {
  const counts = new Int32Array(text.length + 1);
  let count = 0;
  let lastComma = -1;
  for (let index = 0; index < text.length; index++) {
    counts[index] = count;
    const char = text[index];
    if (char === ",") lastComma = index;
    else if ((char === "}" || char === "]") && lastComma !== -1) {
      count++;
      lastComma = -1;
    } else if (char !== " " && char !== "\n" && char !== "\r" && char !== "\t") lastComma = -1;
  }
  counts[text.length] = count;
  return counts;
}

/** Shortens text for error messages. */
export function preview(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
