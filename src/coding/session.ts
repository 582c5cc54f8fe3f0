// A coding session's setup: the provider profile (tool set and base prompt per model family), the
// environment block and the project's instruction files, assembled into the system prompt.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { release } from "node:os";
import { join, relative, sep } from "node:path";
import type { Tool } from "../tools/tool.js";
import { childEnvironment } from "./exec.js";
import { applyPatchTool, editFileTool, globTool, grepTool, readFileTool, shellTool, writeFileTool } from "./tools.js";
import type { Workspace } from "./workspace.js";

/** The tool set and base prompt a model family works best with. */
export interface CodingProfile {
  /** `openai`, `anthropic`, or a name of your own. */
  id: string;
  /** The tools over a workspace (sub-agent tools are added by the session). */
  tools(workspace: Workspace): Tool[];
  /** The profile's base instructions: identity, tool use, coding practice. */
  basePrompt: string;
  /** Instruction files read besides `AGENTS.md` (which every profile reads), e.g. `CLAUDE.md`. */
  instructionFiles: readonly string[];
}

const COMMON_PRACTICE = `Work in small, verified steps: look at the code before changing it (read_file, grep, glob), make the change, then run the project's checks or tests with shell and read their output. Keep changes focused on the task; follow the code's existing style; do not reformat what you do not change. Paths are relative to the working directory; you cannot reach files outside it. A command runs with a 10 s timeout unless you give timeout_ms (at most 600000). When you are done, say briefly what you changed and how you checked it.`;

/** OpenAI models (GPT, o-series, codex): edits through `apply_patch`, new files through `write_file` too. */
export const OPENAI_PROFILE: CodingProfile = {
  id: "openai",
  tools: (workspace) => [readFileTool(workspace), applyPatchTool(workspace), writeFileTool(workspace), shellTool(workspace), grepTool(workspace), globTool(workspace)],
  basePrompt: `You are a coding agent working in a software project on the user's machine. You read and change its files and run commands through your tools, until the task is done.

Edit files with apply_patch: one patch may add, delete, update and rename several files. In an update, each hunk starts with "@@" (optionally followed by a line just above the change, such as a function signature), then about 3 unchanged context lines (prefixed with a space), the removed lines ("-") and the added lines ("+"), then context again. Copy context lines exactly from the file. A patch applies completely or not at all; if it is refused, read the file again and send a corrected patch.

${COMMON_PRACTICE}`,
  instructionFiles: [".codex/instructions.md"],
};

/** Anthropic models (Claude): exact-match `edit_file` (`old_string` → `new_string`). */
export const ANTHROPIC_PROFILE: CodingProfile = {
  id: "anthropic",
  tools: (workspace) => [readFileTool(workspace), writeFileTool(workspace), editFileTool(workspace), shellTool(workspace), grepTool(workspace), globTool(workspace)],
  basePrompt: `You are a coding agent working in a software project on the user's machine. You read and change its files and run commands through your tools, until the task is done.

Prefer editing existing files to creating new ones. Read a file before you edit it. edit_file replaces old_string with new_string exactly: old_string must match the file character for character (indentation included) and only once, so include enough surrounding lines to make it unique, or set replace_all to change every occurrence. Use write_file for new files or complete rewrites.

${COMMON_PRACTICE}`,
  instructionFiles: ["CLAUDE.md"],
};

/**
 * Google models (Gemini): the tool set of Google's own coding agent (Gemini CLI): exact-match
 * replacement (`edit_file` here, its `replace`), whole-file writes, shell, grep and glob, and its
 * project file `GEMINI.md`; a prompt in its conventions (explore in parallel, explain a command that
 * changes things before running it, verify with the project's own checks).
 */
export const GEMINI_PROFILE: CodingProfile = {
  id: "gemini",
  tools: (workspace) => [readFileTool(workspace), writeFileTool(workspace), editFileTool(workspace), shellTool(workspace), grepTool(workspace), globTool(workspace)],
  basePrompt: `You are an interactive coding agent working in a software project on the user's machine. You read and change its files and run commands through your tools, until the task is done.

Understand first: use grep and glob to find the relevant files (several independent searches can run in parallel, in one turn), and read_file to read them, before you change anything. Follow the project's conventions: look at neighbouring code, its tests and its configuration before adding a library or a pattern. To change a file, read it, then call edit_file with old_string copied exactly from it (indentation included) and the new text as new_string, with enough surrounding lines that old_string occurs only once (or set replace_all); use write_file for new files. Before running a command that changes files or the system, say in one line what it does. Verify with the project's own build, lint and test commands. Keep your messages short: no preamble, no summaries of what you are about to do unless asked.

${COMMON_PRACTICE}`,
  instructionFiles: ["GEMINI.md"],
};

export const CODING_PROFILES: Readonly<Record<string, CodingProfile>> = { openai: OPENAI_PROFILE, anthropic: ANTHROPIC_PROFILE, gemini: GEMINI_PROFILE };

/**
 * The profile for a model: `openai:…`, `openai-responses:…` and GPT / o-series / codex names get
 * `openai` (apply_patch); `google:…` and Gemini names get `gemini`; everything else (Claude, local
 * models, a scripted model) gets `anthropic`'s exact-match edit_file, the format most models handle.
 */
export function profileForModel(model: string | undefined): CodingProfile {
  const spec = (model ?? "").toLowerCase();
  const name = spec.includes(":") ? spec.slice(spec.indexOf(":") + 1) : spec;
  if (spec.startsWith("openai:") || spec.startsWith("openai-responses:") || /^(gpt-|o\d|codex|chatgpt)/.test(name)) return OPENAI_PROFILE;
  if (spec.startsWith("google:") || name.startsWith("gemini")) return GEMINI_PROFILE;
  return ANTHROPIC_PROFILE;
}

/** The project instruction budget of the system prompt. */
export const PROJECT_INSTRUCTIONS_BUDGET = 32 * 1024;

function run(command: string, args: string[], cwd: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, timeout: 5_000, env: childEnvironment(process.env) }, (error, stdout) => resolve(error ? undefined : stdout.trim()));
  });
}

export interface GitContext {
  root: string;
  branch: string;
  /** `2 modified, 1 untracked` or `clean`. */
  status: string;
  /** The last commits, `abc1234 message` one a line. */
  recentCommits: string[];
}

/** Git's view of a folder, or undefined outside a repository (or without git). */
export async function gitContext(folder: string): Promise<GitContext | undefined> {
  const root = await run("git", ["rev-parse", "--show-toplevel"], folder);
  if (!root) return undefined;
  const [branch, porcelain, log] = await Promise.all([
    run("git", ["branch", "--show-current"], folder),
    run("git", ["status", "--porcelain"], folder),
    run("git", ["log", "--oneline", "-5"], folder),
  ]);
  let modified = 0;
  let untracked = 0;
  for (const line of (porcelain ?? "").split("\n")) {
    if (line.startsWith("??")) untracked++;
    else if (line.trim() !== "") modified++;
  }
  const status = modified + untracked === 0 ? "clean" : [modified && `${modified} changed`, untracked && `${untracked} untracked`].filter(Boolean).join(", ");
  return { root, branch: branch || "(detached HEAD)", status, recentCommits: log ? log.split("\n") : [] };
}

export interface EnvironmentInfo {
  workingDirectory: string;
  platform: string;
  osVersion: string;
  /** YYYY-MM-DD */
  date: string;
  model?: string;
  git?: GitContext;
}

/** What the environment block says, gathered once at session start. */
export async function environmentInfo(workspace: Workspace, options: { model?: string; now?: Date } = {}): Promise<EnvironmentInfo> {
  return {
    workingDirectory: workspace.root,
    platform: process.platform,
    osVersion: `${process.platform === "darwin" ? "Darwin" : process.platform === "linux" ? "Linux" : process.platform} ${release()}`,
    date: (options.now ?? new Date()).toISOString().slice(0, 10),
    model: options.model,
    git: await gitContext(workspace.root),
  };
}

/** The `<environment>` block of the system prompt. */
export function environmentBlock(info: EnvironmentInfo): string {
  const lines = [
    `Working directory: ${info.workingDirectory}`,
    `Is git repository: ${info.git ? "true" : "false"}`,
    ...(info.git ? [`Git branch: ${info.git.branch}`, `Git status: ${info.git.status}`] : []),
    ...(info.git?.recentCommits.length ? ["Recent commits:", ...info.git.recentCommits.map((commit) => `  ${commit}`)] : []),
    `Platform: ${info.platform}`,
    `OS version: ${info.osVersion}`,
    `Today's date: ${info.date}`,
    ...(info.model ? [`Model: ${info.model}`] : []),
  ];
  return `<environment>\n${lines.join("\n")}\n</environment>`;
}

export interface ProjectInstructions {
  /** The files' text, each under a `## <path>` heading, within the budget. */
  text: string;
  /** The files read, relative to the workspace root's git root (or the root). */
  files: string[];
  /** What the budget cut: `AGENTS.md: 1200 of 40000 bytes kept`, `docs/AGENTS.md: left out`. */
  cut: string[];
}

/**
 * The project's instruction files: `AGENTS.md` and the profile's own (`CLAUDE.md`,
 * `.codex/instructions.md`) in each folder from the git root (or the workspace root) down to the
 * workspace root, outer folders first (deeper ones come later and so weigh more), within a byte budget.
 */
export async function projectInstructions(workspace: Workspace, profile: CodingProfile, options: { budget?: number; gitRoot?: string } = {}): Promise<ProjectInstructions> {
  const budget = options.budget ?? PROJECT_INSTRUCTIONS_BUDGET;
  const top = options.gitRoot && !relative(options.gitRoot, workspace.root).startsWith("..") ? options.gitRoot : workspace.root;
  const folders = [top];
  const rest = relative(top, workspace.root);
  if (rest !== "") for (const part of rest.split(sep)) folders.push(join(folders[folders.length - 1], part));
  const names = ["AGENTS.md", ...profile.instructionFiles];
  const found: Array<{ path: string; text: string }> = [];
  for (const folder of folders) {
    for (const name of names) {
      const text = await readFile(join(folder, name), "utf8").catch(() => undefined);
      if (text !== undefined && text.trim() !== "") found.push({ path: relative(top, join(folder, name)) || name, text: text.trimEnd() });
    }
  }
  const sections: string[] = [];
  const cut: string[] = [];
  let used = 0;
  for (const { path, text } of found) {
    const section = `## ${path}\n\n${text}`;
    const size = Buffer.byteLength(section);
    if (used + size <= budget) {
      sections.push(section);
      used += size;
      continue;
    }
    const room = budget - used;
    if (room > 200) {
      // Cut at a character boundary within the remaining bytes.
      const kept = Buffer.from(section).subarray(0, room).toString("utf8").replace(/\uFFFD$/, "");
      sections.push(kept);
      used = budget;
      cut.push(`${path}: ${Buffer.byteLength(kept)} of ${size} bytes kept`);
    } else {
      cut.push(`${path}: left out (${size} bytes)`);
    }
  }
  let text = sections.join("\n\n");
  if (cut.length > 0) text += `\n\n[Project instructions truncated at ${Math.round(budget / 1024)}KB: ${cut.join("; ")}]`;
  return { text, files: found.map((file) => file.path), cut };
}

/**
 * The system prompt, in layers: the profile's base instructions, the environment block, the
 * project's instruction files, then the user's own instructions (last, so they weigh most).
 */
export function codingSystemPrompt(parts: { profile: CodingProfile; environment: EnvironmentInfo; project?: ProjectInstructions; instructions?: string }): string {
  const sections = [parts.profile.basePrompt, environmentBlock(parts.environment)];
  if (parts.project?.text) sections.push(`<project_instructions>\n${parts.project.text}\n</project_instructions>`);
  if (parts.instructions?.trim()) sections.push(`<user_instructions>\n${parts.instructions.trim()}\n</user_instructions>`);
  return sections.join("\n\n");
}
