/**
 * A UI protocol's `POST` route (`/api/chat`, `/ag-ui`) through two doors to the same code, as chat
 * completions has: a Hono route (`AgentServer.fetch`) with a web stream body, and the hot path
 * straight on node:http (`protocolNodeHandler`), without web streams, a web `Request` or a Hono
 * context. Each route says how it prepares a chat (`PrepareProtocolChat`: parse, check, encoder,
 * how the run starts); the doors share everything else: the guards, the session queue (the run),
 * the refusal of a continuation before the stream (a JSON error) and the stream itself.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Context } from "hono";
import { onAbort } from "../../abort.js";
import type { LoopEvent, RunResult } from "../../loop/events.js";
import { nodeSseSink, RequestController, readNodeBody, type SseSink, sendNodeJson, webSseSink } from "../chat-stream.js";
import { parseJsonText, readJson, type ServerContext } from "../context.js";
import { type ProtocolEncoder, streamProtocolRun } from "../protocol-stream.js";
import { answeredBeforeBody } from "./guards.js";

/** One validated request of a UI protocol, ready to stream. */
export interface ProtocolChat {
  /** The stream's response headers. */
  headers: Record<string, string>;
  /** The client leaving aborts the run (AG-UI); else the run outlives its request (a reload resumes it). */
  abortOnLeave: boolean;
  encoder: ProtocolEncoder;
  /** The sink the stream writes into, around the response's own (the resumable stream's tee). */
  wrap?(sink: SseSink): SseSink;
  /** Starts the run with the event listener; calls `accepted` once it goes on (an input at once). */
  launch(controller: RequestController, onEvent: (event: LoopEvent) => void, accepted: () => void): Promise<RunResult>;
}

/** Parses and checks a request's JSON body (throws the `HttpError` to answer). */
export type PrepareProtocolChat = (json: unknown) => Promise<ProtocolChat>;

/**
 * Starts streaming `chat` into `sink`. `accepted` resolves once the run went on, or rejects with
 * the refusal of a continuation refused before it did (nothing pending, decided already, bad
 * decisions): then the request answers a JSON error, and what was written to `sink` is dropped.
 * `streamed` is tracked for shutdown and never rejects.
 */
function beginProtocolChat(server: ServerContext, chat: ProtocolChat, sink: SseSink, controller: RequestController): { accepted: Promise<void>; streamed: Promise<void> } {
  let work!: Promise<RunResult>;
  let accept: () => void = () => undefined;
  const started = new Promise<void>((resolve) => {
    accept = resolve;
  });
  // streamProtocolRun starts the run before it returns.
  const streamed = streamProtocolRun(server, chat.wrap ? chat.wrap(sink) : sink, chat.encoder, (onEvent) => {
    work = chat.launch(controller, onEvent, accept);
    return work;
  });
  return { accepted: Promise.race([started, work.then(() => undefined)]), streamed };
}

/** The Hono route's handler (`AgentServer.fetch`): the stream is a web `ReadableStream` body. */
export function protocolHonoHandler(server: ServerContext, prepare: PrepareProtocolChat) {
  return async (c: Context): Promise<Response> => {
    const chat = await prepare(await readJson(c));
    const controller = new RequestController();
    const leave = chat.abortOnLeave ? () => controller.disconnect() : () => undefined;
    const { sink, body } = webSseSink(leave);
    const unlink = chat.abortOnLeave ? onAbort(c.req.raw.signal, leave) : () => undefined;
    const { accepted, streamed } = beginProtocolChat(server, chat, sink, controller);
    void streamed.finally(unlink);
    await accepted;
    return new Response(body, { headers: chat.headers });
  };
}

/**
 * A sink that holds what is written until `release` (the status is not known before the run is
 * accepted), then writes through to `target`.
 */
function heldSink(target: SseSink): { sink: SseSink; release(): void } {
  let held: string[] | undefined = [];
  let ended = false;
  return {
    sink: {
      write(text) {
        if (held) held.push(text);
        else target.write(text);
      },
      end() {
        if (held) ended = true;
        else target.end();
      },
    },
    release() {
      const texts = held ?? [];
      held = undefined;
      if (texts.length > 0) target.write(texts.join(""));
      if (ended) target.end();
    },
  };
}

/**
 * The hot path on node:http: the same checks and answers as the Hono route (draining, bearer auth,
 * body limit, validation, errors), the stream written straight to the response. Never rejects.
 */
export function protocolNodeHandler(server: ServerContext, path: string, prepare: PrepareProtocolChat) {
  return async (incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> => {
    try {
      if (answeredBeforeBody(server, incoming, outgoing)) return;
      const chat = await prepare(parseJsonText(await readNodeBody(incoming, server.bodyLimitBytes)));
      const controller = new RequestController();
      if (chat.abortOnLeave) {
        outgoing.once("close", () => {
          if (!outgoing.writableFinished) controller.disconnect();
        });
        if (outgoing.destroyed) controller.disconnect();
      }
      const response = heldSink(nodeSseSink(outgoing));
      await beginProtocolChat(server, chat, response.sink, controller).accepted;
      if (!outgoing.destroyed && !outgoing.headersSent) outgoing.writeHead(200, chat.headers);
      response.release();
    } catch (error) {
      const failure = server.httpErrorOfRequest(error, "POST", path);
      sendNodeJson(outgoing, failure.status, failure.body());
    }
  };
}

/** Whether a node request is a `POST` to `path` (any query). */
export function isPostTo(incoming: IncomingMessage, path: string): boolean {
  if (incoming.method !== "POST") return false;
  const url = incoming.url ?? "";
  return url.startsWith(path) && (url.length === path.length || url.charCodeAt(path.length) === 63 /* ? */);
}
