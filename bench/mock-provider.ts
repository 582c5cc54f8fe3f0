// A scripted OpenAI-compatible Chat Completions server for benchmarks and tests, which also
// speaks Google Gemini's native API (`POST /v1beta/models/{model}:generateContent` and
// `:streamGenerateContent?alt=sse`) for the same scripts.
//
// Each model name is a script: N tool-calling turns, then a final answer. The server is
// stateless: it derives the turn from the number of `tool` messages (Gemini: `functionResponse`
// parts) in the request, so any number of conversations can run at once. Every response is serialized once and cached, so
// the server costs the contestants as little as possible. Run it in a child process
// (`spawnMockProvider`) when the client's CPU time is measured.
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { startChild } from "./child-process.js";

export interface MockScript {
  /** Model calls answered with tool calls before the final answer (default 10). */
  toolTurns?: number;
  /** Tool calls in each tool-calling turn (default 1). */
  toolsPerTurn?: number;
  /** Name of the tool the script calls (default `lookup`). */
  toolName?: string;
  /** The final answer (default {@link DEFAULT_FINAL_TEXT}). Streamed in word-sized chunks. */
  finalText?: string;
  /** Milliseconds before each response starts. */
  latencyMs?: number;
  /** Milliseconds between streamed writes (0: each stream is one write). The first answer
   * chunk is always in the first write, so time to first token is not delayed by it. */
  chunkDelayMs?: number;
}

export interface MockProviderOptions {
  /** Scripts by model name. */
  scripts: Record<string, MockScript>;
  /** Port to listen on (default 0: any free port). Always on 127.0.0.1. */
  port?: number;
}

export interface MockProviderStats {
  requests: number;
  /** Requests answered with an error status. */
  errors: number;
  /** Last error message, to explain a failed check. */
  lastError?: string;
}

export interface MockProvider {
  /** Base URL for OpenAI clients, ending in `/v1`. */
  readonly baseURL: string;
  /** Base URL for Gemini clients (`google(model, { baseURL })`), ending in `/v1beta`. */
  readonly geminiBaseURL: string;
  readonly port: number;
  stats(): Promise<MockProviderStats>;
  close(): Promise<void>;
}

export const DEFAULT_FINAL_TEXT = "All lookups are done and every value checked out, so the answer is forty-two.";
export const DEFAULT_TOOL_NAME = "lookup";

/** The arguments the script sends for call `index` of turn `turn` (both 0-based). */
export function scriptedArguments(turn: number, index: number): { n: number; i: number } {
  return { n: turn, i: index };
}

/** The id the script gives call `index` of turn `turn`. */
export function scriptedCallId(turn: number, index: number): string {
  return `call_${turn}_${index}`;
}

interface PreparedResponse {
  status: number;
  headers: Record<string, string | number>;
  /** One buffer per write; a delay of `chunkDelayMs` separates them. */
  writes: Buffer[];
}

const CREATED = 1_700_000_000;
const USAGE = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 };
const STREAM_RE = /"stream"\s*:\s*true/;
const MODEL_RE = /"model"\s*:\s*"([^"\\]*)"/;
const TOOL_ROLE_RE = /"role"\s*:\s*"tool"/g;
const FUNCTION_RESPONSE_RE = /"functionResponse"\s*:/g;
/** Gemini's routes: `/v1beta/models/{model}:generateContent` and `:streamGenerateContent` (`/v1` too). */
const GEMINI_ROUTE_RE = /^\/v1(?:beta)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;
const GEMINI_USAGE = { promptTokenCount: 100, candidatesTokenCount: 10, totalTokenCount: 110 };
const GEMINI_MODEL_VERSION = "gemini-mock";

/** Word-sized chunks that join back to the text. */
function words(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? [text];
}

function sse(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

function errorResponse(status: number, type: string, message: string): PreparedResponse {
  const body = Buffer.from(JSON.stringify({ error: { message, type, code: type, param: null } }));
  return { status, headers: { "content-type": "application/json", "content-length": body.length }, writes: [body] };
}

/** A Gemini error body (`{ error: { code, message, status } }`). */
function geminiErrorResponse(status: number, statusName: string, message: string): PreparedResponse {
  const body = Buffer.from(JSON.stringify({ error: { code: status, message, status: statusName } }));
  return { status, headers: { "content-type": "application/json; charset=UTF-8", "content-length": body.length }, writes: [body] };
}

/**
 * Serializes Gemini's answer to turn `turn` of `script`, as the real API sends it: a wave is one
 * candidate with parallel `functionCall` parts (no call ids, like the Gemini API), the answer is text
 * parts streamed in word-sized chunks; every chunk is a whole `GenerateContentResponse` with
 * `usageMetadata`, the last one has `finishReason: "STOP"`.
 */
function prepareGemini(script: Required<MockScript>, turn: number, stream: boolean): PreparedResponse {
  const responseId = `gemini-mock-${turn}`;
  const isFinal = turn >= script.toolTurns;
  const response = (parts: unknown[], finish: boolean) => ({
    candidates: [{ content: { parts, role: "model" }, ...(finish ? { finishReason: "STOP" } : {}), index: 0 }],
    usageMetadata: GEMINI_USAGE,
    modelVersion: GEMINI_MODEL_VERSION,
    responseId,
  });
  const callParts = isFinal
    ? []
    : Array.from({ length: script.toolsPerTurn }, (_, index) => ({ functionCall: { name: script.toolName, args: scriptedArguments(turn, index) } }));
  if (!stream) {
    const body = Buffer.from(JSON.stringify(response(isFinal ? [{ text: script.finalText }] : callParts, true)));
    return { status: 200, headers: { "content-type": "application/json; charset=UTF-8", "content-length": body.length }, writes: [body] };
  }
  const event = (payload: unknown) => `data: ${JSON.stringify(payload)}\r\n\r\n`;
  const frames: string[] = [];
  if (isFinal) {
    const pieces = words(script.finalText);
    for (let index = 0; index < pieces.length; index++) frames.push(event(response([{ text: pieces[index] }], index === pieces.length - 1)));
  } else {
    frames.push(event(response(callParts, true)));
  }
  const writes = script.chunkDelayMs > 0 ? frames.map((frame) => Buffer.from(frame)) : [Buffer.from(frames.join(""))];
  const headers: Record<string, string | number> = { "content-type": "text/event-stream", "cache-control": "no-cache" };
  if (writes.length === 1) headers["content-length"] = writes[0].length;
  return { status: 200, headers, writes };
}

/** Serializes the answer to turn `turn` of `script` (tool calls, or the final answer). */
function prepare(model: string, script: Required<MockScript>, turn: number, stream: boolean): PreparedResponse {
  const id = `chatcmpl-mock-${turn}`;
  const isFinal = turn >= script.toolTurns;
  const toolCalls = isFinal
    ? []
    : Array.from({ length: script.toolsPerTurn }, (_, index) => ({
        id: scriptedCallId(turn, index),
        type: "function",
        function: { name: script.toolName, arguments: JSON.stringify(scriptedArguments(turn, index)) },
      }));
  if (!stream) {
    const message = isFinal
      ? { role: "assistant", content: script.finalText, refusal: null }
      : { role: "assistant", content: null, refusal: null, tool_calls: toolCalls };
    const body = Buffer.from(
      JSON.stringify({
        id,
        object: "chat.completion",
        created: CREATED,
        model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: isFinal ? "stop" : "tool_calls" }],
        usage: USAGE,
      }),
    );
    return { status: 200, headers: { "content-type": "application/json", "content-length": body.length }, writes: [body] };
  }
  const chunk = (delta: unknown, finishReason: string | null) =>
    sse({ id, object: "chat.completion.chunk", created: CREATED, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });
  const ending =
    chunk({}, isFinal ? "stop" : "tool_calls") + sse({ id, object: "chat.completion.chunk", created: CREATED, model, choices: [], usage: USAGE }) + "data: [DONE]\n\n";
  const frames: string[] = [];
  if (isFinal) {
    const pieces = words(script.finalText);
    frames.push(chunk({ role: "assistant", content: "" }, null) + chunk({ content: pieces[0] }, null));
    for (const piece of pieces.slice(1)) frames.push(chunk({ content: piece }, null));
  } else {
    // Like OpenAI: each call opens with its id and name, then its arguments follow.
    let frame = "";
    toolCalls.forEach((call, index) => {
      const head = { index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } };
      frame += chunk(index === 0 ? { role: "assistant", content: null, tool_calls: [head] } : { tool_calls: [head] }, null);
      frame += chunk({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] }, null);
    });
    frames.push(frame);
  }
  frames.push(ending);
  const writes = script.chunkDelayMs > 0 ? frames.map((frame) => Buffer.from(frame)) : [Buffer.from(frames.join(""))];
  const headers: Record<string, string | number> = { "content-type": "text/event-stream", "cache-control": "no-cache" };
  if (writes.length === 1) headers["content-length"] = writes[0].length;
  return { status: 200, headers, writes };
}

function withDefaults(script: MockScript): Required<MockScript> {
  const toolTurns = script.toolTurns ?? 10;
  const toolsPerTurn = script.toolsPerTurn ?? 1;
  if (!Number.isInteger(toolTurns) || toolTurns < 0) throw new RangeError(`mock script: toolTurns must be an integer >= 0, got ${toolTurns}`);
  if (!Number.isInteger(toolsPerTurn) || toolsPerTurn < 1) throw new RangeError(`mock script: toolsPerTurn must be an integer >= 1, got ${toolsPerTurn}`);
  return {
    toolTurns,
    toolsPerTurn,
    toolName: script.toolName ?? DEFAULT_TOOL_NAME,
    finalText: script.finalText ?? DEFAULT_FINAL_TEXT,
    latencyMs: script.latencyMs ?? 0,
    chunkDelayMs: script.chunkDelayMs ?? 0,
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Creates the request handler (exported for embedding in other servers). */
export function createMockHandler(options: MockProviderOptions): {
  handle(request: IncomingMessage, response: ServerResponse): void;
  stats: MockProviderStats;
} {
  const scripts = new Map(Object.entries(options.scripts).map(([name, script]) => [name, withDefaults(script)]));
  const cache = new Map<string, PreparedResponse>();
  const stats: MockProviderStats = { requests: 0, errors: 0 };

  // Answers one request body. Cheap: regular expressions instead of a full JSON parse, and a
  // cache of serialized responses. (Escaped quotes inside strings cannot match `"key":`.)
  function answer(body: string): PreparedResponse {
    if (body.length === 0 || body[0] !== "{") return errorResponse(400, "invalid_request_error", "request body must be a JSON object");
    const modelMatch = MODEL_RE.exec(body);
    if (!modelMatch) return errorResponse(400, "invalid_request_error", "request has no model");
    const model = modelMatch[1];
    const script = scripts.get(model);
    if (!script) return errorResponse(404, "model_not_found", `The model '${model}' does not exist (scripts: ${[...scripts.keys()].join(", ")})`);
    if (!body.includes('"messages"')) return errorResponse(400, "invalid_request_error", "request has no messages");
    const toolResults = body.match(TOOL_ROLE_RE)?.length ?? 0;
    if (toolResults % script.toolsPerTurn !== 0 || toolResults / script.toolsPerTurn > script.toolTurns) {
      return errorResponse(
        400,
        "invalid_request_error",
        `expected a multiple of ${script.toolsPerTurn} tool results (at most ${script.toolTurns * script.toolsPerTurn}), got ${toolResults}`,
      );
    }
    const turn = toolResults / script.toolsPerTurn;
    const stream = STREAM_RE.test(body);
    const key = `${model}\u0000${stream ? 1 : 0}\u0000${turn}`;
    let prepared = cache.get(key);
    if (!prepared) cache.set(key, (prepared = prepare(model, script, turn, stream)));
    return prepared;
  }

  // Answers one Gemini request for `model` (from the URL); `stream`: `streamGenerateContent`.
  function answerGemini(model: string, stream: boolean, body: string): PreparedResponse {
    if (body.length === 0 || body[0] !== "{") return geminiErrorResponse(400, "INVALID_ARGUMENT", "request body must be a JSON object");
    const script = scripts.get(model);
    if (!script) return geminiErrorResponse(404, "NOT_FOUND", `models/${model} is not found (scripts: ${[...scripts.keys()].join(", ")})`);
    if (!body.includes('"contents"')) return geminiErrorResponse(400, "INVALID_ARGUMENT", "request has no contents");
    const toolResults = body.match(FUNCTION_RESPONSE_RE)?.length ?? 0;
    if (toolResults % script.toolsPerTurn !== 0 || toolResults / script.toolsPerTurn > script.toolTurns) {
      return geminiErrorResponse(
        400,
        "INVALID_ARGUMENT",
        `expected a multiple of ${script.toolsPerTurn} functionResponse parts (at most ${script.toolTurns * script.toolsPerTurn}), got ${toolResults}`,
      );
    }
    const turn = toolResults / script.toolsPerTurn;
    const key = `gemini\u0000${model}\u0000${stream ? 1 : 0}\u0000${turn}`;
    let prepared = cache.get(key);
    if (!prepared) cache.set(key, (prepared = prepareGemini(script, turn, stream)));
    return prepared;
  }

  async function send(response: ServerResponse, prepared: PreparedResponse, script: Required<MockScript> | undefined): Promise<void> {
    if (script && script.latencyMs > 0) {
      // A client that hangs up ends the wait (a pending timer would keep the process alive).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, script.latencyMs);
        response.once("close", () => {
          clearTimeout(timer);
          resolve();
        });
      });
      if (response.destroyed) return;
    }
    response.writeHead(prepared.status, prepared.headers);
    const last = prepared.writes.length - 1;
    for (let index = 0; index < last; index++) {
      response.write(prepared.writes[index]);
      if (script && script.chunkDelayMs > 0) await sleep(script.chunkDelayMs);
      if (response.destroyed) return;
    }
    response.end(prepared.writes[last]);
  }

  function handle(request: IncomingMessage, response: ServerResponse): void {
    const [path, query = ""] = (request.url ?? "").split("?");
    if (request.method === "GET" && path === "/stats") {
      const body = JSON.stringify(stats);
      response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
      response.end(body);
      return;
    }
    const gemini = request.method === "POST" ? GEMINI_ROUTE_RE.exec(path) : null;
    if (gemini) {
      handleGemini(request, response, decodeURIComponent(gemini[1]), gemini[2] === "streamGenerateContent", query);
      return;
    }
    if (request.method !== "POST" || (path !== "/v1/chat/completions" && path !== "/chat/completions")) {
      stats.errors++;
      stats.lastError = `no route ${request.method} ${path}`;
      send(response, errorResponse(404, "not_found", `no route ${request.method} ${path}`), undefined);
      return;
    }
    stats.requests++;
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = chunks.length === 1 ? chunks[0].toString("utf8") : Buffer.concat(chunks).toString("utf8");
      const prepared = answer(body);
      if (prepared.status !== 200) {
        stats.errors++;
        stats.lastError = prepared.writes[0].toString("utf8");
      }
      const model = MODEL_RE.exec(body)?.[1];
      send(response, prepared, model === undefined ? undefined : scripts.get(model)).catch(() => response.destroy());
    });
  }

  function handleGemini(request: IncomingMessage, response: ServerResponse, model: string, stream: boolean, query: string): void {
    stats.requests++;
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = chunks.length === 1 ? chunks[0].toString("utf8") : Buffer.concat(chunks).toString("utf8");
      // Without `alt=sse` the real API streams a JSON array; this mock speaks SSE only.
      const prepared =
        stream && !/(?:^|&)alt=sse(?:&|$)/.test(query)
          ? geminiErrorResponse(400, "INVALID_ARGUMENT", "streamGenerateContent needs alt=sse (this mock serves SSE only)")
          : answerGemini(model, stream, body);
      if (prepared.status !== 200) {
        stats.errors++;
        stats.lastError = prepared.writes[0].toString("utf8");
      }
      send(response, prepared, prepared.status === 200 ? scripts.get(model) : undefined).catch(() => response.destroy());
    });
  }

  return { handle, stats };
}

/** Starts the mock provider in this process. */
export async function startMockProvider(options: MockProviderOptions): Promise<MockProvider> {
  const { handle, stats } = createMockHandler(options);
  const server: Server = createServer(handle);
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    geminiBaseURL: `http://127.0.0.1:${port}/v1beta`,
    port,
    stats: async () => ({ ...stats }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Starts the mock provider in a child process, so its CPU time is not counted as the
 * client's. Resolves once it listens.
 */
export async function spawnMockProvider(options: MockProviderOptions): Promise<MockProvider & { readonly pid: number }> {
  const child = await startChild("./mock-provider.ts", [], { MOCK_PROVIDER_OPTIONS: JSON.stringify(options) });
  const origin = `http://127.0.0.1:${child.port}`;
  return {
    baseURL: `${origin}/v1`,
    geminiBaseURL: `${origin}/v1beta`,
    port: child.port,
    pid: child.pid,
    stats: async () => (await (await fetch(`${origin}/stats`)).json()) as MockProviderStats,
    close: child.close,
  };
}

// Child-process entry point: `MOCK_PROVIDER_OPTIONS='{"scripts":{...}}' node --import tsx bench/mock-provider.ts`
// (Checked by file name too, so a bundle that merely imports this module does not start it.)
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href && /mock-provider\.m?[jt]s$/.test(process.argv[1])) {
  const raw = process.env.MOCK_PROVIDER_OPTIONS;
  if (!raw) {
    console.error("mock-provider: set MOCK_PROVIDER_OPTIONS to a JSON object {\"scripts\": {\"model-name\": {\"toolTurns\": 10}}}");
    process.exit(2);
  }
  const provider = await startMockProvider(JSON.parse(raw) as MockProviderOptions);
  process.stdout.write(`mock provider listening on ${provider.port}\n`);
  const stop = () => provider.close().then(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.stdin.on("end", stop);
  process.stdin.on("error", stop);
  process.stdin.resume();
}
