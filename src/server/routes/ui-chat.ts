/**
 * The AI SDK UI message stream (v1), what `useChat` reads: `POST /api/chat` takes what its
 * `DefaultChatTransport` sends (`{ id, messages, trigger, messageId? }`, `id` the session) and
 * answers with the stream (`x-vercel-ai-ui-message-stream: v1`); `GET /api/chat/{id}/stream`
 * (`useChat({ resume: true })`) replays the session's running stream from its start and follows
 * it, or answers 204 when none runs. A run goes on when its client leaves (a reload resumes it);
 * shutdown still stops it. The last message decides the run: a user message is a new input; an
 * assistant message carrying approval responses resumes the run that stopped for them, through
 * the same path as `POST /v1/approvals`.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Hono } from "hono";
import { parseUiChatRequest } from "../../ui/requests.js";
import { UI_MESSAGE_STREAM_HEADERS, UI_STREAM_DONE, type UiMessageStreamOptions, UiMessageStreamEncoder, uiChunksSse } from "../../ui/ui-message-stream.js";
import { webSseSink } from "../chat-stream.js";
import type { ServerContext } from "../context.js";
import { clientToolClash } from "../../ui/client-tools.js";
import { badRequest, HttpError } from "../http-errors.js";
import { type ProtocolEncoder, parsedUiRequest, ReplayableStreams } from "../protocol-stream.js";
import { type PrepareProtocolChat, protocolHonoHandler, protocolNodeHandler } from "./protocol-post.js";
import { validSessionId } from "../session-id.js";

export const UI_CHAT_PATH = "/api/chat";

function uiEncoder(options: UiMessageStreamOptions): ProtocolEncoder {
  const encoder = new UiMessageStreamEncoder(options);
  return {
    opening: () => uiChunksSse(encoder.start()),
    event: (event) => encoder.eventSse(event),
    closing: (result) => uiChunksSse(encoder.closing(result)) + UI_STREAM_DONE,
    failure: (error) => uiChunksSse(encoder.failure(error.message)) + UI_STREAM_DONE,
  };
}

export interface UiChatRoutes {
  app: Hono;
  /** `POST /api/chat` straight on node:http: same checks and answers as the Hono route. Never rejects. */
  handleNode(incoming: IncomingMessage, outgoing: ServerResponse): Promise<void>;
}

export function uiChatRoutes(server: ServerContext): UiChatRoutes {
  const { runs } = server;
  const streams = new ReplayableStreams();
  const app = new Hono();

  const prepare: PrepareProtocolChat = async (json) => {
    const chat = parsedUiRequest(() => parseUiChatRequest(json));
    if (server.durable) throw badRequest(`${UI_CHAT_PATH} is not served in durable mode; use /v1/chat/completions`, null, "unsupported_in_durable_mode");
    const { sessionId, intent } = chat;
    // The agent file's `client: true` tools: the frontend runs them and answers with addToolOutput.
    const clientTools = server.settings.clientTools;
    if (clientTools.length > 0) {
      const clash = clientToolClash(clientTools, await server.toolNames(), "tools");
      if (clash) throw new HttpError(503, `the agent file's ${clash.message}`, "server_error", "configuration");
    }
    return {
      headers: { ...UI_MESSAGE_STREAM_HEADERS, "x-session-id": sessionId },
      // The run outlives its request: a client that leaves (a reload) resumes it with GET .../stream.
      abortOnLeave: false,
      encoder: uiEncoder({ messageId: chat.messageId ?? `msg_${randomUUID()}`, knownToolCallIds: chat.knownToolCallIds, clientToolNames: clientTools.map((tool) => tool.name) }),
      wrap: (sink) => streams.tee(sessionId, sink),
      launch(controller, onEvent, accepted) {
        if (intent.kind !== "input") {
          return runs.resume({ sessionId, decisions: intent.decisions, toolOutputs: intent.toolOutputs, onlyPendingOutputs: true, clientTools, controller, onEvent, onStart: accepted });
        }
        const work = runs.run({ input: intent.input, sessionId, controller, onEvent, clientTools });
        accepted();
        return work;
      },
    };
  };

  app.post(UI_CHAT_PATH, protocolHonoHandler(server, prepare));

  app.get(`${UI_CHAT_PATH}/:id/stream`, (c) => {
    const sessionId = validSessionId(c.req.param("id"), "id");
    let stop: () => void = () => undefined;
    const { sink, body } = webSseSink(() => stop());
    const followed = streams.follow(sessionId, sink);
    if (!followed.following) return c.body(null, 204);
    stop = followed.stop;
    return new Response(body, { headers: { ...UI_MESSAGE_STREAM_HEADERS, "x-session-id": sessionId } });
  });
  return { app, handleNode: protocolNodeHandler(server, UI_CHAT_PATH, prepare) };
}
