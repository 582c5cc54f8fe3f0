import { createAgentServer, type AgentServer, type AgentServerOptions } from "../../src/server/index.js";
import { defineTool, type Tool } from "../../src/index.js";
import type { Model } from "../../src/model/model.js";

/** A tool the scripted model can call: answers `echo: <text>`. */
export const echoTool: Tool = defineTool({
  name: "echo",
  description: "Echoes the text back",
  parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  execute: (args) => `echo: ${String((args as { text: string }).text)}`,
});

/** `write_file`, a tool that needs approval: each run pushes its path onto `written` and answers `wrote <path>`. */
export const writeFileTool = (written: string[]) =>
  defineTool<{ path: string }>({
    name: "write_file",
    description: "Writes a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    needsApproval: true,
    execute: ({ path }) => {
      written.push(path);
      return `wrote ${path}`;
    },
  });

/** Tools named at will (`tool(name, needsApproval)`): each run pushes its name onto `ran` and answers `<name> done`. */
export const recordingTools =
  (ran: string[]) =>
  (name: string, needsApproval = false) =>
    defineTool({
      name,
      description: name,
      parameters: { type: "object" },
      needsApproval,
      execute: () => {
        ran.push(name);
        return `${name} done`;
      },
    });

/** A DEBUG_MOCK_RESPONSES script: one entry per model call. */
export const script = (...entries: Array<string | object>) => JSON.stringify(entries.map((entry) => (typeof entry === "string" ? entry : JSON.stringify(entry))));

export const toolCall = (name: string, args: object, id = "call_1") => ({ tool_calls: [{ id, name, arguments: args }] });

export interface TestServer {
  server: AgentServer;
  url: string;
  logs: string[];
  /** Resolves when a log line matching the pattern appears. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
  close(): Promise<void>;
}

/** Starts an agent server on 127.0.0.1 and a free port, memory in-process, logs captured. */
export async function startTestServer(env: NodeJS.ProcessEnv, options: AgentServerOptions = {}): Promise<TestServer> {
  const logs: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  const server = await createAgentServer({
    env: { MEMORY_TYPE: "memory", ...env },
    build: { tools: [echoTool] },
    ...options,
    log: (line) => {
      logs.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.pattern.test(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    },
  });
  const url = await server.listen(0, "127.0.0.1");
  return {
    server,
    url,
    logs,
    waitForLog(pattern, timeoutMs = 5000) {
      const found = logs.find((line) => pattern.test(line));
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no log line matched ${pattern}; logs:\n${logs.join("\n")}`)), timeoutMs);
        waiters.push({
          pattern,
          resolve: (line) => {
            clearTimeout(timer);
            resolve(line);
          },
        });
      });
    },
    close: () => server.close({ graceMs: 1000 }),
  };
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body), signal });
}

/** A model answer with quotes, a backslash, a newline, non-ASCII and markup: what a wire must escape. */
export const TRICKY = 'He said "hi" \\ then\nleft: café 🚀 <done>';

/**
 * The same agent behind both doors: `test` listening on node:http (the hot path) and `embedded`
 * answered through `AgentServer.fetch`; each replays TRICKY four times, bodies limited to 1 KiB.
 */
export async function twinServers(): Promise<{ test: TestServer; embedded: AgentServer }> {
  const env = { AGENT_NAME: "twin", DEBUG_MOCK_RESPONSES: script(TRICKY, TRICKY, TRICKY, TRICKY), MEMORY_TYPE: "memory" };
  const test = await startTestServer(env, { bodyLimitBytes: 1024 });
  const embedded = await createAgentServer({ env, bodyLimitBytes: 1024, log: () => undefined });
  return { test, embedded };
}

/** A model that never answers: its call ends when its run is aborted; `reached` resolves at its first call. */
export function heldModel() {
  let reach: () => void = () => undefined;
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  const model: Model = {
    provider: "test",
    modelId: "held",
    async *stream(request) {
      reach();
      await new Promise<void>((_resolve, reject) => {
        request.signal?.addEventListener("abort", () => reject(request.signal?.reason), { once: true });
      });
      yield { type: "finish", reason: { unified: "stop", raw: "stop" } };
    },
  };
  return { model, reached };
}
