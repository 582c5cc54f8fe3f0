import { realpathSync, statSync } from "node:fs";
import { realpath, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { type ExecOptions, type ExecResult, exec } from "./exec.js";

export interface WorkspaceOptions {
  /** The folder the tools work in. It must exist. */
  root: string;
  /** Let file operations reach paths outside the root (default false). */
  allowOutside?: boolean;
  /** Secret-looking environment variables that commands may still see, by exact name. */
  allowEnv?: readonly string[];
  /** Variables added to every command's environment (kept as given, never filtered). */
  env?: Record<string, string | undefined>;
  /** The environment commands inherit before filtering (default `process.env`). */
  inheritEnv?: Record<string, string | undefined>;
}

/** A path that leaves the workspace. */
export class PathOutsideWorkspaceError extends Error {
  constructor(
    readonly path: string,
    readonly resolved: string,
    readonly root: string,
    how: string,
  ) {
    super(`path "${path}" is outside the workspace ${root} (${how}, resolves to ${resolved}); only paths inside the workspace are allowed`);
    this.name = "PathOutsideWorkspaceError";
  }
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** The real path of `path`, or of its nearest existing ancestor with the rest appended (for files not yet written). */
async function realpathOrAncestor(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    const parent = dirname(path);
    if (parent === path) return path;
    return join(await realpathOrAncestor(parent), basename(path));
  }
}

/**
 * The execution environment of a coding session: a root folder that file operations are confined to,
 * and `exec` for commands (run there by default, with secrets filtered from their environment).
 */
export class Workspace {
  /** The root, with symlinks resolved. */
  readonly root: string;
  readonly allowOutside: boolean;
  private readonly options: WorkspaceOptions;

  constructor(options: WorkspaceOptions) {
    if (!options || typeof options.root !== "string" || options.root === "") throw new TypeError("Workspace: root must be a folder path");
    try {
      this.root = realpathSync(resolve(options.root));
    } catch {
      throw new Error(`Workspace: the root folder ${resolve(options.root)} does not exist`);
    }
    // A file here would fail later, at the first command, as `spawn ENOTDIR`.
    if (!statSync(this.root).isDirectory()) throw new Error(`Workspace: the root ${resolve(options.root)} is a file, not a folder`);
    this.allowOutside = options.allowOutside ?? false;
    this.options = options;
  }

  /**
   * Resolves `path` (relative to the root, or absolute) to a real path, refusing one that leaves the
   * root through `..`, an absolute path or a symlink, unless `allowOutside` is set.
   */
  async resolvePath(path: string): Promise<string> {
    if (typeof path !== "string" || path === "") throw new TypeError("a file path must be a non-empty string");
    if (path.includes("\0")) throw new TypeError(`file path ${JSON.stringify(path)} contains a NUL character`);
    const lexical = resolve(this.root, path);
    if (!this.allowOutside && !inside(this.root, lexical)) {
      throw new PathOutsideWorkspaceError(path, lexical, this.root, isAbsolute(path) ? "absolute path" : "'..' leaves the root");
    }
    const real = await realpathOrAncestor(lexical);
    if (!this.allowOutside && !inside(this.root, real)) throw new PathOutsideWorkspaceError(path, real, this.root, "a symlink leads out");
    return real;
  }

  /**
   * A workspace rooted at `folder` (a folder inside this one), with the same settings: what a
   * sub-agent scoped to a subfolder works in.
   */
  async scoped(folder: string): Promise<Workspace> {
    const root = await this.resolvePath(folder);
    const info = await stat(root).catch(() => undefined);
    if (!info?.isDirectory()) throw new Error(`${folder} is not a folder of the workspace ${this.root}`);
    return new Workspace({ ...this.options, root });
  }

  /** The path as the model should see it: relative to the root when inside it. */
  display(path: string): string {
    return inside(this.root, path) ? relative(this.root, path) || "." : path;
  }

  /** Runs a command in the workspace (see `exec`); `cwd` is confined like any path. */
  async exec(command: string, options: Omit<ExecOptions, "inheritEnv" | "allowEnv"> = {}): Promise<ExecResult> {
    const cwd = options.cwd === undefined ? this.root : await this.resolvePath(options.cwd);
    return exec(command, {
      ...options,
      cwd,
      env: { ...this.options.env, ...options.env },
      inheritEnv: this.options.inheritEnv,
      allowEnv: this.options.allowEnv,
    });
  }
}
