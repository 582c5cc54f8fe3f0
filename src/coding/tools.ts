import { lstat, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { dirname, extname, sep } from "node:path";
import type { ImagePart, TextPart } from "../messages.js";
import { defineTool, type Tool, type ToolResultValue } from "../tools/tool.js";
import { DEFAULT_EXEC_TIMEOUT_MS, MAX_EXEC_TIMEOUT_MS } from "./exec.js";
import { applyPatch, lineDiff, PatchError } from "./patch.js";
import { ripgrep, ripgrepAvailable } from "./ripgrep.js";
import type { Workspace } from "./workspace.js";

/** Lines `read_file` returns when the model gives no `limit`. */
export const DEFAULT_READ_LIMIT = 2000;
/** Matches `grep` returns when the model gives no `max_results`. */
export const DEFAULT_GREP_RESULTS = 100;
/** Files larger than this are skipped by the JavaScript `grep`. */
const GREP_MAX_FILE_BYTES = 5_000_000;
/** Folders `glob` and `grep` never walk into. */
const IGNORED = ["**/node_modules/**", "**/.git/**"];

const IMAGE_TYPES: Record<string, string> = { ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp" };

const error = (content: string): ToolResultValue => ({ content, isError: true });
const NO_LINE_LIMIT = Number.POSITIVE_INFINITY;

/** Binary when the first 8 KB hold a NUL byte (the heuristic git and grep use). */
function isBinary(data: Buffer): boolean {
  return data.subarray(0, 8192).includes(0);
}

/** `  12 | text` lines, numbered from `first`. */
export function numberLines(lines: readonly string[], first: number): string {
  const width = Math.max(4, String(first + lines.length - 1).length);
  return lines.map((line, index) => `${String(first + index).padStart(width)} | ${line}`).join("\n");
}

function countOccurrences(text: string, search: string): number {
  let count = 0;
  for (let index = text.indexOf(search); index !== -1; index = text.indexOf(search, index + search.length)) count++;
  return count;
}

/** Refuses glob patterns that climb out of their base folder. */
function checkPattern(workspace: Workspace, pattern: string, what: string): void {
  if (workspace.allowOutside) return;
  if (pattern.startsWith("/") || pattern.split(/[\\/]/).includes("..")) {
    throw new Error(`${what} "${pattern}" may not be absolute or contain '..'; give a folder inside the workspace as path instead`);
  }
}

interface ListedFile {
  path: string;
  size: number;
  mtimeMs: number;
}

/** Path order folder by folder, as ripgrep's `--sort path` lists (`a/b` before `a-b/c`). */
function comparePaths(a: string, b: string): number {
  const left = a.split(sep);
  const right = b.split(sep);
  for (let index = 0; index < Math.min(left.length, right.length); index++) {
    if (left[index] !== right[index]) return left[index] < right[index] ? -1 : 1;
  }
  return left.length - right.length;
}

/** Files read or checked at once by `glob` and `grep`. */
const PARALLEL_FILES = 32;

/** `fn` over `items`, `PARALLEL_FILES` at a time, results in order. */
async function inBatches<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let start = 0; start < items.length; start += PARALLEL_FILES) {
    results.push(...(await Promise.all(items.slice(start, start + PARALLEL_FILES).map(fn))));
  }
  return results;
}

/** The files matching `pattern` under `base`, with their size and time; symlinks only when they lead inside the workspace. */
async function listFiles(workspace: Workspace, base: string, pattern: string): Promise<ListedFile[]> {
  const { glob } = await import("tinyglobby");
  const files = await glob(pattern, { cwd: base, absolute: true, onlyFiles: true, dot: true, ignore: IGNORED, followSymbolicLinks: false });
  const listed = await inBatches(files, async (file): Promise<ListedFile | undefined> => {
    const info = await lstat(file).catch(() => undefined);
    if (!info) return undefined;
    if (!info.isSymbolicLink()) return { path: file, size: info.size, mtimeMs: info.mtimeMs };
    try {
      // Folders are not followed (followSymbolicLinks: false), so only a file that is a symlink can lead out.
      const real = await workspace.resolvePath(file);
      const target = await stat(real);
      return target.isFile() ? { path: real, size: target.size, mtimeMs: target.mtimeMs } : undefined;
    } catch {
      return undefined; // a symlink leading out of the workspace (or nowhere): not listed
    }
  });
  return listed.filter((file): file is ListedFile => file !== undefined);
}

/**
 * The coding tools over one workspace: `read_file`, `write_file`, `edit_file`, `shell`, `glob`, `grep`.
 * Each is an ordinary agentloop `Tool`, with the per-tool truncation of the coding-agent spec.
 */
export function codingTools(workspace: Workspace): Tool[] {
  return [readFileTool(workspace), writeFileTool(workspace), editFileTool(workspace), shellTool(workspace), globTool(workspace), grepTool(workspace)];
}

export function readFileTool(workspace: Workspace): Tool {
  return defineTool<{ file_path: string; offset?: number; limit?: number }>({
    name: "read_file",
    description: `Reads a file of the workspace as numbered lines ("  12 | text"). offset is the first line (1-based), limit the number of lines (default ${DEFAULT_READ_LIMIT}). Images come back as images; other binary files are refused.`,
    parameters: {
      type: "object",
      properties: {
        file_path: { type: "string", description: "Path relative to the workspace root (or absolute, inside it)" },
        offset: { type: "integer", minimum: 1, description: "First line to read, 1-based" },
        limit: { type: "integer", minimum: 1, description: `Lines to read (default ${DEFAULT_READ_LIMIT})` },
      },
      required: ["file_path"],
      additionalProperties: false,
    },
    kind: "coding",
    truncation: { maxChars: 50_000, maxLines: NO_LINE_LIMIT, mode: "head_tail" },
    async execute({ file_path, offset = 1, limit = DEFAULT_READ_LIMIT }) {
      const path = await workspace.resolvePath(file_path);
      const info = await stat(path).catch(() => undefined);
      if (!info) return error(`read_file: ${file_path} does not exist`);
      if (info.isDirectory()) return error(`read_file: ${file_path} is a folder; use glob to list its files`);
      const data = await readFile(path);
      const imageType = IMAGE_TYPES[extname(path).toLowerCase()];
      if (imageType) {
        const parts: Array<TextPart | ImagePart> = [
          { type: "text", text: `${workspace.display(path)} (${imageType}, ${data.length} bytes)` },
          { type: "image", data: data.toString("base64"), mediaType: imageType },
        ];
        return { content: parts };
      }
      if (isBinary(data)) return error(`read_file: ${file_path} is a binary file (${data.length} bytes); it cannot be shown as text`);
      if (data.length === 0) return `${workspace.display(path)} is empty`;
      const all = data.toString("utf8").split(/\r?\n/);
      if (all.length > 1 && all[all.length - 1] === "") all.pop();
      if (offset > all.length) return error(`read_file: offset ${offset} is past the end of ${file_path} (${all.length} lines)`);
      const lines = all.slice(offset - 1, offset - 1 + limit);
      const last = offset + lines.length - 1;
      const more = last < all.length ? `\n[lines ${offset}-${last} of ${all.length}; read on with offset ${last + 1}]` : "";
      return numberLines(lines, offset) + more;
    },
  });
}

export function writeFileTool(workspace: Workspace): Tool {
  return defineTool<{ file_path: string; content: string }>({
    name: "write_file",
    description: "Writes a file of the workspace, replacing it if it exists; missing folders are created.",
    parameters: {
      type: "object",
      properties: {
        file_path: { type: "string", description: "Path relative to the workspace root" },
        content: { type: "string", description: "The whole new content of the file" },
      },
      required: ["file_path", "content"],
      additionalProperties: false,
    },
    kind: "coding",
    truncation: { maxChars: 1_000, maxLines: NO_LINE_LIMIT, mode: "tail" },
    async execute({ file_path, content }) {
      const path = await workspace.resolvePath(file_path);
      const info = await stat(path).catch(() => undefined);
      if (info?.isDirectory()) return error(`write_file: ${file_path} is a folder`);
      const before = info ? await readFile(path, "utf8").catch(() => "") : "";
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, content, "utf8");
      const { diff, added, removed } = lineDiff(before, content);
      return {
        content: `${info ? "Replaced" : "Created"} ${workspace.display(path)} (${Buffer.byteLength(content)} bytes)`,
        structured: { path: workspace.display(path), action: info ? "update" : "add", added, removed, diff },
      };
    },
  });
}

export function editFileTool(workspace: Workspace): Tool {
  return defineTool<{ file_path: string; old_string: string; new_string: string; replace_all?: boolean }>({
    name: "edit_file",
    description:
      "Replaces old_string with new_string in a file. old_string must match exactly once (give enough surrounding lines to make it unique), or set replace_all to replace every occurrence.",
    parameters: {
      type: "object",
      properties: {
        file_path: { type: "string", description: "Path relative to the workspace root" },
        old_string: { type: "string", description: "The exact text to replace" },
        new_string: { type: "string", description: "The text to put in its place" },
        replace_all: { type: "boolean", description: "Replace every occurrence (default false)" },
      },
      required: ["file_path", "old_string", "new_string"],
      additionalProperties: false,
    },
    kind: "coding",
    truncation: { maxChars: 10_000, maxLines: NO_LINE_LIMIT, mode: "tail" },
    async execute({ file_path, old_string, new_string, replace_all = false }) {
      const path = await workspace.resolvePath(file_path);
      if (old_string === "") return error("edit_file: old_string is empty; use write_file to create a file");
      if (old_string === new_string) return error("edit_file: old_string and new_string are the same; nothing to change");
      const data = await readFile(path).catch(() => undefined);
      if (!data) return error(`edit_file: ${file_path} does not exist`);
      if (isBinary(data)) return error(`edit_file: ${file_path} is a binary file`);
      const text = data.toString("utf8");
      const count = countOccurrences(text, old_string);
      if (count === 0) return error(`edit_file: old_string was not found in ${file_path} (0 matches); read the file and copy the text exactly`);
      if (count > 1 && !replace_all) {
        return error(`edit_file: old_string matches ${count} times in ${file_path}; add surrounding lines to make it unique, or set replace_all`);
      }
      const next = replace_all ? text.split(old_string).join(new_string) : text.replace(old_string, () => new_string);
      await writeFile(path, next, "utf8");
      const { diff, added, removed } = lineDiff(text, next);
      return {
        content: `Edited ${workspace.display(path)}: ${count} replacement${count === 1 ? "" : "s"}`,
        structured: { path: workspace.display(path), action: "update", added, removed, diff },
      };
    },
  });
}

export function applyPatchTool(workspace: Workspace): Tool {
  return defineTool<{ patch: string }>({
    name: "apply_patch",
    description: `Applies a patch in the v4a format to files of the workspace: add, delete, update and rename files in one operation. The whole patch applies or nothing does.
*** Begin Patch
*** Add File: path/new.py
+every line of the new file, prefixed with +
*** Delete File: path/old.py
*** Update File: path/main.py
*** Move to: path/renamed.py   (optional)
@@ def main():   (a line just above the change, to locate it; "@@" alone when not needed)
 context line (space prefix, unchanged; give about 3 above and below)
-removed line
+added line
*** End Patch`,
    parameters: {
      type: "object",
      properties: { patch: { type: "string", description: "The whole patch, from *** Begin Patch to *** End Patch" } },
      required: ["patch"],
      additionalProperties: false,
    },
    kind: "coding",
    // Patches of one wave touching the same files must not interleave.
    sequential: true,
    truncation: { maxChars: 10_000, maxLines: NO_LINE_LIMIT, mode: "tail" },
    async execute({ patch }) {
      try {
        const { changes, summary } = await applyPatch(workspace, patch);
        return { content: `Applied the patch:\n${summary}`, structured: { changes } };
      } catch (cause) {
        const message = cause instanceof PatchError ? cause.message : (cause as Error).message;
        return error(`apply_patch: ${message}. Nothing was changed.`);
      }
    },
  });
}

export function shellTool(workspace: Workspace): Tool {
  return defineTool<{ command: string; timeout_ms?: number; description?: string }>({
    name: "shell",
    description:
      "Runs a bash command in the workspace root and returns its exit code, stdout and stderr. The command and everything it starts are killed when the timeout (default 10 s) passes.",
    parameters: {
      type: "object",
      properties: {
        command: { type: "string", description: "The bash command line" },
        timeout_ms: { type: "integer", minimum: 1, maximum: MAX_EXEC_TIMEOUT_MS, description: "Timeout in milliseconds (default 10000, at most 600000)" },
        description: { type: "string", description: "What the command does, in a few words (for the people watching)" },
      },
      required: ["command"],
      additionalProperties: false,
    },
    kind: "coding",
    // The command's own timeout (at most 600 s) plus the kill grace: the loop's default tool timeout does not apply.
    timeoutMs: MAX_EXEC_TIMEOUT_MS + 5_000,
    truncation: { maxChars: 30_000, maxLines: 256, mode: "head_tail" },
    async execute({ command, timeout_ms }, context) {
      const result = await workspace.exec(command, {
        timeoutMs: timeout_ms,
        signal: context.signal,
        onOutput: (stream, text) => context.progress({ stream, text }),
      });
      const parts = [`exit code: ${result.exitCode ?? `none (${result.signal})`}`];
      if (result.timedOut) parts.push(`timed out after ${timeout_ms ?? DEFAULT_EXEC_TIMEOUT_MS} ms: the command and its children were killed`);
      if (result.stdout) parts.push(`stdout:\n${result.stdout.trimEnd()}`);
      if (result.stderr) parts.push(`stderr:\n${result.stderr.trimEnd()}`);
      const { stdout, stderr, ...rest } = result;
      return { content: parts.join("\n"), isError: result.timedOut, structured: rest };
    },
  });
}

export function globTool(workspace: Workspace): Tool {
  return defineTool<{ pattern: string; path?: string }>({
    name: "glob",
    description: 'Lists the files matching a glob pattern (for example "src/**/*.ts"), newest first. node_modules and .git are skipped.',
    parameters: {
      type: "object",
      properties: {
        pattern: { type: "string", description: "A glob pattern" },
        path: { type: "string", description: "Folder to search in (default: the workspace root)" },
      },
      required: ["pattern"],
      additionalProperties: false,
    },
    kind: "coding",
    truncation: { maxChars: 20_000, maxLines: 500, mode: "tail" },
    async execute({ pattern, path }) {
      checkPattern(workspace, pattern, "glob: the pattern");
      const base = path === undefined ? workspace.root : await workspace.resolvePath(path);
      const files = await listFiles(workspace, base, pattern);
      if (files.length === 0) return `No files match ${pattern}`;
      files.sort((a, b) => b.mtimeMs - a.mtimeMs || a.path.localeCompare(b.path));
      return files.map(({ path }) => workspace.display(path)).join("\n");
    },
  });
}

export interface GrepToolOptions {
  /** `auto` (default): ripgrep when `rg` is on the PATH, else the JavaScript search; `false`: always JavaScript. */
  ripgrep?: "auto" | false;
}

export function grepTool(workspace: Workspace, options: GrepToolOptions = {}): Tool {
  return defineTool<{ pattern: string; path?: string; glob_filter?: string; case_insensitive?: boolean; max_results?: number }>({
    name: "grep",
    description: `Searches file contents with a regular expression (JavaScript syntax); answers "path:line: text" lines, at most max_results (default ${DEFAULT_GREP_RESULTS}).`,
    parameters: {
      type: "object",
      properties: {
        pattern: { type: "string", description: "A regular expression" },
        path: { type: "string", description: "File or folder to search (default: the workspace root)" },
        glob_filter: { type: "string", description: 'Only files matching this glob, for example "**/*.ts"' },
        case_insensitive: { type: "boolean" },
        max_results: { type: "integer", minimum: 1, description: `Matches returned at most (default ${DEFAULT_GREP_RESULTS})` },
      },
      required: ["pattern"],
      additionalProperties: false,
    },
    kind: "coding",
    truncation: { maxChars: 20_000, maxLines: 200, mode: "tail" },
    async execute({ pattern, path, glob_filter, case_insensitive = false, max_results = DEFAULT_GREP_RESULTS }, context) {
      let regex: RegExp;
      try {
        regex = new RegExp(pattern, case_insensitive ? "i" : "");
      } catch (cause) {
        return error(`grep: invalid regular expression ${JSON.stringify(pattern)}: ${(cause as Error).message}`);
      }
      if (glob_filter !== undefined) checkPattern(workspace, glob_filter, "grep: glob_filter");
      const base = path === undefined ? workspace.root : await workspace.resolvePath(path);
      const info = await stat(base).catch(() => undefined);
      if (!info) return error(`grep: ${path} does not exist`);
      const answer = (matches: string[], more: boolean, engine: string): ToolResultValue => ({
        content: matches.length === 0 ? `No matches for ${pattern}` : more ? `${matches.join("\n")}\n[more matches; stopped at max_results ${max_results}]` : matches.join("\n"),
        structured: { engine, matches: matches.length },
      });
      if (info.isDirectory() && options.ripgrep !== false && (await ripgrepAvailable())) {
        const outcome = await ripgrep({ folder: base, pattern, glob: glob_filter, caseInsensitive: case_insensitive, maxResults: max_results, maxFileBytes: GREP_MAX_FILE_BYTES, signal: context.signal });
        // A pattern rg refuses (look-around, back-references) is searched in JavaScript below.
        if (!("refused" in outcome)) return answer(outcome.matches.map((match) => `${workspace.display(match.path)}:${match.line}: ${match.text}`), outcome.more, "ripgrep");
      }
      const files = info.isDirectory()
        ? (await listFiles(workspace, base, glob_filter ?? "**/*")).sort((a, b) => comparePaths(a.path, b.path))
        : [{ path: base, size: info.size, mtimeMs: info.mtimeMs }];
      // A first test on the whole text (multiline, so ^ and $ still work per line) skips most files without splitting them.
      const anywhere = new RegExp(pattern, case_insensitive ? "im" : "m");
      const matches: string[] = [];
      let more = false;
      const search = async (file: ListedFile): Promise<string[]> => {
        if (file.size > GREP_MAX_FILE_BYTES || context.signal.aborted) return [];
        const data = await readFile(file.path).catch(() => undefined);
        if (!data || isBinary(data)) return [];
        const text = data.toString("utf8");
        if (!text.includes("\r") && !anywhere.test(text)) return [];
        const found: string[] = [];
        const lines = text.split(/\r?\n/);
        for (let index = 0; index < lines.length && found.length <= max_results; index++) {
          if (regex.test(lines[index])) found.push(`${workspace.display(file.path)}:${index + 1}: ${lines[index]}`);
        }
        return found;
      };
      const collect = (found: string[]) => {
        for (const match of found) {
          if (matches.length === max_results) {
            more = true;
            return;
          }
          matches.push(match);
        }
      };
      for (let start = 0; start < files.length && !more && !context.signal.aborted; start += PARALLEL_FILES) {
        for (const found of await Promise.all(files.slice(start, start + PARALLEL_FILES).map(search))) collect(found);
      }
      return answer(matches, more, "javascript");
    },
  });
}
