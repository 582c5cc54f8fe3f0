import { spawn } from "node:child_process";
import { statSync } from "node:fs";

/** Default time a command may run. */
export const DEFAULT_EXEC_TIMEOUT_MS = 10_000;
/** The longest time a command may be given. */
export const MAX_EXEC_TIMEOUT_MS = 600_000;
/** Time between SIGTERM and SIGKILL when a command is stopped. */
export const KILL_GRACE_MS = 2_000;
/** How long the call waits, after the shell exited, for pipes held by a process that left the group. */
export const PIPE_DRAIN_MS = 1_000;
/** Characters of stdout (and of stderr) kept in memory per command; the rest is dropped with a note. */
export const MAX_CAPTURED_CHARS = 10_000_000;

export interface ExecOptions {
  /** Milliseconds before the process group gets SIGTERM, then SIGKILL 2 s later. Default 10 s, at most 600 s. */
  timeoutMs?: number;
  /** Working directory (default: the current one). */
  cwd?: string;
  /**
   * Variables for the child. The inherited environment (`inheritEnv`, default `process.env`) is
   * filtered of secret-looking names; variables given here are kept as they are.
   */
  env?: Record<string, string | undefined>;
  /** The environment the child inherits before filtering (default `process.env`). */
  inheritEnv?: Record<string, string | undefined>;
  /** Secret-looking inherited variables that the child may keep anyway, by exact name. */
  allowEnv?: readonly string[];
  /** Stops the command (the whole process group) like a timeout. */
  signal?: AbortSignal;
  /** Called with each chunk of output as it arrives. */
  onOutput?(stream: "stdout" | "stderr", text: string): void;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  /** The shell's exit code; `null` when it was ended by a signal. */
  exitCode: number | null;
  /** The signal that ended the shell, if any. */
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** Stopped through `signal` (an abort). */
  aborted: boolean;
  durationMs: number;
}

/** Names that look like secrets: `*_API_KEY`, `*_SECRET`, `*_TOKEN`, `*_PASSWORD`, `*_CREDENTIAL(S)`. */
const SECRET_NAME = /(^|_)(API_KEY|SECRET|TOKEN|PASSWORD|CREDENTIALS?)$/i;

export function looksLikeSecret(name: string): boolean {
  return SECRET_NAME.test(name);
}

/** The inherited environment without secret-looking variables (except those allowed by name), plus `extra`. */
export function childEnvironment(
  inherited: Record<string, string | undefined>,
  extra: Record<string, string | undefined> = {},
  allow: readonly string[] = [],
): Record<string, string> {
  const allowed = new Set(allow);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(inherited)) {
    if (value !== undefined && (!looksLikeSecret(name) || allowed.has(name))) env[name] = value;
  }
  for (const [name, value] of Object.entries(extra)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

export function checkTimeout(timeoutMs: number | undefined): number {
  if (timeoutMs === undefined) return DEFAULT_EXEC_TIMEOUT_MS;
  if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new RangeError(`exec: timeoutMs must be a positive number of milliseconds, got ${String(timeoutMs)}`);
  }
  if (timeoutMs > MAX_EXEC_TIMEOUT_MS) throw new RangeError(`exec: timeoutMs ${timeoutMs} is above the maximum of ${MAX_EXEC_TIMEOUT_MS} ms (600 s)`);
  return timeoutMs;
}

/** Signals every process of the group; false when none is left. */
function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `command` with `bash -c` in a process group of its own. On timeout (or abort) the group gets
 * SIGTERM, then SIGKILL 2 s later. When the shell exits, whatever it left running in its group is
 * killed too, so no child outlives the call (a process that started its own session escapes this).
 */
export function exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
  if (typeof command !== "string" || command.trim() === "") return Promise.reject(new TypeError("exec: the command must be a non-empty string"));
  let timeoutMs: number;
  try {
    timeoutMs = checkTimeout(options.timeoutMs);
  } catch (error) {
    return Promise.reject(error);
  }
  if (options.cwd !== undefined && !statSync(options.cwd, { throwIfNoEntry: false })?.isDirectory()) {
    return Promise.reject(new Error(`exec: the working directory ${options.cwd} does not exist or is not a folder`));
  }
  const started = performance.now();
  const env = childEnvironment(options.inheritEnv ?? process.env, options.env, options.allowEnv);
  return new Promise<ExecResult>((resolve, reject) => {
    const child = spawn("bash", ["-c", command], { cwd: options.cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    const out = { stdout: "", stderr: "" };
    let timedOut = false;
    let aborted = false;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    const capture = (stream: "stdout" | "stderr") => (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      if (out[stream].length < MAX_CAPTURED_CHARS) {
        out[stream] += text;
        if (out[stream].length >= MAX_CAPTURED_CHARS) out[stream] += `\n[exec: ${stream} capture stopped at ${MAX_CAPTURED_CHARS} characters]`;
      }
      options.onOutput?.(stream, text);
    };
    child.stdout.on("data", capture("stdout"));
    child.stderr.on("data", capture("stderr"));
    const stop = () => {
      if (child.pid === undefined || killTimer) return;
      signalGroup(child.pid, "SIGTERM");
      killTimer = setTimeout(() => signalGroup(child.pid!, "SIGKILL"), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, timeoutMs);
    const onAbort = () => {
      aborted = true;
      stop();
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener("abort", onAbort, { once: true });
    // The shell is gone: the rest of its group goes too (this also closes the pipes they held). A
    // process that left the group (setsid) may still hold them: after a moment they are closed anyway.
    child.on("exit", () => {
      if (child.pid !== undefined) signalGroup(child.pid, "SIGKILL");
      drainTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, PIPE_DRAIN_MS);
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      options.signal?.removeEventListener("abort", onAbort);
      reject(new Error(`exec: could not start bash: ${error.message}`, { cause: error }));
    });
    child.on("close", (exitCode, signal) => {
      clearTimeout(timer);
      clearTimeout(killTimer);
      clearTimeout(drainTimer);
      options.signal?.removeEventListener("abort", onAbort);
      resolve({ ...out, exitCode, signal, timedOut, aborted, durationMs: Math.round(performance.now() - started) });
    });
  });
}
