/**
 * `agentloop/ui`: put a frontend on any agent. The encoders turn a run's loop events into the
 * AI SDK UI message stream (`useChat`) or AG-UI events; the parsers read what those clients send.
 * `agentloop serve` is one user of them (`POST /api/chat`, `POST /ag-ui`); a Next.js, Hono or
 * Express route is another:
 *
 * ```ts
 * export async function POST(request: Request) {
 *   const chat = parseUiChatRequest(await request.json());
 *   if (chat.intent.kind !== "input") return new Response("not supported here", { status: 400 });
 *   return uiMessageStreamResponse(agent.run(chat.intent.input, { sessionId: chat.sessionId }));
 * }
 * ```
 */
import type { LoopEvent, RunResult } from "../loop/events.js";
import { AG_UI_HEADERS, type AgUiEncoderOptions, AgUiEncoder, agUiEventsSse } from "./ag-ui.js";
import { UI_MESSAGE_STREAM_HEADERS, UI_STREAM_DONE, type UiMessageStreamOptions, UiMessageStreamEncoder, uiChunksSse } from "./ui-message-stream.js";

export * from "./ag-ui.js";
export * from "./client-tools.js";
export * from "./requests.js";
export * from "./ui-message-stream.js";

/** A run as the helpers read it: its events, then its result (an agentloop `Run`). */
export interface EventSource {
  [Symbol.asyncIterator](): AsyncIterator<LoopEvent>;
  then: PromiseLike<RunResult>["then"];
}

const textEncoder = new TextEncoder();

function sseStream(produce: (write: (text: string) => void) => Promise<void>, onCancel?: () => void): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async start(controller) {
      let open = true;
      const write = (text: string) => {
        if (open) controller.enqueue(textEncoder.encode(text));
      };
      try {
        await produce(write);
      } finally {
        open = false;
        try {
          controller.close();
        } catch {
          // cancelled
        }
      }
    },
    cancel() {
      onCancel?.();
    },
  });
}

/** The UI message stream of a run, as SSE text (`data: {chunk}` events, then `data: [DONE]`). */
export function uiMessageStream(run: EventSource & { abort?: (reason?: unknown) => void }, options: UiMessageStreamOptions = {}): ReadableStream<Uint8Array> {
  return sseStream(
    async (write) => {
      const encoder = new UiMessageStreamEncoder(options);
      for await (const event of run) {
        const text = encoder.eventSse(event);
        if (text !== "") write(text);
      }
      write(uiChunksSse(encoder.closing(await run)) + UI_STREAM_DONE);
    },
    () => run.abort?.("client disconnected"),
  );
}

/** A `Response` carrying the run's UI message stream, with `x-vercel-ai-ui-message-stream: v1`. */
export function uiMessageStreamResponse(run: EventSource & { abort?: (reason?: unknown) => void }, options: UiMessageStreamOptions = {}): Response {
  return new Response(uiMessageStream(run, options), { headers: UI_MESSAGE_STREAM_HEADERS });
}

/** The AG-UI events of a run, as SSE text (`data: {event}`). */
export function agUiEventStream(run: EventSource & { abort?: (reason?: unknown) => void }, options: AgUiEncoderOptions): ReadableStream<Uint8Array> {
  return sseStream(
    async (write) => {
      const encoder = new AgUiEncoder(options);
      for await (const event of run) {
        const text = encoder.eventSse(event);
        if (text !== "") write(text);
      }
      const closing = agUiEventsSse(encoder.closing(await run));
      if (closing !== "") write(closing);
    },
    () => run.abort?.("client disconnected"),
  );
}

/** A `Response` carrying the run's AG-UI events. */
export function agUiResponse(run: EventSource & { abort?: (reason?: unknown) => void }, options: AgUiEncoderOptions): Response {
  return new Response(agUiEventStream(run, options), { headers: AG_UI_HEADERS });
}
