// Durable `serve` replicas as real child processes, and an SSE client that counts what it received
// (the seq a reattach names). For test/durable/*.test.ts and bench/durable-recovery.ts.
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { tsChild } from "../ts-child.js";

const root = join(import.meta.dirname, "../..");

export interface Replica {
  child: ChildProcess;
  url: string;
  log(): string;
  /** Resolves once the process exited (a SIGKILL included). */
  exited: Promise<void>;
}

/** Starts `test/durable/serve-child.ts` (or `agentloop serve` with `cli: true`) and waits for it to listen. */
export async function startReplica(env: Record<string, string>, options: { cli?: boolean } = {}): Promise<Replica> {
  // Bundled once per test process (test/ts-child.ts): every replica runs the same code, so DBOS
  // gives them the same application version (a hash of the workflow's source) and they recover each other's runs.
  const args = options.cli ? [...(await tsChild(join(root, "src/cli/main.ts"))), "serve"] : await tsChild(join(root, "test/durable/serve-child.ts"));
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, NODE_NO_WARNINGS: "1", AGENT_PORT: "0", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    const check = () => {
      const match = /listening (?:on )?(http:\/\/\S+)/.exec(out.replace(/\x1b\[[0-9;]*m/g, ""));
      if (match) resolve({ child, url: match[1]!, log: () => err, exited });
    };
    child.stdout!.on("data", (chunk) => {
      out += chunk;
      check();
    });
    child.stderr!.on("data", (chunk) => {
      err += chunk;
    });
    child.once("exit", (code) => reject(new Error(`replica exited (${code}) before listening:\n${out}\n${err}`)));
  });
}

/** The `data:` events of an SSE body as they arrive; `onEvent` sees each one (with its count). */
export async function readEvents(response: Response, onEvent?: (event: string, count: number) => void): Promise<{ events: string[]; complete: boolean; error?: string }> {
  const events: string[] = [];
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block
          .split("\n")
          .filter((line) => line.startsWith("data: "))
          .map((line) => line.slice(6))
          .join("\n");
        events.push(data);
        onEvent?.(data, events.length);
        end = buffer.indexOf("\n\n");
      }
    }
  } catch (error) {
    // Why the stream broke (the response's status, the error and its cause), for a failure's message.
    const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return { events, complete: false, error: `HTTP ${response.status}: ${error instanceof Error ? error.message : String(error)}${cause}` };
  }
  return { events, complete: events.at(-1) === "[DONE]" };
}

/** The answer text of a stream's events (progress blocks left out). */
export const answerOf = (events: string[]) =>
  events
    .filter((event) => event.startsWith("{"))
    .map((event) => (JSON.parse(event) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? "")
    .filter((content) => !content.startsWith("{"))
    .join("");

export const chatBody = (content: string, sessionId?: string) =>
  JSON.stringify({ model: "durable", messages: [{ role: "user", content }], stream: true, ...(sessionId ? { session_id: sessionId } : {}) });

export function postChat(url: string, content: string, sessionId?: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: chatBody(content, sessionId) });
}
