import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The script that starts the MCP server `name` (scripts/mcp-test-servers.mjs): under
 * scripts/run-tests.mjs, its bundle of this run (the same code in one file: about half the CPU to
 * start), else `source`.
 */
export function mcpTestServer(name: string, source: string): string {
  const folder = process.env.AGENTLOOP_TEST_MCP_SERVERS;
  const bundle = folder ? join(folder, `${name}.mjs`) : undefined;
  return bundle && existsSync(bundle) ? bundle : source;
}

export const everythingServerPath = mcpTestServer(
  "everything",
  fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url)),
);
export const filesystemServerPath = mcpTestServer(
  "filesystem",
  fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", import.meta.url)),
);
export const dynamicServerPath = mcpTestServer("dynamic-server", fileURLToPath(new URL("./fixtures/dynamic-server.mjs", import.meta.url)));

/** The everything reference server over stdio. */
export function everythingStdio() {
  return { command: process.execPath, args: [everythingServerPath, "stdio"] };
}

/** Polls until `check` is true (fails after `timeoutMs`). */
export async function waitFor(check: () => boolean, timeoutMs = 5000, what = "condition"): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

export interface RunningHttpServer {
  process: ChildProcess;
  port: number;
  stop(): Promise<void>;
}

/** Starts the everything server in Streamable HTTP mode on `port` and waits until it listens. */
export async function startEverythingHttp(port: number): Promise<RunningHttpServer> {
  const child = spawn(process.execPath, [everythingServerPath, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  await new Promise<void>((resolve, reject) => {
    let output = "";
    // Generous: on a busy machine a node server can take seconds to start. A server that never
    // says it listens is killed, so it cannot keep the test process alive.
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`everything server did not start within 30 s: ${output}`));
    }, 30_000);
    child.stderr!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("listening on port")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`everything server exited (${code}): ${output}`));
    });
  });
  child.stderr!.resume();
  return {
    process: child,
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGKILL");
      }),
  };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const resumableServerPath = mcpTestServer("resumable-server", fileURLToPath(new URL("./fixtures/resumable-server.mjs", import.meta.url)));

/** Starts a node MCP server script that prints `listening on port <n>` on stderr (PORT=0: any port). */
export async function startHttpServerScript(path: string, port = 0): Promise<RunningHttpServer> {
  const child = spawn(process.execPath, [path], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"] });
  const listening = await new Promise<number>((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${path} did not start within 30 s: ${output}`));
    }, 30_000);
    child.stderr!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on port (\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${path} exited (${code}): ${output}`));
    });
  });
  child.stderr!.resume();
  return {
    process: child,
    port: listening,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGKILL");
      }),
  };
}

export const elicitServerPath = mcpTestServer("elicit-server", fileURLToPath(new URL("./fixtures/elicit-server.mjs", import.meta.url)));
