/**
 * Lenient JSON extraction from model text, shared by the text tool-calling protocols.
 * Models wrap JSON in ``` fences, surround it with prose, leave trailing commas or stop in the
 * middle of an object; these helpers find what can be read and say what could not.
 */
import { dropTrailingCommas, firstBalancedObject } from "../tools/parse-arguments.js";

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
  return /^\{\s*["}]/.test(text.slice(index, index + 64));
}

/**
 * Finds the JSON objects in free text. Scans for `{`; a balanced span that parses (leniently) is
 * taken whole; one that does not parse is searched inside, so `{prose {"a":1}}` still yields
 * `{"a":1}`. A JSON-looking `{"...` that never closes is a truncated object: it is reported as
 * `unterminatedAt` and nothing inside it is taken. A `{` in prose that never closes is skipped.
 */
export function extractJsonObjects(text: string): ExtractedObjects {
  const objects: FoundObject[] = [];
  let index = text.indexOf("{");
  while (index !== -1) {
    const balanced = firstBalancedObject(text, index);
    // The brace at `index` closes only when the first balanced object starts there.
    const end = balanced?.start === index ? balanced.end : undefined;
    if (end === undefined) {
      if (looksLikeJsonStart(text, index)) return { objects, unterminatedAt: index };
      index = text.indexOf("{", index + 1);
      continue;
    }
    const parsed = parseLenientJson(text.slice(index, end));
    if (parsed && isJsonObject(parsed.value)) {
      objects.push({ start: index, end, value: parsed.value });
      index = text.indexOf("{", end);
    } else {
      index = text.indexOf("{", index + 1);
    }
  }
  return { objects };
}

/** Shortens text for error messages. */
export function preview(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
