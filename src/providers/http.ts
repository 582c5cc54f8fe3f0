/**
 * The HTTP under the adapters' direct path: one POST with a JSON body, answered by a JSON body or
 * by Server-Sent Events (parsed with `eventsource-parser`).
 *
 * By default it speaks node:http(s) on keep-alive sockets: per model call that costs about half
 * the CPU of the global `fetch` and a third of an SDK call, which is most of an agent loop's own
 * cost per turn (bench/README.md, scenario 1). `fetch` in the options swaps in any WHATWG fetch
 * (a proxy agent, a test double, another runtime). Failures throw what `toAgentLoopError` maps:
 * `HttpStatusError` (status, headers, parsed error body), a `TimeoutError`, node's network errors
 * (`ECONNREFUSED`, `ECONNRESET`, ...), an `AbortError`.
 */
import { Agent as HttpAgent, type IncomingHttpHeaders, type IncomingMessage, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { keepShape, latest } from "../shapes.js";
import { deadline } from "./deadlines.js";

/** What a response is read through: its status, headers and body bytes. */
export interface HttpResponse {
  status: number;
  /** Lower-case header names (node) or a `Headers` object (fetch). */
  headers: IncomingHttpHeaders | Headers;
  body: AsyncIterable<Uint8Array>;
}

export interface PostOptions {
  /** Where to POST: a URL, or a target made once with `postTarget` (no URL parsing per request). */
  url: string | PostTarget;
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
  /** Milliseconds until the response headers (streaming) or the whole body (`json: true`) must have arrived. */
  timeoutMs?: number;
  /** A WHATWG `fetch` to use instead of node:http. */
  fetch?: typeof globalThis.fetch;
}

/** A response with a status outside 2xx: carries what error mapping reads (like the SDKs' errors). */
export class HttpStatusError extends Error {
  override readonly name = "HttpStatusError";
  constructor(
    readonly status: number,
    readonly headers: IncomingHttpHeaders | Headers,
    /** The parsed JSON error body, or undefined when the body was not JSON. */
    readonly error: unknown,
    detail: string,
  ) {
    super(detail);
  }
}

/** The error a request that outlived its timeout fails with (`toAgentLoopError` maps it to `timeout`). */
export function timeoutError(timeoutMs: number): Error {
  const error = new Error(`the request timed out after ${timeoutMs} ms`);
  error.name = "TimeoutError";
  return error;
}

const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

/** A URL parsed once for node:http (and kept as text for fetch). */
export interface PostTarget {
  href: string;
  https: boolean;
  hostname: string;
  port: string;
  path: string;
}

export function postTarget(url: string): PostTarget {
  const parsed = new URL(url);
  // node:http wants a bare IPv6 address, without the brackets of the URL form.
  const hostname = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname;
  return { href: parsed.href, https: parsed.protocol === "https:", hostname, port: parsed.port, path: `${parsed.pathname}${parsed.search}` };
}

/**
 * POSTs `body` and resolves with a 2xx response; a non-2xx response is read and thrown as an
 * `HttpStatusError`. With `json: true` resolves with the parsed body instead. Aborting `signal`
 * destroys the request (and the response stream being read).
 */
export async function post(options: PostOptions & { json: true }): Promise<{ response: HttpResponse; value: unknown }>;
export async function post(options: PostOptions & { json?: false }): Promise<{ response: HttpResponse }>;
export async function post(options: PostOptions & { json?: boolean }): Promise<{ response: HttpResponse; value?: unknown }> {
  let timedOut: Error | undefined;
  let cancel: (error: Error) => void = () => undefined;
  const { timeoutMs } = options;
  const timer =
    timeoutMs !== undefined && timeoutMs > 0
      ? deadline(timeoutMs, () => {
          timedOut = timeoutError(timeoutMs);
          cancel(timedOut);
        })
      : undefined;
  const onCancel = (cancelRequest: (error: Error) => void) => {
    cancel = cancelRequest;
  };
  // A whole body over node:http is read here, so the abort is wired here too (one listener,
  // removed when the body is in): node's `signal` option watches the request's end with a stream
  // end-of-stream helper per request. A streamed body outlives this function: node's option then.
  const { signal } = options;
  const ownAbort = options.json === true && !options.fetch;
  const onSignal = ownAbort ? () => cancel(abortedRequestError(signal)) : undefined;
  try {
    const pending = options.fetch ? fetchPost(options, onCancel) : nodePost(options, onCancel, ownAbort ? undefined : signal);
    if (onSignal) {
      if (signal.aborted) onSignal();
      else signal.addEventListener("abort", onSignal);
    }
    const response = await pending;
    if (response.status < 200 || response.status > 299) throw await statusError(response);
    if (!options.json) return { response };
    return { response, value: JSON.parse(await readText(response.body)) };
  } catch (error) {
    // A socket destroyed by the timer fails with whatever node says; the timeout is the cause.
    throw timedOut ?? error;
  } finally {
    timer?.cancel();
    if (onSignal) signal.removeEventListener("abort", onSignal);
  }
}

/** What node's `signal` option destroys a request with when the signal aborts. */
function abortedRequestError(signal: AbortSignal): Error {
  return Object.assign(new Error("The operation was aborted", { cause: signal.reason }), { name: "AbortError", code: "ABORT_ERR" });
}

/**
 * Reads Server-Sent Events from body bytes: `feed` returns the events each piece completes, `end`
 * the last one when the body stops without a blank line (as the SDKs' decoders count it).
 */
export class ServerSentEvents {
  private readonly decoder = new TextDecoder();
  private ready: EventSourceMessage[] = [];
  private readonly parser = createParser({ onEvent: (event) => void this.ready.push(event) });

  feed(bytes: Uint8Array): EventSourceMessage[] {
    this.parser.feed(this.decoder.decode(bytes, { stream: true }));
    return this.take();
  }

  end(): EventSourceMessage[] {
    this.parser.feed(`${this.decoder.decode()}\n\n`);
    return this.take();
  }

  private take(): EventSourceMessage[] {
    if (this.ready.length === 0) return noEvents;
    const events = this.ready;
    this.ready = [];
    return events;
  }
}

const noEvents: EventSourceMessage[] = [];

/** True when a response is JSON (a server that ignores `stream: true` answers with a body). */
export function isJsonResponse(response: HttpResponse): boolean {
  return /\bjson\b/i.test(headerValue(response.headers, "content-type") ?? "");
}

/** Reads a whole body as text. */
export async function readText(body: AsyncIterable<Uint8Array>): Promise<string> {
  if (body instanceof Readable) return readStreamText(body);
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * A node stream's whole body as text, read by its events: the same outcome as its async iterator
 * (the bytes, else the error it was destroyed with, else `ERR_STREAM_PREMATURE_CLOSE` for a close
 * before the end) without the iterator's per-read promises and end-of-stream bookkeeping (bench
 * scenario 1: a JSON call reads one body per model call).
 */
function readStreamText(stream: Readable): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let ended = false;
    stream.on("data", (chunk: Buffer) => void chunks.push(chunk));
    stream.once("end", () => {
      ended = true;
      resolve(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"));
    });
    stream.once("error", reject);
    // After `end` or `error` this changes nothing (a promise settles once).
    stream.once("close", () => {
      if (!ended) reject(prematureClose());
    });
  });
}

/** What node's stream iterator throws for a stream closed before its end. */
function prematureClose(): Error {
  return Object.assign(new Error("Premature close"), { code: "ERR_STREAM_PREMATURE_CLOSE" });
}

function headerValue(headers: IncomingHttpHeaders | Headers, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  const value = (headers as IncomingHttpHeaders)[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

type OnCancel = (cancel: (error: Error) => void) => void;

function nodePost(options: PostOptions, onCancel: OnCancel, signal: AbortSignal | undefined): Promise<HttpResponse> {
  const target = typeof options.url === "string" ? postTarget(options.url) : options.url;
  const headers = { ...options.headers, "content-length": String(Buffer.byteLength(options.body)) };
  const { https, hostname, port, path } = target;
  return new Promise<HttpResponse>((resolve, reject) => {
    const request = (https ? httpsRequest : httpRequest)(
      { method: "POST", hostname, port, path, headers, agent: https ? agents.https : agents.http, signal },
      (message) => resolve(new NodeResponse(message)),
    );
    onCancel((error) => request.destroy(error));
    request.on("error", reject);
    request.end(options.body);
  });
}

/**
 * A node:http response. Its headers object is made when first read (node builds `message.headers`
 * from the raw list on first access): a 2xx JSON answer never reads it.
 */
class NodeResponse implements HttpResponse {
  readonly status: number;
  readonly body: AsyncIterable<Uint8Array>;

  constructor(private readonly message: IncomingMessage) {
    this.status = message.statusCode ?? 0;
    this.body = decoded(message);
    latest.response = message;
  }

  get headers(): IncomingHttpHeaders {
    return this.message.headers;
  }
}
keepShape(new NodeResponse({ statusCode: 0, rawHeaders: [] } as unknown as IncomingMessage)); // see src/shapes.ts

/** A header's value from the raw list (several joined with ", ", as `message.headers` joins them). */
function rawHeader(message: IncomingMessage, name: string): string | undefined {
  const raw = message.rawHeaders;
  let value: string | undefined;
  for (let index = 0; index < raw.length; index += 2) {
    const key = raw[index]!;
    if (key.length === name.length && key.toLowerCase() === name) value = value === undefined ? raw[index + 1]! : `${value}, ${raw[index + 1]}`;
  }
  return value;
}

/** The body bytes, decompressed if the server compressed them although we did not ask. */
function decoded(message: IncomingMessage): AsyncIterable<Uint8Array> {
  const encoding = (rawHeader(message, "content-encoding") ?? "").trim().toLowerCase();
  if (encoding === "" || encoding === "identity") return message;
  const decompressor = encoding === "gzip" || encoding === "x-gzip" ? createGunzip() : encoding === "deflate" ? createInflate() : encoding === "br" ? createBrotliDecompress() : undefined;
  if (!decompressor) return message;
  message.on("error", (error) => decompressor.destroy(error));
  return message.pipe(decompressor);
}

async function fetchPost(options: PostOptions, onCancel: OnCancel): Promise<HttpResponse> {
  const controller = new AbortController();
  onCancel((error) => controller.abort(error));
  const signal = AbortSignal.any([options.signal, controller.signal]);
  const url = typeof options.url === "string" ? options.url : options.url.href;
  const response = await options.fetch!(url, { method: "POST", headers: options.headers, body: options.body, signal });
  const body = response.body ?? emptyBody();
  return { status: response.status, headers: response.headers, body: body as unknown as AsyncIterable<Uint8Array> };
}

async function* emptyBody(): AsyncGenerator<Uint8Array> {}

async function statusError(response: HttpResponse): Promise<HttpStatusError> {
  let text = "";
  try {
    text = await readText(response.body);
  } catch {
    // the status says enough
  }
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  const detail = parsed === undefined ? text.trim().slice(0, 500) || `HTTP ${response.status}` : errorMessage(parsed) ?? text.slice(0, 500);
  return new HttpStatusError(response.status, response.headers, parsed, detail);
}

function errorMessage(body: unknown): string | undefined {
  if (!body || typeof body !== "object") return undefined;
  const record = body as Record<string, unknown>;
  const inner = record.error && typeof record.error === "object" ? (record.error as Record<string, unknown>) : record;
  return typeof inner.message === "string" ? inner.message : typeof record.error === "string" ? record.error : undefined;
}

/** An error object a provider sent inside a stream (`data: {"error": {...}}`), thrown for error mapping. */
export class StreamedError extends Error {
  override readonly name = "StreamedError";
  constructor(readonly error: unknown) {
    super(errorMessage({ error }) ?? JSON.stringify(error));
  }
}
