// ripgrep behind the `grep` tool, when the machine has it (`rg` on the PATH; nothing is downloaded).
// The JavaScript search in tools.ts stays the fallback, and answers what rg cannot (look-around,
// back-references: rg refuses them and the tool searches in JavaScript instead).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { childEnvironment } from "./exec.js";

let available: Promise<boolean> | undefined;

/** Whether `rg` runs on this machine (asked once per process). */
export function ripgrepAvailable(): Promise<boolean> {
  available ??= new Promise((resolve) => {
    const child = spawn("rg", ["--version"], { stdio: "ignore" });
    child.once("error", () => resolve(false));
    child.once("exit", (code) => resolve(code === 0));
  });
  return available;
}

export interface RipgrepSearch {
  /** The folder searched (absolute); printed paths are relative to it. */
  folder: string;
  pattern: string;
  /** A glob relative to `folder` (`*.ts`: its own files; `**\/*.ts`: all). */
  glob?: string;
  caseInsensitive: boolean;
  /** Matches wanted; rg is stopped once one more has arrived. */
  maxResults: number;
  maxFileBytes: number;
  signal: AbortSignal;
}

export type RipgrepOutcome = { matches: Array<{ path: string; line: number; text: string }>; more: boolean } | { refused: string };

/**
 * Searches a folder with rg, the same files as the JavaScript search (dot files and ignored files
 * too, never node_modules or .git, no binary files, none over `maxFileBytes`), in path order.
 * Symlinks are not followed. `refused` when rg rejects the pattern or fails.
 */
export function ripgrep(search: RipgrepSearch): Promise<RipgrepOutcome> {
  const args = ["--no-config", "--null", "--line-number", "--no-heading", "--with-filename", "--color", "never", "--no-ignore", "--hidden", "--crlf", "--sort", "path"];
  args.push("--max-filesize", String(search.maxFileBytes), "-g", "!**/node_modules/**", "-g", "!**/.git/**");
  if (search.caseInsensitive) args.push("--ignore-case");
  // rg's globs follow .gitignore rules: a leading "/" anchors the glob to the folder searched, as the JavaScript glob is.
  if (search.glob !== undefined) args.push("-g", search.glob.startsWith("/") ? search.glob : `/${search.glob}`);
  args.push("--regexp", search.pattern);
  return new Promise((resolve) => {
    const child = spawn("rg", args, { cwd: search.folder, env: childEnvironment(process.env), stdio: ["ignore", "pipe", "pipe"], signal: search.signal });
    const matches: Array<{ path: string; line: number; text: string }> = [];
    let more = false;
    let rest = "";
    let stderr = "";
    const take = (record: string) => {
      const nul = record.indexOf("\0");
      const colon = record.indexOf(":", nul + 1);
      if (nul === -1 || colon === -1) return;
      if (matches.length === search.maxResults) {
        more = true;
        child.kill();
        return;
      }
      matches.push({ path: join(search.folder, record.slice(0, nul)), line: Number(record.slice(nul + 1, colon)), text: record.slice(colon + 1).replace(/\r$/, "") });
    };
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      if (more) return;
      const records = (rest + chunk).split("\n");
      rest = records.pop() ?? "";
      for (const record of records) if (!more) take(record);
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.once("error", (error) => resolve({ refused: error.message }));
    child.once("close", (code) => {
      if (rest && !more) take(rest);
      // 0: matches, 1: none; 2 with output: some files could not be read (kept as a partial answer).
      if (more || code === 0 || code === 1 || (code === 2 && matches.length > 0 && !/regex parse error|error parsing/.test(stderr))) resolve({ matches, more });
      else resolve({ refused: stderr.trim() || `rg exited with ${code}` });
    });
  });
}
