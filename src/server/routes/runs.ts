/**
 * Durable runs (`DURABLE=true`): the chat requests as durable runs, and the routes over the runs.
 *
 * - `POST /v1/chat/completions` (durable): the run id in `x-agentloop-run-id` and in the chunks' id
 *   (`chatcmpl-<run id>`); the stream is the run's journal, so a client that loses it reattaches:
 * - `GET /v1/runs/{run_id}/events?after=<seq>`: the rest of the stream (SSE, each event with its
 *   `id: <seq>`; `Last-Event-ID` works as `after`). `seq` counts the stream's `data:` events from 1.
 * - `GET /v1/runs` (`status`, `session_id`, `limit`), `GET /v1/runs/{run_id}` (state, steps, pending
 *   approvals), `POST /v1/runs/{run_id}/cancel`, `POST /v1/runs/{run_id}/resume`,
 *   `POST /v1/runs/recover` `{ executor_id }` (DBOS recovery of another executor's unfinished runs).
 */
import { randomUUID } from "node:crypto";
import type { ServerResponse } from "node:http";
import { type Context, Hono } from "hono";
import type { JournalEntry } from "../../durable/index.js";
import type { ChatRequest } from "../chat-request.js";
import { ChatChunkEncoder, nodeSseSink, type SseSink, sendNodeJson, sseHeaders, webSseSink } from "../chat-stream.js";
import { ChatStreamEncoder } from "../chat-encoder.js";
import { parseJsonText, readJson, type ServerContext, unixSeconds } from "../context.js";
import { runResultOf } from "../durable-runs.js";
import { badRequest, HttpError, notFound } from "../http-errors.js";
import { optionalSessionIdParam } from "../session-id.js";
import type { ApprovalDecision } from "../../loop/checkpoint.js";
import type { Message } from "../../messages.js";
import { completionOf } from "./chat-completions.js";

export const RUN_ID_HEADER = "x-agentloop-run-id";

/** What the chat route decided for a request (see chat-completions.ts). */
export interface DurableChatRequest {
  request: ChatRequest;
  sessionId: string;
  history?: Message[];
  model: string;
}

const newRunId = () => `run_${randomUUID()}`;

function durableOf(server: ServerContext) {
  if (!server.durable) throw notFound("durable runs are off on this server (DURABLE=true turns them on)", "durable_off");
  return server.durable;
}

/** Starts a chat's durable run (queued behind the session's earlier runs). */
function startChat(server: ServerContext, chat: DurableChatRequest, runId: string) {
  const { request } = chat;
  return durableOf(server).start(
    {
      input: request.input,
      sessionId: chat.sessionId,
      newSession: request.sessionId === undefined && !request.delegated,
      history: chat.history,
      output: request.output,
      delegated: request.delegated,
      stream: { created: unixSeconds(), model: chat.model, includeUsage: request.includeUsage, structured: request.output !== undefined, progress: request.progressBlocks ?? server.settings.progressBlocks },
    },
    runId,
  );
}

/**
 * Pipes a run's journal into an SSE sink until the run's `[DONE]` (or the client leaves: the run
 * goes on). `withIds` writes each event's `id: <seq>` (the reattach route). Tracked for shutdown.
 */
function pipeJournal(server: ServerContext, runId: string, entries: AsyncGenerator<JournalEntry>, sink: SseSink, withIds: boolean, gone: { left: boolean }): Promise<void> {
  const work = (async () => {
    try {
      let done = false;
      for await (const entry of entries) {
        if (gone.left || server.draining) break;
        sink.write(withIds ? `id: ${entry.seq}\n${entry.item}` : entry.item);
        // A leg that stopped for approvals ends with `[DONE]`: the run goes on after the decision,
        // whose own response (`POST /v1/approvals`) streams the next leg.
        if (entry.item === ChatChunkEncoder.done) {
          done = true;
          break;
        }
      }
      // The journal ended without its `[DONE]`: the run was cancelled (or failed) before its end.
      if (!done && !gone.left && !server.draining) {
        const { status } = await server.durable!.show(runId);
        const message = status === "CANCELLED" ? `run ${runId} was cancelled` : `run ${runId} ended (${status}) without finishing its stream`;
        for (const line of ChatStreamEncoder.failure(new HttpError(503, message, "server_error", "aborted"))) sink.write(line);
      }
    } catch (error) {
      for (const line of ChatStreamEncoder.failure(server.httpErrorOfRequest(error, "GET", "/v1/runs/events"))) sink.write(line);
    } finally {
      sink.end();
      void entries.return(undefined);
    }
  })();
  return server.runs.track(work);
}

/**
 * `POST /v1/approvals` on a durable server: the decisions go to the waiting run as a DBOS message
 * (see DurableRuns.decide), and the response streams the run's next leg from its journal, from
 * whichever replica runs it. `stream: false`: the leg's completion (the run's end, or its next stop).
 */
export async function durableApprovals(server: ServerContext, c: Context, sessionId: string, decisions: Record<string, ApprovalDecision>, stream: boolean): Promise<Response> {
  const durable = durableOf(server);
  const { runId, leg, wait } = await durable.decide(sessionId, decisions);
  const headers = { ...sseHeaders(sessionId), [RUN_ID_HEADER]: runId };
  if (stream) {
    const gone = { left: false };
    const { sink, body } = webSseSink(() => {
      gone.left = true;
    });
    void pipeJournal(server, runId, leg, sink, false, gone);
    return new Response(body, { headers });
  }
  const result = await server.runs.track(
    (async () => {
      // The leg's end, then its result: the run's, or the INTERRUPTED one of its next stop.
      for await (const entry of leg) if (entry.item === ChatChunkEncoder.done) break;
      await leg.return(undefined);
      for (;;) {
        const next = await durable.approvalWait(runId);
        if (next && next.result.checkpoint?.id !== wait.result.checkpoint?.id) return next.result;
        const info = await durable.show(runId);
        if (info.status !== "PENDING" && info.status !== "ENQUEUED") return durable.result(runId);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })(),
  );
  c.header("x-session-id", sessionId);
  c.header(RUN_ID_HEADER, runId);
  return c.json(completionOf(runResultOf(result), server.settings.name, sessionId));
}

/** The durable `POST /v1/chat/completions` on node:http (the hot path's door). */
export async function durableChatNode(server: ServerContext, chat: DurableChatRequest, outgoing: ServerResponse): Promise<void> {
  const runId = newRunId();
  const run = await startChat(server, chat, runId);
  const headers = { "x-session-id": chat.sessionId, [RUN_ID_HEADER]: runId };
  if (!chat.request.stream) {
    const result = await server.runs.track(run.result());
    return sendNodeJson(outgoing, 200, completionOf(runResultOf(result), chat.model, chat.sessionId), headers);
  }
  const gone = { left: false };
  outgoing.once("close", () => {
    gone.left = true;
  });
  outgoing.writeHead(200, { ...sseHeaders(chat.sessionId), [RUN_ID_HEADER]: runId });
  // The run may wait behind the session's earlier runs: the client gets its run id now.
  outgoing.flushHeaders();
  const entries = await server.durable!.events(runId, 0, true);
  void pipeJournal(server, runId, entries, nodeSseSink(outgoing), false, gone);
}

/** The durable `POST /v1/chat/completions` through Hono (`AgentServer.fetch`). */
export async function durableChatWeb(server: ServerContext, chat: DurableChatRequest, c: Context): Promise<Response> {
  const runId = newRunId();
  const run = await startChat(server, chat, runId);
  if (!chat.request.stream) {
    const result = await server.runs.track(run.result());
    c.header("x-session-id", chat.sessionId);
    c.header(RUN_ID_HEADER, runId);
    return c.json(completionOf(runResultOf(result), chat.model, chat.sessionId));
  }
  return streamJournal(server, runId, 0, false, { ...sseHeaders(chat.sessionId), [RUN_ID_HEADER]: runId }, true);
}

async function streamJournal(server: ServerContext, runId: string, after: number, withIds: boolean, headers: Record<string, string>, known = false): Promise<Response> {
  const entries = await durableOf(server).events(runId, after, known);
  const gone = { left: false };
  const { sink, body } = webSseSink(() => {
    gone.left = true;
  });
  void pipeJournal(server, runId, entries, sink, withIds, gone);
  return new Response(body, { headers });
}

function nonNegative(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === "") return undefined;
  if (!/^\d+$/.test(value)) throw badRequest(`${name} must be a non-negative integer (the seq of the last event received), got "${value}"`, name, "invalid_after");
  return Number(value);
}

const RUN_ID = /^[A-Za-z0-9_.:-]{1,200}$/;

function runIdOf(c: Context): string {
  const runId = c.req.param("run_id") ?? "";
  if (!RUN_ID.test(runId)) throw badRequest(`run_id must be 1-200 letters, digits or _.:-, got "${runId}"`, "run_id", "invalid_run_id");
  return runId;
}

const MAX_EXECUTOR_IDS = 100;
const EXECUTOR_ID_MAX_LENGTH = 256;

/**
 * An executor id a recovery may name: any text `DURABLE_EXECUTOR_ID` can hold (a host name by
 * default), but none that PostgreSQL cannot take as text (a NUL made DBOS's query fail: a 500).
 */
const isExecutorId = (id: unknown): id is string =>
  typeof id === "string" && id !== "" && id.length <= EXECUTOR_ID_MAX_LENGTH && id.isWellFormed() && !/[\u0000-\u001f\u007f]/.test(id);

/** The longest `wait_ms` a resume request may ask for. */
const MAX_RESUME_WAIT_MS = 60_000;

const STATUSES = ["ENQUEUED", "PENDING", "SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"];

export function runRoutes(server: ServerContext): Hono {
  const app = new Hono();

  app.get("/v1/runs/:run_id/events", async (c) => {
    const runId = runIdOf(c);
    const after = nonNegative(c.req.query("after"), "after") ?? nonNegative(c.req.header("last-event-id"), "Last-Event-ID") ?? 0;
    return streamJournal(server, runId, after, true, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive", [RUN_ID_HEADER]: runId });
  });

  app.get("/v1/runs", async (c) => {
    const status = c.req.query("status")?.toUpperCase();
    if (status !== undefined && !STATUSES.includes(status)) throw badRequest(`status must be one of ${STATUSES.join(", ")}, got "${c.req.query("status")}"`, "status", "invalid_status");
    const limitParam = c.req.query("limit");
    if (limitParam !== undefined && (!/^\d+$/.test(limitParam) || Number(limitParam) < 1)) throw badRequest("limit must be a positive integer", "limit", "invalid_limit");
    const sessionId = optionalSessionIdParam(c.req.queries("session_id"), "session_id");
    const runs = await durableOf(server).list({ status, sessionId, limit: limitParam ? Math.min(Number(limitParam), 1000) : 100 });
    return c.json({ runs, total: runs.length });
  });

  app.post("/v1/runs/recover", async (c) => {
    const body = (await readJson(c)) as { executor_id?: unknown } | null;
    const ids = typeof body?.executor_id === "string" ? [body.executor_id] : body?.executor_id;
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_EXECUTOR_IDS || !ids.every(isExecutorId)) {
      throw badRequest(
        `executor_id must be an executor id or a list of 1-${MAX_EXECUTOR_IDS} of them (each 1-${EXECUTOR_ID_MAX_LENGTH} characters, without control characters or lone surrogates), e.g. { "executor_id": "replica-0" }`,
        "executor_id",
        "invalid_executor_id",
      );
    }
    const recovered = await durableOf(server).recover(ids as string[]);
    server.log(`[${server.settings.name}] recovered ${recovered.length} run(s) of executor(s) ${ids.join(", ")}`);
    return c.json({ recovered, total: recovered.length });
  });

  // The run id is checked first (400), then whether durable runs are on (404), as on every run route.
  app.get("/v1/runs/:run_id", async (c) => {
    const runId = runIdOf(c);
    return c.json(await durableOf(server).show(runId));
  });

  // One rule for both: a run that ended cannot be changed (409 run_finished). A succeeded run can be
  // neither cancelled nor resumed; a failed one cannot be cancelled, and resuming it retries it.
  const unlessFinished = async (runId: string, action: "cancel" | "resume") => {
    const info = await durableOf(server).show(runId);
    if (info.status === "SUCCESS" || (action === "cancel" && info.status === "ERROR")) {
      const hint = info.status === "ERROR" ? " (resume retries it)" : "";
      throw new HttpError(409, `run "${runId}" already finished (${info.status}): nothing to ${action}${hint}`, "invalid_request_error", "run_finished");
    }
  };

  app.post("/v1/runs/:run_id/cancel", async (c) => {
    const runId = runIdOf(c);
    await unlessFinished(runId, "cancel");
    return c.json(await durableOf(server).cancel(runId));
  });

  // Optional body `{"wait_ms": n}`: how long a cancelled execution still stopping in this process is
  // waited for (default 10 s) before 409 `run_stopping`.
  app.post("/v1/runs/:run_id/resume", async (c) => {
    const runId = runIdOf(c);
    const text = await c.req.text();
    const body = text.trim() === "" ? {} : parseJsonText(text);
    const waitMs = (body as { wait_ms?: unknown } | null)?.wait_ms;
    if (body === null || typeof body !== "object" || Array.isArray(body) || (waitMs !== undefined && !(Number.isInteger(waitMs) && (waitMs as number) >= 0 && (waitMs as number) <= MAX_RESUME_WAIT_MS))) {
      throw badRequest(`the body is optional; when sent, a JSON object whose "wait_ms" is an integer number of milliseconds from 0 to ${MAX_RESUME_WAIT_MS}, e.g. { "wait_ms": 2000 }`, "wait_ms", "invalid_wait_ms");
    }
    await unlessFinished(runId, "resume");
    return c.json(await server.durable!.resume(runId, waitMs as number | undefined));
  });

  return app;
}
