/**
 * OpenAI chat completions: `POST /v1/chat/completions` (streamed or not) and `GET /v1/models`.
 * The POST route has two doors to the same code: a Hono route (`AgentServer.fetch`), and the hot
 * path straight on node:http (`handleNode`), without web streams, a web `Request` or a Hono context.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Hono } from "hono";
import { onAbort } from "../../abort.js";
import { AgentLoopError } from "../../errors.js";
import type { LoopEvent, RunResult } from "../../loop/events.js";
import type { Message } from "../../messages.js";
import type { JsonSchema } from "../../model/model.js";
import { type ChatRequest, parseChatRequest } from "../chat-request.js";
import { ChatStreamEncoder } from "../chat-encoder.js";
import {
  approvalRequiredOf,
  answerOf,
  clientToolCallsOf,
  finishReasonOf,
  wireUsage,
  nodeSseSink,
  RequestController,
  readNodeBody,
  type SseSink,
  sendNodeJson,
  sseHeaders,
  webSseSink,
} from "../chat-stream.js";
import { parseJsonText, readJson, type ServerContext, unixSeconds } from "../context.js";
import { newSessionId } from "../../memory/store.js";
import { schemaProblem } from "../../tools/validate.js";
import { badRequest, httpErrorOfRun } from "../http-errors.js";
import { clientToolClash } from "../../ui/client-tools.js";
import type { ClientToolDeclaration } from "../../ui/requests.js";
import { answeredBeforeBody } from "./guards.js";
import { durableChatNode, durableChatWeb } from "./runs.js";

export const CHAT_PATH = "/v1/chat/completions";

/** A validated chat request with what the server decided for it. */
interface PreparedChat {
  request: ChatRequest;
  sessionId: string;
  /** Earlier request messages, only for requests without a session (stateless OpenAI use). */
  history?: Message[];
  /** Echoed back in every chunk. */
  model: string;
}

export interface ChatCompletionRoutes {
  app: Hono;
  /** The hot path on node:http: same checks and answers as the Hono route. Never rejects. */
  handleNode(incoming: IncomingMessage, outgoing: ServerResponse): Promise<void>;
}

/** The non-streamed answer; a failed or aborted run throws its `HttpError`. A run stopped for approvals says which. */
export function completionOf(result: RunResult, model: string, sessionId: string, clientTools: readonly ClientToolDeclaration[] = []) {
  if (result.state === "FAILED" || result.state === "ABORTED") throw httpErrorOfRun(result.error ?? new AgentLoopError("aborted", result.reason));
  const clientCalls = clientTools.length > 0 ? clientToolCallsOf(result, new Set(clientTools.map((tool) => tool.name))) : undefined;
  const head = { id: `chatcmpl-${result.runId}`, object: "chat.completion", created: unixSeconds(), model, session_id: sessionId };
  if (clientCalls) {
    return {
      ...head,
      choices: [{ index: 0, message: { role: "assistant", content: result.text !== "" ? result.text : null, tool_calls: clientCalls.map(({ index: _index, ...call }) => call) }, finish_reason: "tool_calls" }],
      usage: wireUsage(result.usage),
    };
  }
  const approvals = approvalRequiredOf(result, sessionId);
  return {
    ...head,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: answerOf(result) },
        finish_reason: approvals ? "approval_required" : finishReasonOf(result),
      },
    ],
    usage: wireUsage(result.usage),
    ...(approvals ? { approval_required: approvals } : {}),
  };
}

/**
 * Streams one run as chat completion chunks into `sink`: the role chunk, progress blocks, answer
 * deltas, the finish chunk (`approval_required` for a run stopped for approvals, or one error
 * event), `[DONE]`, then ends the sink. `start` starts the run with the event listener. Tracked
 * for shutdown; never rejects.
 */
export function streamRun(
  server: ServerContext,
  sink: SseSink,
  chat: { model: string; sessionId: string; includeUsage?: boolean; structured?: boolean; progress?: boolean; clientToolNames?: string[] },
  start: (onEvent: (event: LoopEvent) => void) => Promise<RunResult>,
): Promise<void> {
  const { runs } = server;
  async function writeCompletion(): Promise<void> {
    const encoder = new ChatStreamEncoder({ id: `chatcmpl-${randomUUID()}`, created: unixSeconds(), agent: server.settings.name, ...chat });
    sink.write(encoder.start());
    let ended = false;
    /** Writes the closing events and `[DONE]`, and ends the stream: once, after the run's events are stored. */
    const end = (closing: readonly string[]) => {
      if (ended) return;
      ended = true;
      for (const line of closing) sink.write(line);
      sink.end();
    };
    try {
      // The run resolves once its events to run_ended are stored: only then the finish chunk and [DONE].
      const result = await start((event) => {
        const chunk = encoder.event(event);
        if (chunk !== undefined) sink.write(chunk);
      });
      end(encoder.closing(result));
    } catch (error) {
      end(ChatStreamEncoder.failure(error));
    }
  }
  return runs.track(writeCompletion());
}

export function chatCompletionRoutes(server: ServerContext): ChatCompletionRoutes {
  const { settings, runs, bodyLimitBytes } = server;

  /** Decides the session, the history and the model name of a validated request. */
  function prepareChat(request: ChatRequest): PreparedChat {
    return {
      request,
      sessionId: request.sessionId ?? `session_${newSessionId()}`,
      // With a session, its log is the history; a stateless OpenAI client sends the history itself.
      history: request.sessionId === undefined && request.history.length > 0 ? request.history : undefined,
      model: request.model ?? settings.name,
    };
  }

  /** A `response_format` schema ajv cannot compile is the client's error (400), not a failed run. */
  async function checkOutputSchema(schema: JsonSchema): Promise<void> {
    const problem = await schemaProblem(schema);
    if (problem) throw badRequest(`response_format.json_schema.schema is not a valid JSON Schema: ${problem}`, "response_format.json_schema.schema", "invalid_value");
  }

  /** A new input, or (trailing `tool` messages) the run the client's tool calls stopped, going on with their results. */
  const runChat = (chat: PreparedChat, controller: RequestController, onEvent?: (event: LoopEvent) => void) =>
    chat.request.toolOutputs
      ? runs.resume({ sessionId: chat.sessionId, decisions: {}, toolOutputs: chat.request.toolOutputs, clientTools: chat.request.clientTools, controller, onEvent })
      : runs.run({
      input: chat.request.input,
      sessionId: chat.sessionId,
      // An id this server just made names an empty session (a delegation records its task first).
      newSession: chat.request.sessionId === undefined && !chat.request.delegated,
      history: chat.history,
      delegated: chat.request.delegated,
      controller,
      onEvent,
      output: chat.request.output,
      clientTools: chat.request.clientTools,
    });

  /** A client tool named like one of the agent's own is refused (400 naming it). */
  async function checkClientTools(request: ChatRequest): Promise<void> {
    if (request.clientTools.length === 0 && !request.toolOutputs) return;
    if (server.durable) throw badRequest("client tools are not served in durable mode", "tools", "unsupported_in_durable_mode");
    if (request.clientTools.length === 0) return;
    const clash = clientToolClash(request.clientTools, await server.toolNames(), "tools", "function.name");
    if (clash) throw badRequest(clash.message, clash.param, clash.code);
  }

  const completionBody = (result: RunResult, chat: PreparedChat) => completionOf(result, chat.model, chat.sessionId, chat.request.clientTools);

  /**
   * Streams one completion into `sink`: the role chunk, progress blocks, answer deltas, the finish
   * chunk (or one error event), `[DONE]`, then ends the sink. Tracked for shutdown; never rejects.
   */
  function streamCompletion(sink: SseSink, chat: PreparedChat, controller: RequestController): Promise<void> {
    return streamRun(server, sink, {
        model: chat.model,
        sessionId: chat.sessionId,
        includeUsage: chat.request.includeUsage,
        structured: chat.request.output !== undefined,
        progress: chat.request.progressBlocks ?? settings.progressBlocks,
        clientToolNames: chat.request.clientTools.map((tool) => tool.name),
      }, (onEvent) => runChat(chat, controller, onEvent));
  }

  const app = new Hono();

  app.get("/v1/models", (c) =>
    c.json({ object: "list", data: [{ id: settings.name, object: "model", created: Math.floor(Date.now() / 1000), owned_by: "agentloop" }] }),
  );

  // The web-standard route (`AgentServer.fetch`, and any request not taken by `handleNode`).
  app.post(CHAT_PATH, async (c) => {
    const chat = prepareChat(parseChatRequest(await readJson(c), c.req.header("x-session-id"), c.req.header("x-progress-blocks")));
    if (chat.request.output) await checkOutputSchema(chat.request.output);
    await checkClientTools(chat.request);
    if (server.durable) return durableChatWeb(server, chat, c);
    const controller = new RequestController();
    if (chat.request.stream) {
      const { sink, body } = webSseSink(() => controller.disconnect());
      const unlink = onAbort(c.req.raw.signal, () => controller.disconnect());
      void streamCompletion(sink, chat, controller).finally(unlink);
      return new Response(body, { headers: sseHeaders(chat.sessionId) });
    }
    c.header("x-session-id", chat.sessionId);
    const unlink = onAbort(c.req.raw.signal, () => controller.disconnect());
    try {
      return c.json(completionBody(await runs.track(runChat(chat, controller)), chat));
    } finally {
      unlink();
    }
  });

  /**
   * The hot path: `POST /v1/chat/completions` straight on node:http. Same checks and answers as
   * the Hono routes (draining, bearer auth, body limit, validation, errors); one abort controller
   * per request. Never rejects.
   */
  async function handleNode(incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
    let headers: Record<string, string> = {};
    try {
      if (answeredBeforeBody(server, incoming, outgoing)) return;
      const sessionHeader = incoming.headers["x-session-id"];
      const body = parseJsonText(await readNodeBody(incoming, bodyLimitBytes));
      const progressHeader = incoming.headers["x-progress-blocks"];
      const chat = prepareChat(
        parseChatRequest(body, Array.isArray(sessionHeader) ? sessionHeader.join(", ") : sessionHeader, Array.isArray(progressHeader) ? progressHeader.join(", ") : progressHeader),
      );
      if (chat.request.output) await checkOutputSchema(chat.request.output);
      await checkClientTools(chat.request);
      headers = { "x-session-id": chat.sessionId };
      if (server.durable) return await durableChatNode(server, chat, outgoing);
      const controller = new RequestController();
      outgoing.once("close", () => {
        if (!outgoing.writableFinished) controller.disconnect();
      });
      if (outgoing.destroyed) controller.disconnect();
      if (chat.request.stream) {
        outgoing.writeHead(200, sseHeaders(chat.sessionId));
        // Not awaited: the stream is tracked for shutdown and never rejects, and this frame need
        // not stay alive for the whole stream.
        void streamCompletion(nodeSseSink(outgoing), chat, controller);
        return;
      }
      const result = await runs.track(runChat(chat, controller));
      sendNodeJson(outgoing, 200, completionBody(result, chat), headers);
    } catch (error) {
      const failure = server.httpErrorOfRequest(error, "POST", CHAT_PATH);
      // Over the limit (413): answered at once, and the connection stays open while node reads and
      // discards the rest of the body (bounded by the server's request timeout). Closing it on the
      // unread body would make the kernel reset it, and the client would lose the 413.
      sendNodeJson(outgoing, failure.status, failure.body(), headers);
    }
  }

  return { app, handleNode };
}
