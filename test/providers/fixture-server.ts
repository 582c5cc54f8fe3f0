/**
 * A real HTTP server on 127.0.0.1 for provider tests: it answers each request with the next
 * responder of a script, replays recorded provider streams, and records every request body.
 */
import { readFileSync } from "node:fs";
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Model, ModelEvent, ModelRequest } from "../../src/model/model.js";

/** The recorded provider streams, copied into the repository (see test/fixtures/provider-streams/README.md). */
export const fixturesRoot = new URL("../fixtures/provider-streams/", import.meta.url);

export type FixtureFolder = "openai-chat" | "openai-responses" | "anthropic-messages" | "google-gemini";

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: any;
}

export type Responder = (request: RecordedRequest, response: ServerResponse) => void | Promise<void>;

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * Starts a server; request N gets responder N (a single responder answers every request).
 * A request past the end of the script gets a 500 naming the problem.
 */
export async function startServer(script: Responder | Responder[]): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer(async (incoming, response) => {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of incoming) chunks.push(chunk as Buffer);
    } catch {
      return; // the client hung up before the body was in (not counted: nothing was asked)
    }
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // keep the raw text
    }
    const recorded: RecordedRequest = { method: incoming.method ?? "", path: incoming.url ?? "", headers: incoming.headers, body };
    const index = requests.length;
    requests.push(recorded);
    const responder = Array.isArray(script) ? script[index] : script;
    if (!responder) {
      response.writeHead(500, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { message: `test server: no response scripted for request ${index + 1}`, type: "server_error" } }));
      return;
    }
    try {
      await responder(recorded, response);
    } catch (error) {
      if (!response.headersSent) response.writeHead(500);
      response.end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The JSON payload lines of a recorded stream (empty lines skipped). */
export function fixtureLines(folder: FixtureFolder, name: string): string[] {
  const text = readFileSync(new URL(`${folder}/${name}.chunks.txt`, fixturesRoot), "utf8");
  return text.split("\n").filter((line) => line.trim().length > 0);
}

export function fixtureJson(folder: FixtureFolder, name: string): any {
  return JSON.parse(readFileSync(new URL(`${folder}/${name}.json`, fixturesRoot), "utf8"));
}

/** SSE frames as the provider sends them (see the fixtures README). */
export function sseFrames(folder: FixtureFolder, payloads: readonly string[]): string[] {
  if (folder === "openai-chat") return [...payloads.map((line) => `data: ${line}\n\n`), "data: [DONE]\n\n"];
  if (folder === "google-gemini") return payloads.map((line) => `data: ${line}\n\n`);
  return payloads.map((line) => `event: ${(JSON.parse(line) as { type: string }).type}\ndata: ${line}\n\n`);
}

export interface SseOptions {
  /** Pause between frames (to make streaming and aborting observable). */
  delayMs?: number;
  /** Destroy the connection after this many frames (a stream cut mid-way). */
  cutAfter?: number;
  headers?: Record<string, string>;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes SSE frames, optionally slowly or cut short. Stops when the client goes away. */
export function sse(frames: readonly string[], options: SseOptions = {}): Responder {
  return async (_request, response) => {
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...options.headers });
    response.flushHeaders();
    let written = 0;
    for (const frame of frames) {
      if (response.destroyed || response.writableEnded) return;
      if (options.cutAfter !== undefined && written >= options.cutAfter) {
        // Let the frames so far reach the client, then drop the connection without ending the body.
        await pause(50);
        response.socket?.destroy();
        return;
      }
      if (options.delayMs) await pause(options.delayMs);
      if (response.destroyed) return;
      response.write(frame);
      written++;
    }
    response.end();
  };
}

/** Replays a recorded stream. */
export function replay(folder: FixtureFolder, name: string, options: SseOptions = {}): Responder {
  return sse(sseFrames(folder, fixtureLines(folder, name)), options);
}

/** Answers with a JSON body and a status. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Responder {
  return (_request, response) => {
    response.writeHead(status, { "content-type": "application/json", ...headers });
    response.end(JSON.stringify(body));
  };
}

/** Base URL for the `openai` SDK (it appends `/chat/completions` or `/responses`). */
export const openaiBase = (server: TestServer) => `${server.url}/v1`;
/** Base URL for `@anthropic-ai/sdk` (it appends `/v1/messages`). */
export const anthropicBase = (server: TestServer) => server.url;

/** The request the recorded streams answer: a weather question with one tool. */
export const weatherRequest: ModelRequest = {
  messages: [{ role: "user", content: "What is the weather in San Francisco?" }],
  tools: [{ name: "weather", description: "Weather at a location", parameters: { type: "object", properties: { location: { type: "string" } } } }],
};

/** Every event of one model call. */
export async function collect(model: Model, request: ModelRequest = weatherRequest): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of model.stream(request)) events.push(event);
  return events;
}

/** The answer text of a call's events. */
export const joined = (events: ModelEvent[]) => events.map((event) => (event.type === "text-delta" ? event.delta : "")).join("");
export const last = (events: ModelEvent[]) => events[events.length - 1];
