import type { IncomingMessage, ServerResponse } from "node:http";
import type { RunResult } from "../loop/events.js";
import { maxStepsMessage } from "../model/model.js";
import { HttpError, type OpenAIErrorBody } from "./http-errors.js";

/**
 * What a chat that stopped for approvals reports (the `approval_required` field of its last chunk,
 * or of the completion): `POST /v1/approvals` with the session id and decisions by `tool_call_id`.
 */
export interface ApprovalRequired {
  session_id: string;
  checkpoint_id: string;
  pending: Array<{ tool_call_id: string; tool: string; arguments: Record<string, unknown>; arguments_hash: string; agent_path: string[] }>;
}

/** The `approval_required` report of an interrupted run. */
export function approvalRequiredOf(result: RunResult, sessionId: string): ApprovalRequired | undefined {
  const checkpoint = result.checkpoint;
  if (result.state !== "INTERRUPTED" || !checkpoint) return undefined;
  return {
    session_id: sessionId,
    checkpoint_id: checkpoint.id,
    pending: checkpoint.pending.map((entry) => ({
      tool_call_id: entry.toolCallId,
      tool: entry.toolName,
      arguments: entry.arguments,
      arguments_hash: entry.argumentsHash,
      agent_path: entry.agentPath,
    })),
  };
}

/**
 * The answer of a run that ended: its text; when `maxTurns` (AGENTIC_LOOP_MAX_STEPS) ended it with
 * none (native and string modes: the last model call asked for tools), KAOS's `Reached maximum
 * reasoning steps (N)`, as the text protocols answer; otherwise the reason a limit gave.
 */
export function answerOf(result: Pick<RunResult, "state" | "reason" | "text">): string {
  if (result.text !== "") return result.text;
  // The loop's reason for this limit is `maxTurns (N) reached`.
  const turns = result.state === "TURN_LIMIT" ? /^maxTurns \((\d+)\) reached$/.exec(result.reason) : null;
  return turns ? maxStepsMessage(Number(turns[1])) : result.reason;
}

/** A call of a client's tool, as OpenAI's `tool_calls` name it. */
export interface ClientToolCall {
  index: number;
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/**
 * The calls of an interrupted run that wait for the client's tools, when every pending call is one
 * (a run also waiting for a person's approval reports `approval_required` instead, client calls included).
 */
export function clientToolCallsOf(result: RunResult, clientToolNames: ReadonlySet<string>): ClientToolCall[] | undefined {
  const pending = result.state === "INTERRUPTED" ? result.checkpoint?.pending : undefined;
  if (!pending || pending.length === 0 || !pending.every((entry) => clientToolNames.has(entry.toolName) && entry.agentPath.length <= 1)) return undefined;
  return pending.map((entry, index) => ({ index, id: entry.toolCallId, type: "function", function: { name: entry.toolName, arguments: JSON.stringify(entry.arguments) } }));
}

/** A chat completion's `usage`, with the run's cost in US dollars ("unknown" for a model the price table does not know). */
export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cost?: number | "unknown";
}

/** The usage of a run as chat completions report it (the JSON answer and the streamed usage chunk alike). */
export function wireUsage({ inputTokens, outputTokens, totalTokens, cost }: RunResult["usage"]): WireUsage {
  return { prompt_tokens: inputTokens, completion_tokens: outputTokens, total_tokens: totalTokens, ...(cost !== undefined ? { cost } : {}) };
}

/** The OpenAI finish reason of a run that ended (not failed, not stopped for approvals): a guardrail's deny is `content_filter`. */
export function finishReasonOf(result: RunResult): "stop" | "length" | "content_filter" {
  return result.state === "COMPLETED" ? "stop" : result.state === "GUARDRAIL" ? "content_filter" : "length";
}

/** The abort reason (and log note) of a run whose client went away. */
export const CLIENT_DISCONNECTED = "client disconnected";

/** What a request's controller stops once its run started (an agentloop `Run`). */
export interface Abortable {
  abort(reason?: unknown): void;
}

/**
 * The abort switch of one request: the client going away (`disconnect`) or the server shutting
 * down (`abort`) stops the request's run, or the run it is about to start. It is not an
 * AbortController: the run's own controller is the only one a request needs (an AbortSignal costs
 * several microseconds to make, and linking two costs a listener on each). `signal` makes one on
 * demand, for work before the run that needs a signal (a PostgreSQL session lock).
 * `byClient` tells the log which of the two it was.
 */
export class RequestController {
  byClient = false;
  aborted = false;
  reason: unknown;
  private run?: Abortable;
  private onDemand?: AbortController;

  get signal(): AbortSignal {
    if (!this.onDemand) {
      this.onDemand = new AbortController();
      if (this.aborted) this.onDemand.abort(this.reason);
    }
    return this.onDemand.signal;
  }

  /** The run this request started: aborted now if the request was, else when it is. */
  attach(run: Abortable): void {
    this.run = run;
    if (this.aborted) run.abort(this.reason);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.onDemand?.abort(reason);
    this.run?.abort(reason);
  }

  disconnect(reason: unknown = CLIENT_DISCONNECTED): void {
    if (this.aborted) return;
    this.byClient = true;
    this.abort(reason);
  }
}

/**
 * The `chat.completion.chunk` SSE events of one streamed completion. Each event is the exact text
 * `JSON.stringify` gives for `{ id, object, created, model, choices: [{ index, delta, finish_reason }] }`,
 * built from prefixes made once per stream: per chunk only the content is serialized.
 */
export class ChatChunkEncoder {
  private readonly head: string;
  private readonly deltaPrefix: string;

  constructor(id: string, created: number, model: string) {
    this.head = `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"choices":`;
    this.deltaPrefix = `${this.head}[{"index":0,"delta":`;
  }

  /** The first chunk: the assistant role with empty content. */
  role(): string {
    return `${this.deltaPrefix}{"role":"assistant","content":""},"finish_reason":null}]}\n\n`;
  }

  content(text: string): string {
    return `${this.deltaPrefix}{"content":${JSON.stringify(text)}},"finish_reason":null}]}\n\n`;
  }

  finish(reason: "stop" | "length" | "content_filter"): string {
    return `${this.deltaPrefix}{},"finish_reason":"${reason}"}]}\n\n`;
  }

  /** The last chunk of a run stopped for approvals: `finish_reason: "approval_required"` and the pending calls. */
  approvalRequired(approvals: ApprovalRequired): string {
    return `${this.deltaPrefix}{},"finish_reason":"approval_required"}],"approval_required":${JSON.stringify(approvals)}}\n\n`;
  }

  /** The last chunk of a run stopped at calls of the client's tools: `tool_calls` and `finish_reason: "tool_calls"`. */
  toolCalls(calls: readonly ClientToolCall[]): string {
    return `${this.deltaPrefix}{"tool_calls":${JSON.stringify(calls)}},"finish_reason":"tool_calls"}]}\n\n`;
  }

  /** `stream_options.include_usage`: no choices, the usage. */
  usage(usage: WireUsage): string {
    return `${this.head}[],"usage":${JSON.stringify(usage)}}\n\n`;
  }

  static error(body: OpenAIErrorBody): string {
    return `data: ${JSON.stringify(body)}\n\n`;
  }

  static readonly done = "data: [DONE]\n\n";
}

/** Where a streamed completion writes its events: the node response, or a web stream for `fetch`. */
export interface SseSink {
  write(text: string): void;
  end(): void;
}

export const sseHeaders = (sessionId: string) => ({
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-session-id": sessionId,
});

/**
 * Writes straight to a node response; writes after the client left are dropped. The writes of one
 * tick (the events of one model chunk) go out as one write on the next tick (one chunk of the
 * response, one socket write), and the last ones with the end.
 */
export function nodeSseSink(outgoing: ServerResponse): SseSink {
  let pending: string | undefined;
  const open = () => !outgoing.writableEnded && !outgoing.destroyed;
  const flush = () => {
    const text = pending;
    pending = undefined;
    if (text !== undefined && open()) outgoing.write(text);
  };
  return {
    write(text) {
      if (!open()) return;
      if (pending === undefined) {
        pending = text;
        process.nextTick(flush);
      } else pending += text;
    },
    end() {
      if (!open()) return;
      const text = pending;
      pending = undefined;
      if (text === undefined) outgoing.end();
      else outgoing.end(text);
    },
  };
}

const encoder = new TextEncoder();

/** A web `ReadableStream` sink (the `fetch` handler); cancelling the stream calls `onCancel`. */
export function webSseSink(onCancel: () => void): { sink: SseSink; body: ReadableStream<Uint8Array> } {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  const body = new ReadableStream<Uint8Array>({
    start(started) {
      controller = started;
    },
    cancel() {
      open = false;
      onCancel();
    },
  });
  const sink: SseSink = {
    write(text) {
      if (!open) return;
      try {
        controller.enqueue(encoder.encode(text));
      } catch {
        open = false;
      }
    },
    end() {
      if (!open) return;
      open = false;
      try {
        controller.close();
      } catch {
        // already closed by a cancel
      }
    },
  };
  return { sink, body };
}

/** Writes a JSON response on a node response (the shape and headers of Hono's `c.json`). */
export function sendNodeJson(outgoing: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (outgoing.headersSent || outgoing.destroyed) return;
  const text = JSON.stringify(body);
  outgoing.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  const incoming = outgoing.req;
  if (incoming.complete || incoming.destroyed) {
    outgoing.end(text);
    return;
  }
  // An answer before the whole body (a 413, a 401): sent at once, but the response ends only once
  // the rest of the body is read and discarded. Node closes the connection when a response to a
  // `Connection: close` request ends, and closing it on unread data resets it: the client, still
  // sending, got EPIPE instead of the answer.
  outgoing.write(text);
  incoming.resume();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    outgoing.end();
  };
  incoming.once("end", end);
  incoming.once("close", end);
}

/**
 * Reads a request body straight from the node request, counting bytes as they arrive: over
 * `limitBytes` it stops keeping them and rejects with 413; the rest is read and discarded, so the
 * connection is not reset before the 413 reaches the client. `done` makes the result of the body's bytes.
 */
function readNode<T>(incoming: IncomingMessage, limitBytes: number, done: (body: Buffer) => T): Promise<T> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onFailure);
      incoming.off("close", onFailure);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        incoming.resume(); // discard the rest
        reject(requestTooLarge(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(done(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    };
    const onFailure = () => {
      cleanup();
      reject(new HttpError(400, "the connection closed before the request body was complete", "invalid_request_error", "incomplete_body"));
    };
    incoming.on("data", onData);
    incoming.on("end", onEnd);
    incoming.on("error", onFailure);
    incoming.on("close", onFailure);
  });
}

/** The body as UTF-8 text (see `readNode`). Like Request.text(), a UTF-8 byte order mark is not part of it. */
export function readNodeBody(incoming: IncomingMessage, limitBytes: number): Promise<string> {
  return readNode(incoming, limitBytes, (body) => {
    const text = body.toString("utf8");
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  });
}

/** The body's bytes (see `readNode`). */
export function readNodeBodyBytes(incoming: IncomingMessage, limitBytes: number): Promise<Buffer> {
  return readNode(incoming, limitBytes, (body) => body);
}

export const requestTooLarge = (limitBytes: number) =>
  new HttpError(413, `the request body is larger than ${limitBytes} bytes`, "invalid_request_error", "request_too_large");
