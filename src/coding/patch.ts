// apply_patch: the v4a patch format of OpenAI's coding agents (codex). A patch is parsed whole, every
// hunk of every file is matched in memory, and only then are files written: a patch applies
// completely or not at all.
import { mkdir, readFile, rm, rmdir, stat, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { Workspace } from "./workspace.js";

export interface PatchLine {
  /** ` ` context, `-` removed, `+` added. */
  op: " " | "-" | "+";
  text: string;
}

export interface PatchHunk {
  /** The text after `@@ ` (a line near the change, such as a function signature), if any. */
  hint?: string;
  lines: PatchLine[];
  /** `*** End of File` closed the hunk: its lines end the file. */
  endOfFile: boolean;
}

export type PatchOperation =
  | { type: "add"; path: string; content: string }
  | { type: "delete"; path: string }
  | { type: "update"; path: string; moveTo?: string; hunks: PatchHunk[] };

/** A patch that cannot be parsed or applied; the message names the line, file or hunk. */
export class PatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PatchError";
  }
}

const BEGIN = "*** Begin Patch";
const END = "*** End Patch";
const ADD = "*** Add File: ";
const DELETE = "*** Delete File: ";
const UPDATE = "*** Update File: ";
const MOVE = "*** Move to: ";
const END_OF_FILE = "*** End of File";

/**
 * Parses a v4a patch into its operations. Lenient where models often slip (surrounding blank lines,
 * a heredoc wrapper `<<'EOF'`, a blank line inside a hunk read as an empty context line), strict
 * elsewhere, with the line number of the first problem.
 */
export function parsePatch(patch: string): PatchOperation[] {
  if (typeof patch !== "string") throw new PatchError("the patch must be a string");
  let lines = patch.replace(/\r\n/g, "\n").split("\n");
  // A patch pasted as a shell heredoc: apply_patch <<'EOF' … EOF
  while (lines.length > 0 && lines[0].trim() === "") lines.shift();
  while (lines.length > 0 && lines[lines.length - 1].trim() === "") lines.pop();
  if (lines.length > 0 && /<<\s*['"]?\w+['"]?\s*$/.test(lines[0]) && /^\w+$/.test(lines[lines.length - 1].trim())) lines = lines.slice(1, -1);
  if (lines[0]?.trim() !== BEGIN) throw new PatchError(`the patch must start with "${BEGIN}" (line 1 is ${JSON.stringify(lines[0] ?? "")})`);
  if (lines[lines.length - 1]?.trim() !== END) throw new PatchError(`the patch must end with "${END}" (the last line is ${JSON.stringify(lines[lines.length - 1])})`);
  const operations: PatchOperation[] = [];
  let index = 1;
  const last = lines.length - 1;
  const where = () => `line ${index + 1}`;
  const pathAfter = (prefix: string): string => {
    const path = lines[index].slice(prefix.length).trim();
    if (path === "") throw new PatchError(`${where()}: "${prefix.trim()}" needs a file path`);
    return path;
  };
  while (index < last) {
    const line = lines[index];
    if (line.startsWith(ADD)) {
      const path = pathAfter(ADD);
      index++;
      const content: string[] = [];
      while (index < last && !lines[index].startsWith("*** ")) {
        if (!lines[index].startsWith("+")) throw new PatchError(`${where()}: every line of an added file (${path}) must start with "+", got ${JSON.stringify(lines[index])}`);
        content.push(lines[index].slice(1));
        index++;
      }
      operations.push({ type: "add", path, content: content.length === 0 ? "" : `${content.join("\n")}\n` });
    } else if (line.startsWith(DELETE)) {
      operations.push({ type: "delete", path: pathAfter(DELETE) });
      index++;
    } else if (line.startsWith(UPDATE)) {
      const path = pathAfter(UPDATE);
      index++;
      let moveTo: string | undefined;
      if (index < last && lines[index].startsWith(MOVE)) {
        moveTo = pathAfter(MOVE);
        index++;
      }
      const hunks: PatchHunk[] = [];
      let hunk: PatchHunk | undefined;
      while (index < last && !/^\*\*\* (Add|Delete|Update) File: /.test(lines[index])) {
        const text = lines[index];
        if (text === "@@" || text.startsWith("@@ ")) {
          hunk = { hint: text.slice(2).trim() || undefined, lines: [], endOfFile: false };
          hunks.push(hunk);
        } else if (text.trim() === END_OF_FILE) {
          if (!hunk || hunk.lines.length === 0) throw new PatchError(`${where()}: "${END_OF_FILE}" must follow the lines of a hunk (${path})`);
          hunk.endOfFile = true;
          hunk = undefined;
        } else {
          const op = text === "" ? " " : text[0];
          if (op !== " " && op !== "-" && op !== "+") {
            throw new PatchError(`${where()}: a hunk line of ${path} must start with " " (context), "-" (remove) or "+" (add), got ${JSON.stringify(text)}`);
          }
          // The first hunk of a file may leave out its "@@" line.
          if (!hunk) {
            if (hunks.length > 0) throw new PatchError(`${where()}: lines after "${END_OF_FILE}" need a new "@@" hunk (${path})`);
            hunk = { lines: [], endOfFile: false };
            hunks.push(hunk);
          }
          hunk.lines.push({ op, text: text.slice(1) });
        }
        index++;
      }
      hunks.forEach((each, number) => {
        if (!each.lines.some((item) => item.op !== " ")) throw new PatchError(`${path}: hunk ${number + 1}${each.hint ? ` (@@ ${each.hint})` : ""} changes nothing: it has no "-" or "+" lines`);
      });
      if (hunks.length === 0 && moveTo === undefined) throw new PatchError(`${path}: "*** Update File" needs at least one hunk (or a "*** Move to:" line)`);
      operations.push({ type: "update", path, moveTo, hunks });
    } else if (line.trim() === "") {
      index++;
    } else {
      throw new PatchError(`${where()}: expected "${ADD}", "${DELETE}" or "${UPDATE}", got ${JSON.stringify(line)}`);
    }
  }
  if (operations.length === 0) throw new PatchError("the patch has no operations (add, delete or update a file between the Begin and End lines)");
  return operations;
}

/** Typographic punctuation models often write for ASCII (and the other way round). */
const PUNCTUATION: Record<string, string> = {
  "\u2010": "-",
  "\u2011": "-",
  "\u2012": "-",
  "\u2013": "-",
  "\u2014": "-",
  "\u2212": "-",
  "\u2018": "'",
  "\u2019": "'",
  "\u201A": "'",
  "\u201B": "'",
  "\u201C": '"',
  "\u201D": '"',
  "\u201E": '"',
  "\u201F": '"',
  "\u00A0": " ",
  "\u2002": " ",
  "\u2003": " ",
  "\u2009": " ",
  "\u202F": " ",
};
const normalize = (line: string) => line.trim().replace(/[\u2010-\u2014\u2212\u2018-\u201F\u00A0\u2002\u2003\u2009\u202F]/g, (char) => PUNCTUATION[char] ?? char);

/** Ever looser ways to compare a file line with a patch line: exact, then without trailing space, then trimmed, then punctuation-normalized. */
const COMPARISONS: Array<(a: string, b: string) => boolean> = [
  (a, b) => a === b,
  (a, b) => a.trimEnd() === b.trimEnd(),
  (a, b) => a.trim() === b.trim(),
  (a, b) => normalize(a) === normalize(b),
];

/** Where `wanted` occurs in `lines` at or after `from` (at the end when `atEnd`), at the strictest comparison that finds it. */
function findSequence(lines: readonly string[], wanted: readonly string[], from: number, atEnd: boolean): number {
  for (const same of COMPARISONS) {
    const matches = (start: number) => wanted.every((line, offset) => same(lines[start + offset], line));
    if (atEnd) {
      const start = lines.length - wanted.length;
      if (start >= from && matches(start)) return start;
    }
    for (let start = from; start <= lines.length - wanted.length; start++) if (matches(start)) return start;
  }
  return -1;
}

/** The new text of `path` after its hunks, or a PatchError naming the hunk that does not match. */
export function applyHunks(text: string, hunks: readonly PatchHunk[], path: string): string {
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  const lines = text.split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  const replacements: Array<{ start: number; remove: number; insert: string[] }> = [];
  let cursor = 0;
  hunks.forEach((hunk, number) => {
    const name = `${path}: hunk ${number + 1}${hunk.hint ? ` (@@ ${hunk.hint})` : ""}`;
    if (hunk.hint) {
      const at = findSequence(lines, [hunk.hint], cursor, false);
      if (at === -1) throw new PatchError(`${name}: the line "${hunk.hint}" was not found${cursor > 0 ? ` from line ${cursor + 1} on` : ""}; read the file and copy its lines exactly`);
      cursor = at;
    }
    let old = hunk.lines.filter((line) => line.op !== "+").map((line) => line.text);
    let fresh = hunk.lines.filter((line) => line.op !== "-").map((line) => line.text);
    if (old.length === 0) {
      // Only added lines: after the hint's line, else at the end of the file.
      const start = hunk.hint ? cursor + 1 : lines.length;
      replacements.push({ start, remove: 0, insert: fresh });
      cursor = start;
      return;
    }
    let start = findSequence(lines, old, cursor, hunk.endOfFile);
    // A blank last context line stands for the file's final newline (with only added lines before
    // it, they go where added lines alone go).
    if (start === -1 && old.at(-1) === "" && fresh.at(-1) === "") {
      old = old.slice(0, -1);
      fresh = fresh.slice(0, -1);
      start = old.length === 0 ? (hunk.hint ? cursor + 1 : lines.length) : findSequence(lines, old, cursor, true);
    }
    if (start === -1) {
      const expected = old.slice(0, 3).join("\n");
      throw new PatchError(
        `${name}: its context and removed lines were not found${cursor > 0 ? ` from line ${cursor + 1} on` : ""}${hunk.endOfFile ? " at the end of the file" : ""}; expected lines starting with:\n${expected}\nRead the file and copy its lines exactly`,
      );
    }
    replacements.push({ start, remove: old.length, insert: fresh });
    cursor = start + old.length;
  });
  for (const { start, remove, insert } of replacements.reverse()) lines.splice(start, remove, ...insert);
  return lines.length === 0 ? "" : `${lines.join(eol)}${eol}`;
}

export interface PatchFileChange {
  action: "add" | "delete" | "update";
  path: string;
  /** The new path of a moved file. */
  moveTo?: string;
  /** Lines added and removed. */
  added: number;
  removed: number;
  /** A unified-style diff of the change (for people; `-`/`+` lines with a few of context). */
  diff: string;
}

export interface PatchResult {
  changes: PatchFileChange[];
  /** `A path`, `M path`, `D path`, `M old -> new`, one a line. */
  summary: string;
}

/** Lines of diff kept in a tool's `structured` (a whole new 1 MB file would otherwise ride along in full). */
export const MAX_DIFF_LINES = 400;

/**
 * A short diff of `before` → `after`: the changed region with up to 3 lines of context, with line
 * numbers, at most `maxLines` lines (then `… N more diff lines`).
 */
export function lineDiff(before: string, after: string, context = 3, maxLines = MAX_DIFF_LINES): { diff: string; added: number; removed: number } {
  const a = before === "" ? [] : before.replace(/\r?\n$/, "").split(/\r?\n/);
  const b = after === "" ? [] : after.replace(/\r?\n$/, "").split(/\r?\n/);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const removed = a.slice(head, a.length - tail);
  const added = b.slice(head, b.length - tail);
  if (removed.length === 0 && added.length === 0) return { diff: "", added: 0, removed: 0 };
  const from = Math.max(0, head - context);
  const out = [`@@ -${from + 1},${a.length - tail - from + Math.min(context, tail)} +${from + 1},${b.length - tail - from + Math.min(context, tail)} @@`];
  for (const line of a.slice(from, head)) out.push(` ${line}`);
  for (const line of removed) out.push(`-${line}`);
  for (const line of added) out.push(`+${line}`);
  for (const line of a.slice(a.length - tail, a.length - tail + context)) out.push(` ${line}`);
  const shown = out.length > maxLines ? [...out.slice(0, maxLines), `… ${out.length - maxLines} more diff lines`] : out;
  return { diff: shown.join("\n"), added: added.length, removed: removed.length };
}

/**
 * Applies a v4a patch inside the workspace: parses it, resolves every path (confined to the
 * workspace), matches every hunk against the files' current text, and only when all of it holds
 * writes the files. If a write fails, the files already written are put back as they were.
 */
export async function applyPatch(workspace: Workspace, patch: string): Promise<PatchResult> {
  const operations = parsePatch(patch);
  // The files as the patch leaves them: real path -> new text, or null for deleted.
  const planned = new Map<string, string | null>();
  const current = async (real: string): Promise<string | undefined> => {
    if (planned.has(real)) return planned.get(real) ?? undefined;
    const info = await stat(real).catch(() => undefined);
    if (!info) return undefined;
    if (info.isDirectory()) throw new PatchError(`${workspace.display(real)} is a folder, not a file`);
    const data = await readFile(real);
    if (data.subarray(0, 8192).includes(0)) throw new PatchError(`${workspace.display(real)} is a binary file; apply_patch changes text files only`);
    return data.toString("utf8");
  };
  const changes: PatchFileChange[] = [];
  for (const operation of operations) {
    const real = await workspace.resolvePath(operation.path);
    const before = await current(real);
    if (operation.type === "add") {
      if (before !== undefined) throw new PatchError(`${operation.path}: cannot add it, the file already exists; use "*** Update File:" to change it`);
      planned.set(real, operation.content);
      changes.push({ action: "add", path: workspace.display(real), ...lineDiff("", operation.content) });
    } else if (operation.type === "delete") {
      if (before === undefined) throw new PatchError(`${operation.path}: cannot delete it, the file does not exist`);
      planned.set(real, null);
      changes.push({ action: "delete", path: workspace.display(real), ...lineDiff(before, "") });
    } else {
      if (before === undefined) throw new PatchError(`${operation.path}: cannot update it, the file does not exist; use "*** Add File:" to create it`);
      const after = applyHunks(before, operation.hunks, operation.path);
      let target = real;
      if (operation.moveTo !== undefined) {
        target = await workspace.resolvePath(operation.moveTo);
        if (target !== real && (await current(target)) !== undefined) throw new PatchError(`${operation.path}: cannot move it to ${operation.moveTo}, that file already exists`);
        planned.set(real, null);
      }
      planned.set(target, after);
      changes.push({ action: "update", path: workspace.display(real), moveTo: target !== real ? workspace.display(target) : undefined, ...lineDiff(before, after) });
    }
  }
  await writePlanned(planned);
  const letter = { add: "A", delete: "D", update: "M" } as const;
  const summary = changes.map((change) => `${letter[change.action]} ${change.path}${change.moveTo ? ` -> ${change.moveTo}` : ""}`).join("\n");
  return { changes, summary };
}

/**
 * Writes (or deletes) every planned file; on a failure, restores the ones already changed (their
 * bytes as read before, or removed when the patch created them) and removes the folders it made.
 */
async function writePlanned(planned: Map<string, string | null>): Promise<void> {
  const originals: Array<{ path: string; data: Buffer | undefined }> = [];
  /** Folders the writes made, outermost first. */
  const madeFolders: string[] = [];
  try {
    for (const [path, text] of planned) {
      originals.push({ path, data: await readFile(path).catch(() => undefined) });
      if (text === null) await rm(path, { force: true });
      else {
        const folder = dirname(path);
        const outermost = await mkdir(folder, { recursive: true });
        if (outermost !== undefined) madeFolders.push(...foldersBetween(outermost, folder));
        await writeFile(path, text, "utf8");
      }
    }
  } catch (error) {
    for (const { path, data } of originals.reverse()) {
      if (data === undefined) await rm(path, { force: true }).catch(() => undefined);
      else await writeFile(path, data).catch(() => undefined);
    }
    // Innermost first; rmdir leaves a folder something else has put a file in since.
    for (const folder of madeFolders.reverse()) await rmdir(folder).catch(() => undefined);
    throw new PatchError(`writing the patched files failed (${(error as Error).message}); the files already written were restored`);
  }
}

/** `outermost`, then each folder below it down to `innermost` (a folder inside it, or itself); none when it is not inside. */
function foldersBetween(outermost: string, innermost: string): string[] {
  const chain = [innermost];
  for (let folder = innermost; folder !== outermost; ) {
    const parent = dirname(folder);
    if (parent === folder) return [];
    folder = parent;
    chain.push(folder);
  }
  return chain.reverse();
}
