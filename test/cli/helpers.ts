import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { Writable } from "node:stream";
import { finished } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

export const repositoryRoot = fileURLToPath(new URL("../../", import.meta.url));

/** The parent's environment without anything that would change how the CLI picks its agent. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(MEMORY_|AGENT_|MODEL_|MCP_|PEER_|DEBUG_MOCK|TOOL_CALL_MODE|AGENTIC_LOOP|NO_COLOR|FORCE_COLOR|OTEL_)/.test(key)) continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

export interface CliProcess {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves when stdout (or stderr) matches; rejects after the timeout (default 60 s: a child starting on a loaded machine is slow) with both outputs. */
  waitFor(pattern: RegExp, stream?: "stdout" | "stderr", timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  write(text: string): void;
}

const tsxLoader = import.meta.resolve("tsx");
const cliMain = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const tsconfig = fileURLToPath(new URL("../../tsconfig.json", import.meta.url));

/**
 * The node arguments that run `agentloop <args>` from src: the bundle scripts/run-tests.mjs built
 * from src/cli/main.ts at the start of this run (AGENTLOOP_TEST_CLI), which starts as plain node,
 * or else src/cli/main.ts through tsx (absolute paths: any working folder).
 */
export function cliArgs(args: string[]): string[] {
  const bundled = process.env.AGENTLOOP_TEST_CLI;
  return bundled ? [bundled, ...args] : ["--import", tsxLoader, cliMain, ...args];
}

/** Runs `agentloop <args>` from source in a child process (in the repository, or in `cwd`). */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv, cwd = repositoryRoot): CliProcess {
  // tsx reads the tsconfig of the working folder: name the repository's (its "agentloop" paths) from elsewhere.
  return spawnNode(cliArgs(args), { TSX_TSCONFIG_PATH: tsconfig, ...env }, cwd);
}

/** Runs node with `nodeArgs` in a child process (an installed CLI, a script), watched as `spawnCli` watches the CLI. */
export function spawnNode(nodeArgs: string[], env: NodeJS.ProcessEnv, cwd = repositoryRoot): CliProcess {
  const child = spawn(process.execPath, nodeArgs, { cwd, env, stdio: "pipe" });
  let out = "";
  let err = "";
  const listeners = new Set<() => void>();
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    for (const listener of [...listeners]) listener();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    err += chunk.toString();
    for (const listener of [...listeners]) listener();
  });
  // After the process exits, what it wrote last may still be in the pipes (seen under load: exit 2
  // with its error line read after "exit"): the streams' ends are awaited too, for at most 2 s (a
  // grandchild may hold them open).
  const drained = Promise.all([finished(child.stdout), finished(child.stderr)]).catch(() => {});
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      const cap = setTimeout(() => resolve({ code, signal }), 2000);
      void drained.then(() => {
        clearTimeout(cap);
        resolve({ code, signal });
      });
    }),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    write: (text) => child.stdin.write(text),
    waitFor(pattern, stream = "stdout", timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = (stream === "stdout" ? out : err).match(pattern);
          if (match) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${pattern} on ${stream}\n--- stdout ---\n${out}\n--- stderr ---\n${err}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
  };
}

/** Runs a CLI command to the end with the given stdin. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv, input = "", cwd?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = spawnCli(args, env, cwd);
  cli.child.stdin.end(input);
  const { code } = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

/** A writable stream (not a TTY) that keeps what is written, for commands run in-process. */
export function captured(): NodeJS.WritableStream & { isTTY?: boolean; text(): string } {
  let text = "";
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return Object.assign(stream, { text: () => text });
}

/** Waits until `agentloop serve --json` (started with spawnCli) listens and is ready; its URL. */
export async function readyUrl(cli: CliProcess, timeoutMs?: number): Promise<string> {
  const [, url] = (await cli.waitFor(/"event":"listening".*"url":"([^"]+)"/, "stdout", timeoutMs)) as RegExpMatchArray;
  await cli.waitFor(/"event":"ready","status":"ready"/, "stdout", timeoutMs);
  return url;
}

/** POSTs an OpenAI chat request (one user message) to a server at `url`. */
export function postChat(url: string, content: string, extra: Record<string, unknown> = {}): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content }], ...extra }),
  });
}


/** Terminal output without its escape sequences and carriage returns. */
export const plain = (text: string) => text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "");

export interface TerminalProcess {
  output(): string;
  raw(): string;
  type(text: string): void;
  exited: Promise<number>;
  /** Resolves with the position after the match when the output (from `from` on) matches; fails after 60 s with the output. */
  waitFor(pattern: RegExp, from?: number): Promise<number>;
}

/** `agentloop <args>` in a pseudo-terminal (@lydell/node-pty): what it printed so far, a way to wait for text and to type. */
export function inTerminal(args: string[], cwd: string = repositoryRoot, env: NodeJS.ProcessEnv = cleanEnv()): TerminalProcess {
  // Loaded here, not for every file that uses these helpers (a native addon).
  const pty = createRequire(import.meta.url)("@lydell/node-pty") as typeof import("@lydell/node-pty");
  const child = pty.spawn(process.execPath, cliArgs(args), { cwd, cols: 200, rows: 50, env: { TSX_TSCONFIG_PATH: tsconfig, TERM: "xterm-256color", ...env } as Record<string, string> });
  let output = "";
  const listeners = new Set<() => void>();
  child.onData((data) => {
    output += data;
    for (const listener of [...listeners]) listener();
  });
  const exited = new Promise<number>((resolve) => child.onExit(({ exitCode }) => resolve(exitCode)));
  return {
    output: () => plain(output),
    raw: () => output,
    type: (text: string) => child.write(text),
    exited,
    waitFor(pattern: RegExp, from = 0): Promise<number> {
      return new Promise((resolve, reject) => {
        const check = () => {
          const text = plain(output);
          const match = pattern.exec(text.slice(from));
          if (!match) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve(from + match.index + match[0].length);
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          child.kill();
          reject(new Error(`timed out waiting for ${pattern}\n--- output ---\n${plain(output)}`));
        }, 60_000);
        listeners.add(check);
        check();
      });
    },
  };
}
