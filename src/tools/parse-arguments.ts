/**
 * Lenient parsing of tool-call arguments produced by a model. Tries, in order: plain JSON,
 * the content of a ``` fence, the first balanced `{...}` (respecting strings), and each of those
 * again with trailing commas dropped. Never substitutes `{}` for text it could not read.
 */
export type ParsedArguments = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

const FENCE = /```[a-zA-Z0-9_-]*\s*\n?([\s\S]*?)```/;

/**
 * The first balanced `{...}` in `text` (the one that starts first), skipping braces inside strings;
 * undefined if none closes. One pass with a stack of open braces, so text full of braces that
 * never close (`{{{{...`) costs linear time, not a rescan per brace.
 */
export function firstBalancedObject(text: string, from = 0): { start: number; end: number } | undefined {
  const first = text.indexOf("{", from);
  if (first === -1) return undefined;
  const open: number[] = [];
  let best: { start: number; end: number } | undefined;
  let inString = false;
  for (let index = first; index < text.length; index++) {
    const char = text[index];
    if (inString) {
      if (char === "\\") index++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === "{") open.push(index);
    else if (char === "}" && open.length > 0) {
      const start = open.pop()!;
      // The stack empties only when the first brace closes: nothing can start before it.
      if (open.length === 0) return { start, end: index + 1 };
      // The first brace may never close; a later one still may (`Sure {here: {"a": 1}`).
      if (best === undefined || start < best.start) best = { start, end: index + 1 };
    }
  }
  return best;
}

/** Removes commas that directly precede `}` or `]`, outside strings. */
export function dropTrailingCommas(text: string): string {
  let output = "";
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (inString) {
      output += char;
      if (char === "\\") output += text[++index] ?? "";
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    if (char === ",") {
      let next = index + 1;
      while (next < text.length && /\s/.test(text[next])) next++;
      if (text[next] === "}" || text[next] === "]") continue;
    }
    output += char;
  }
  return output;
}

function tryJson(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

function candidates(raw: string): string[] {
  const list = [raw];
  const fenced = FENCE.exec(raw)?.[1];
  if (fenced !== undefined) list.push(fenced.trim());
  for (const text of [...list]) {
    const span = firstBalancedObject(text);
    if (span) list.push(text.slice(span.start, span.end));
  }
  return list;
}

export function parseToolArguments(raw: string | undefined | null): ParsedArguments {
  const text = (raw ?? "").trim();
  // An empty argument string is a call without arguments, not unreadable arguments.
  if (text === "") return { ok: true, value: {} };
  // The common case first: plain JSON of an object (the list below starts with the same attempt).
  const plain = tryJson(text);
  if (plain && typeof plain.value === "object" && plain.value !== null && !Array.isArray(plain.value)) {
    return { ok: true, value: plain.value as Record<string, unknown> };
  }
  let nonObject: unknown;
  for (const candidate of candidates(text)) {
    for (const attempt of [candidate, dropTrailingCommas(candidate)]) {
      const parsed = tryJson(attempt);
      if (!parsed) continue;
      if (typeof parsed.value === "object" && parsed.value !== null && !Array.isArray(parsed.value)) {
        return { ok: true, value: parsed.value as Record<string, unknown> };
      }
      nonObject ??= parsed.value;
    }
  }
  if (nonObject !== undefined) {
    return { ok: false, error: `arguments must be a JSON object, got ${Array.isArray(nonObject) ? "an array" : typeof nonObject}` };
  }
  const preview = text.length > 200 ? `${text.slice(0, 200)}…` : text;
  return { ok: false, error: `arguments are not valid JSON: ${preview}` };
}
