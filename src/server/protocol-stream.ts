/**
 * One run streamed in a UI protocol (the AI SDK UI message stream, AG-UI): the protocol's encoder
 * reads the run's loop events as they come (the same `onEvent` memory and the chat completions
 * stream read), and its closing goes out once the run's events are stored. A stream can be
 * replayed from its start and followed while it runs (`ReplayableStreams`, for `useChat`'s resume).
 */
import type { LoopEvent, RunResult } from "../loop/events.js";
import type { SseSink } from "./chat-stream.js";
import type { ServerContext } from "./context.js";
import { UiRequestError } from "../ui/requests.js";
import { badRequest, HttpError, httpErrorOfRun } from "./http-errors.js";

/** What a route hands `streamProtocolRun`: the SSE text of each step of its protocol ("" for none). */
export interface ProtocolEncoder {
  opening(): string;
  event(event: LoopEvent): string;
  closing(result: RunResult): string;
  /** The end of a request that failed outside the run (a refused resume, a store failure). */
  failure(error: HttpError): string;
}

/**
 * Streams one run into `sink` with `encoder` and ends the sink; `start` starts the run with the
 * event listener. Tracked for shutdown; never rejects.
 */
export function streamProtocolRun(server: ServerContext, sink: SseSink, encoder: ProtocolEncoder, start: (onEvent: (event: LoopEvent) => void) => Promise<RunResult>): Promise<void> {
  async function stream(): Promise<void> {
    write(sink, encoder.opening());
    let closing: string;
    try {
      const result = await start((event) => {
        write(sink, encoder.event(event));
      });
      closing = encoder.closing(result);
    } catch (error) {
      closing = encoder.failure(error instanceof HttpError ? error : httpErrorOfRun(error));
    }
    write(sink, closing);
    sink.end();
  }
  return server.runs.track(stream());
}

/** One write for a step's events (one socket write on node:http, not one per event). */
function write(sink: SseSink, text: string): void {
  if (text !== "") sink.write(text);
}

/**
 * One stream's text so far, and who follows it. What one tick wrote is recorded as one string,
 * joined at the tick's end: the record then holds one flat string per tick, not the step texts
 * (template strings, trees of concatenations) the encoder made. The record lives as long as the
 * stream, so every young collection during a chat copied those trees; joined, it copies one
 * string (an `/api/chat` chat cost ~60 K instructions more in the scavenger than an `/ag-ui` one).
 */
interface Replayable {
  /** The stream's text, one string per tick that wrote. */
  chunks: string[];
  /** This tick's texts, not joined yet (`record` joins them at its end). */
  tick: string[];
  followers: Set<SseSink>;
}

/** Moves a stream's texts of this tick into its record as one string. */
function record(stream: Replayable): void {
  if (stream.tick.length === 0) return;
  stream.chunks.push(stream.tick.length === 1 ? stream.tick[0] : stream.tick.join(""));
  stream.tick = [];
}

/**
 * The streams running now, by session: `tee` records a stream as it is written, `follow` replays
 * one from its start and follows it to its end. A finished stream is forgotten (there is nothing
 * to resume: the session's messages hold it).
 */
export class ReplayableStreams {
  /** By session, in the order the requests came (one runs at a time; the first is the one running or next). */
  private readonly active = new Map<string, Replayable[]>();

  /** A sink that writes to `sink` and records the stream as one of the session's. */
  tee(sessionId: string, sink: SseSink): SseSink {
    const stream: Replayable = { chunks: [], tick: [], followers: new Set([sink]) };
    const list = this.active.get(sessionId);
    if (list) list.push(stream);
    else this.active.set(sessionId, [stream]);
    return {
      write: (text) => {
        if (stream.tick.length === 0) process.nextTick(record, stream);
        stream.tick.push(text);
        for (const follower of stream.followers) follower.write(text);
      },
      end: () => {
        // The session's other streams (queued behind this one) stay; with none left, the session goes.
        const rest = (this.active.get(sessionId) ?? []).filter((other) => other !== stream);
        if (rest.length > 0) this.active.set(sessionId, rest);
        else this.active.delete(sessionId);
        for (const follower of stream.followers) follower.end();
        stream.followers.clear();
      },
    };
  }

  /** Replays the session's active stream into `sink` and follows it; false when there is none. */
  follow(sessionId: string, sink: SseSink): { following: boolean; stop: () => void } {
    const stream = this.active.get(sessionId)?.[0];
    if (!stream) return { following: false, stop: () => undefined };
    record(stream);
    for (const text of stream.chunks) sink.write(text);
    stream.followers.add(sink);
    return { following: true, stop: () => void stream.followers.delete(sink) };
  }
}

/** Runs a UI request parser: its refusal becomes the server's 400 (the same error body as every route's). */
export function parsedUiRequest<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof UiRequestError) throw badRequest(error.message, error.param, error.code);
    throw error;
  }
}
