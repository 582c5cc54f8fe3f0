import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { type Context, Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { onAbort } from "../abort.js";
import { type AgentRuntime, type BuildAgentOptions, type PreparedAgentRuntime, prepareAgentRuntime, type UnavailableDependency } from "../config/build-agent.js";
import { type AgentFile, type AgentSettings, resolveAgentSettings } from "../config/settings.js";
import { AgentLoopError } from "../errors.js";
import type { LoopEvent, RunResult } from "../loop/events.js";
import type { Message } from "../messages.js";
import { createA2AHandler } from "./a2a-endpoint.js";
import { A2A_PATH, buildAgentCard } from "./agent-card.js";
import { type ChatRequest, parseChatRequest, validSessionId } from "./chat-request.js";
import {
  ChatChunkEncoder,
  nodeSseSink,
  RequestController,
  readNodeBody,
  requestTooLarge,
  type SseSink,
  sendNodeJson,
  sseHeaders,
  webSseSink,
} from "./chat-stream.js";
import { badRequest, HttpError, httpErrorOfRun, notFound } from "./http-errors.js";
import { DisabledMemoryStore, type MemoryStore } from "../memory/index.js";
import { eventView, type ServerMemory, serverMemoryFromEnv, serverMemoryOf } from "./memory.js";
import { SessionQueue } from "./session-queue.js";

export interface AgentServerOptions {
  /** Path of a YAML agent file. */
  agentFile?: string;
  /** An already parsed agent file. */
  file?: AgentFile;
  /** The KAOS variables (default `process.env`). Tests pass their own so they do not collide. */
  env?: NodeJS.ProcessEnv;
  /** Already resolved settings (skips the file and the environment). */
  settings?: AgentSettings;
  /** The session store. Default: the one the `MEMORY_*` settings describe (opened and closed by the
   * server); a store you pass is not closed by the server; `false` records nothing. */
  memory?: MemoryStore | false;
  /** Passed to the agent builder (a model or extra tools, for embedding and tests). */
  build?: Omit<BuildAgentOptions, "memory" | "env" | "readyTimeoutMs">;
  /** Interface to listen on (default `0.0.0.0` for `AGENT_PORT`). */
  host?: string;
  /** Overrides `AGENT_PORT`. 0 picks a free port. */
  port?: number;
  /** Largest request body in bytes (default 1 MiB); bigger bodies get 413. */
  bodyLimitBytes?: number;
  /** How long MCP servers and peer cards get before `/ready` reports degraded (default 10 s). */
  readyTimeoutMs?: number;
  /** How long running streams may finish on shutdown before they are aborted (default 10 s). */
  shutdownGraceMs?: number;
  /** The public base URL written into the agent card (default: the listening address). */
  publicUrl?: string;
  /** Receives one line per notable thing (runs ending, shutdown). Default: stderr. */
  log?: (line: string) => void;
}

/** The `/ready` body. `timestamp` is Unix seconds, as KAOS sends it. */
export interface ReadyStatus {
  status: "ready" | "starting" | "degraded" | "failed";
  name: string;
  timestamp: number;
  unavailable?: UnavailableDependency[];
  error?: string;
}

/** A running (or ready to listen) agent server. */
export interface AgentServer {
  readonly settings: AgentSettings;
  /** The web-standard handler (`fetch(Request) → Response`), usable without listening. */
  readonly fetch: (request: Request) => Promise<Response>;
  /** Starts listening; resolves with the base URL (`http://host:port`). */
  listen(port?: number, host?: string): Promise<string>;
  /** The base URL once listening. */
  readonly url: string | undefined;
  /** Resolves once MCP servers and peers answered or the readiness timeout passed. */
  ready(): Promise<ReadyStatus>;
  /**
   * Graceful shutdown: stop accepting, let running requests finish up to `graceMs`, abort the
   * rest, close MCP connections and flush the memory store.
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

const VERSION = "0.1.0";

function constantTimeEqual(a: string, b: string): boolean {
  // Hashing first gives equal lengths, so timingSafeEqual never leaks the key's length.
  const left = createHash("sha256").update(a).digest();
  const right = createHash("sha256").update(b).digest();
  return timingSafeEqual(left, right);
}

/** Unix seconds: the `timestamp` of KAOS's `/health` and `/ready`. */
const unixSeconds = () => Math.floor(Date.now() / 1000);

function errorResponse(c: Context, error: HttpError): Response {
  return c.json(error.body(), error.status);
}

/** Parses a request body's text as JSON; 400 `invalid_json` when it is empty or not JSON. */
function parseJsonText(text: string): unknown {
  if (text.trim() === "") throw badRequest("the request body is empty; send a JSON object", null, "invalid_json");
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest(`the request body is not valid JSON: ${(error as Error).message}`, null, "invalid_json");
  }
}

const CHAT_PATH = "/v1/chat/completions";

/** Whether a node request targets the chat completions route (the path, any query). */
function isChatRequest(incoming: IncomingMessage): boolean {
  if (incoming.method !== "POST") return false;
  const url = incoming.url ?? "";
  return url.startsWith(CHAT_PATH) && (url.length === CHAT_PATH.length || url.charCodeAt(CHAT_PATH.length) === 63 /* ? */);
}

/** A validated chat request with what the server decided for it. */
interface PreparedChat {
  request: ChatRequest;
  sessionId: string;
  /** Earlier request messages, only for requests without a session (stateless OpenAI use). */
  history?: Message[];
  /** Echoed back in every chunk. */
  model: string;
}

/**
 * Creates an agent server from an agent file and the KAOS variables. Bad configuration rejects
 * with an `AgentLoopError` (kind `configuration`) naming the setting. Call `listen()` to serve.
 */
export async function createAgentServer(options: AgentServerOptions = {}): Promise<AgentServer> {
  const env = options.env ?? process.env;
  const settings = options.settings ?? (await resolveAgentSettings({ agentFile: options.agentFile, file: options.file, env }));
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const memory: ServerMemory =
    options.memory === false
      ? serverMemoryOf(new DisabledMemoryStore())
      : options.memory
        ? serverMemoryOf(options.memory, settings.memoryEnv)
        : await serverMemoryFromEnv(settings.memoryEnv, settings.name);
  const closeMemory = async () => {
    await memory.handle?.flush();
    if (memory.owned) await memory.store.close();
  };
  let prepared: PreparedAgentRuntime;
  try {
    prepared = await prepareAgentRuntime(settings, { ...options.build, env, memory: memory.handle, readyTimeoutMs: options.readyTimeoutMs });
  } catch (error) {
    await closeMemory();
    throw error;
  }
  const bodyLimitBytes = options.bodyLimitBytes ?? 1024 * 1024;
  const sessions = new SessionQueue();
  /** Aborted at the end of the shutdown grace period: every run still going stops. */
  const shutdown = new AbortController();
  /** The controllers of the runs going on, aborted with `shutdown` (no listener per request on it). */
  const running = new Set<RequestController>();
  const abortEverything = (reason: string) => {
    shutdown.abort(reason);
    for (const controller of running) controller.abort(reason);
  };
  const active = new Set<Promise<unknown>>();
  let draining = false;
  let baseUrl: string | undefined = options.publicUrl?.replace(/\/+$/, "");
  let readyStatus: ReadyStatus = { status: "starting", name: settings.name, timestamp: unixSeconds() };
  let runtime: AgentRuntime | undefined;
  let runtimeFailure: AgentLoopError | undefined;
  const connecting = prepared.connect(shutdown.signal).then(
    (built) => {
      runtime = built;
      readyStatus = {
        status: built.unavailable.length === 0 ? "ready" : "degraded",
        name: settings.name,
        timestamp: unixSeconds(),
        ...(built.unavailable.length > 0 ? { unavailable: built.unavailable } : {}),
      };
      for (const missing of built.unavailable) log(`[${settings.name}] degraded: ${missing.kind} "${missing.name}" unavailable: ${missing.reason}`);
      return built;
    },
    (error: unknown) => {
      runtimeFailure = AgentLoopError.from(error, "configuration");
      readyStatus = { status: "failed", name: settings.name, timestamp: unixSeconds(), error: runtimeFailure.message };
      log(`[${settings.name}] agent could not be built: ${runtimeFailure.message}`);
      return undefined;
    },
  );

  const card = () =>
    buildAgentCard({ name: settings.name, description: settings.description, baseUrl: baseUrl ?? `http://localhost:${settings.port}`, version: VERSION, tools: runtime?.tools ?? [] });

  /** Tracks a request so shutdown can wait for it. */
  function track<T>(work: Promise<T>): Promise<T> {
    active.add(work);
    const settled = () => void active.delete(work);
    void work.then(settled, settled);
    return work;
  }

  async function agentOrFail(): Promise<AgentRuntime> {
    const built = runtime ?? (await connecting);
    if (!built) throw new HttpError(503, `the agent is not available: ${runtimeFailure?.message ?? "not built"}`, "server_error", "agent_unavailable");
    return built;
  }

  interface RunRequest {
    input: string;
    sessionId: string;
    history?: Message[];
    /** The server made the session id for this request: there is no history to load. */
    newSession?: boolean;
    delegated?: boolean;
    /** The request's one controller: the client leaving aborts it, and so does the shutdown. */
    controller: RequestController;
    onEvent?: (event: LoopEvent) => void;
  }

  /** Runs the agent for one input, after earlier requests on the same session finished. */
  function runAgent(request: RunRequest): Promise<RunResult> {
    return sessions.run(request.sessionId, () => runInSession(request));
  }

  /** One run, the session to itself (in this process, and across replicas on PostgreSQL). */
  async function runInSession(request: RunRequest): Promise<RunResult> {
    const built = runtime ?? (await agentOrFail());
    const { controller } = request;
    // Shutdown aborts the controllers in `running`: Node 20 never prunes AbortSignal.any's
    // dependants, and a listener per request on the shutdown signal costs as much.
    if (shutdown.signal.aborted) controller.abort(shutdown.signal.reason);
    running.add(controller);
    let release: (() => Promise<void>) | undefined;
    try {
      // Replicas sharing a PostgreSQL store take turns on a session too (the queue covers this process).
      if (memory.handle && memory.store.lockSession) release = await memory.store.lockSession(request.sessionId, controller.signal);
      if (request.delegated && memory.handle) {
        await memory.store
          .append(request.sessionId, [{ event_type: "task_delegation_received", content: request.input, metadata: { source: "task-delegation" } }])
          .catch((error: unknown) => log(`[${settings.name}] could not record task_delegation_received in ${request.sessionId}: ${(error as Error).message}`));
      }
      const run = built.agent.run(request.input, { sessionId: request.sessionId, newSession: request.newSession, history: request.history, onEvent: request.onEvent });
      // The run's own controller is the request's only one: a disconnect or the shutdown aborts the run.
      controller.attach(run);
      const result = await run;
      const reason = result.state === "ABORTED" && controller.byClient ? `${result.reason} (client disconnected)` : result.reason;
      log(`[${settings.name}] run ${result.runId} session ${request.sessionId} ${result.state}: ${reason}`);
      return result;
    } finally {
      running.delete(controller);
      if (release) await release();
    }
  }

  const app = new Hono();

  /** The answer to a request that threw: its own status, 503 for a store or dependency failure, else 500 (logged). */
  function httpErrorOfRequest(error: unknown, method: string, path: string): HttpError {
    if (error instanceof HttpError) return error;
    if (AgentLoopError.isInstance(error)) {
      // A store or dependency failure (requests are validated before): the service is unavailable.
      log(`[${settings.name}] ${method} ${path} failed: ${error.kind}: ${error.message}`);
      return new HttpError(503, error.message, "server_error", error.kind);
    }
    log(`[${settings.name}] unexpected error on ${method} ${path}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return new HttpError(500, "internal error", "server_error", "internal_error");
  }

  const shuttingDownError = () => new HttpError(503, "the server is shutting down", "server_error", "shutting_down");
  const WWW_AUTHENTICATE = 'Bearer realm="agentloop"';

  /** Checks the bearer token when `AGENT_API_KEY` is set: the 401 to answer, or undefined. */
  function authorizationError(header: string | undefined): HttpError | undefined {
    if (settings.apiKey === undefined) return undefined;
    const match = /^Bearer\s+(.+)$/i.exec((header ?? "").trim());
    if (match && constantTimeEqual(match[1], settings.apiKey)) return undefined;
    return new HttpError(401, "a valid bearer token is required (Authorization: Bearer <AGENT_API_KEY>)", "authentication_error", "invalid_api_key");
  }

  app.onError((error, c) => errorResponse(c, httpErrorOfRequest(error, c.req.method, c.req.path)));
  app.notFound((c) => errorResponse(c, notFound(`no route ${c.req.method} ${c.req.path}`, "unknown_route")));

  app.use("*", async (c, next) => {
    if (draining && c.req.path !== "/health") {
      c.header("connection", "close");
      return errorResponse(c, shuttingDownError());
    }
    await next();
  });

  app.get("/health", (c) => c.json({ status: "healthy", name: settings.name, timestamp: unixSeconds() }));
  app.get("/ready", (c) => {
    const status = { ...readyStatus, timestamp: unixSeconds() };
    return c.json(status, status.status === "ready" || status.status === "degraded" ? 200 : 503);
  });

  // Bearer auth on everything but health and ready.
  app.use("*", async (c, next) => {
    const denied = authorizationError(c.req.header("authorization"));
    if (denied) {
      c.header("www-authenticate", WWW_AUTHENTICATE);
      return errorResponse(c, denied);
    }
    return next();
  });

  app.use("*", bodyLimit({ maxSize: bodyLimitBytes, onError: (c) => errorResponse(c, requestTooLarge(bodyLimitBytes)) }));

  const readJson = async (c: Context): Promise<unknown> => parseJsonText(await c.req.text());

  // The card lists the tools, so it waits for the MCP servers (bounded by the readiness timeout).
  const cardRoute = async (c: Context) => {
    await connecting;
    return c.json(card());
  };
  app.get("/.well-known/agent.json", cardRoute);
  app.get("/.well-known/agent-card.json", cardRoute);
  // Where KAOS's RemoteAgent looks for a peer's card (no extension): a KAOS parent can delegate here.
  app.get("/.well-known/agent", cardRoute);

  app.get("/v1/models", (c) =>
    c.json({ object: "list", data: [{ id: settings.name, object: "model", created: Math.floor(Date.now() / 1000), owned_by: "agentloop" }] }),
  );

  app.get("/memory/sessions", async (c) => {
    await recorded();
    // KAOS lists session ids (least recently updated first); `agentloop sessions` shows the details.
    const ids = (await memory.store.listSessions()).map((session) => session.session_id);
    return c.json({ agent: settings.name, sessions: ids, total: ids.length });
  });

  app.get("/memory/events", async (c) => {
    const sessionParam = c.req.query("session_id");
    const limitParam = c.req.query("limit");
    let limit = 100;
    if (limitParam !== undefined) {
      if (!/^\d+$/.test(limitParam) || Number(limitParam) < 1) throw badRequest("limit must be a positive integer", "limit", "invalid_limit");
      limit = Math.min(Number(limitParam), 1000);
    }
    let sessionId: string | undefined;
    if (sessionParam !== undefined && sessionParam !== "") sessionId = validSessionId(sessionParam, "session_id");
    await recorded(sessionId);
    if (sessionId !== undefined) {
      if (!(await memory.store.getSession(sessionId))) throw notFound(`session "${sessionId}" not found`, "session_not_found", "session_id");
    }
    const stored = sessionId ? await memory.store.events(sessionId, { limit }) : await memory.store.latestEvents({ limit });
    const events = stored.map(eventView);
    return c.json({ agent: settings.name, events, total: events.length });
  });

  /** Decides the session, the history and the model name of a validated request. */
  function prepareChat(request: ChatRequest): PreparedChat {
    return {
      request,
      sessionId: request.sessionId ?? `session_${randomUUID()}`,
      // With a session, its log is the history; a stateless OpenAI client sends the history itself.
      history: request.sessionId === undefined && request.history.length > 0 ? request.history : undefined,
      model: request.model ?? settings.name,
    };
  }

  const runChat = (chat: PreparedChat, controller: RequestController, onEvent?: (event: LoopEvent) => void) =>
    runAgent({
      input: chat.request.input,
      sessionId: chat.sessionId,
      // An id this server just made names an empty session (a delegation records its task first).
      newSession: chat.request.sessionId === undefined && !chat.request.delegated,
      history: chat.history,
      delegated: chat.request.delegated,
      controller,
      onEvent,
    });

  /** The non-streamed answer; a failed or aborted run throws its `HttpError`. */
  function completionBody(result: RunResult, chat: PreparedChat) {
    if (result.state === "FAILED" || result.state === "ABORTED") throw httpErrorOfRun(result.error ?? new AgentLoopError("aborted", result.reason));
    return {
      id: `chatcmpl-${result.runId}`,
      object: "chat.completion",
      created: unixSeconds(),
      model: chat.model,
      session_id: chat.sessionId,
      choices: [{ index: 0, message: { role: "assistant", content: result.text !== "" ? result.text : result.reason }, finish_reason: result.state === "COMPLETED" ? "stop" : "length" }],
      usage: { prompt_tokens: result.usage.inputTokens, completion_tokens: result.usage.outputTokens, total_tokens: result.usage.totalTokens },
    };
  }

  /**
   * Streams one completion into `sink`: the role chunk, progress blocks, answer deltas, the finish
   * chunk (or one error event), `[DONE]`, then ends the sink. Tracked for shutdown; never rejects.
   */
  function streamCompletion(sink: SseSink, chat: PreparedChat, controller: RequestController): Promise<void> {
    return track(writeCompletion(sink, chat, controller));
  }

  /**
   * Runs whose stream already ended (at `run-end`) while their memory writes still go on, by
   * session: the memory endpoints wait for them, so a client that reads right after its stream
   * ended sees everything the run recorded.
   */
  const recording = new Map<string, Set<Promise<unknown>>>();

  function recordingUntil(sessionId: string, work: Promise<unknown>): void {
    let runs = recording.get(sessionId);
    if (!runs) recording.set(sessionId, (runs = new Set()));
    runs.add(work);
    const settled = () => {
      runs.delete(work);
      if (runs.size === 0 && recording.get(sessionId) === runs) recording.delete(sessionId);
    };
    void work.then(settled, settled);
  }

  /** Settles when the runs that ended in `sessionId` (in every session without one) finished recording. */
  async function recorded(sessionId?: string): Promise<void> {
    const runs = sessionId === undefined ? [...recording.values()].flatMap((set) => [...set]) : [...(recording.get(sessionId) ?? [])];
    if (runs.length > 0) await Promise.allSettled(runs);
  }

  async function writeCompletion(sink: SseSink, chat: PreparedChat, controller: RequestController): Promise<void> {
    const chunks = new ChatChunkEncoder(`chatcmpl-${randomUUID()}`, unixSeconds(), chat.model);
    sink.write(chunks.role());
    let ended = false;
    /** Writes the closing events and `[DONE]`, and ends the stream: once, at the run's `run-end` (not after its memory writes: a SQL store's take a while). */
    const end = (closing: readonly string[]) => {
      if (ended) return;
      ended = true;
      for (const line of closing) sink.write(line);
      sink.write(ChatChunkEncoder.done);
      sink.end();
    };
    const closingOf = (result: RunResult): string[] => {
      // The answer did not finish: an error event instead of a finish chunk.
      if (result.state === "FAILED" || result.state === "ABORTED") {
        return [ChatChunkEncoder.error(httpErrorOfRun(result.error ?? new AgentLoopError("aborted", result.reason)).body())];
      }
      const closing: string[] = [];
      // A limit ended the run: say so when the model gave no answer text.
      if (result.state !== "COMPLETED" && result.text === "") closing.push(chunks.content(result.reason));
      closing.push(chunks.finish(result.state === "COMPLETED" ? "stop" : "length"));
      if (chat.request.includeUsage) {
        closing.push(chunks.usage({ prompt_tokens: result.usage.inputTokens, completion_tokens: result.usage.outputTokens, total_tokens: result.usage.totalTokens }));
      }
      return closing;
    };
    let work: Promise<RunResult> | undefined;
    try {
      work = runChat(chat, controller, (event) => {
        if (event.type === "text-delta") {
          if (event.delta !== "") sink.write(chunks.content(event.delta));
        } else if (event.type === "progress") {
          const block = { type: "progress", step: event.step, max_steps: event.max_steps, action: event.action, target: event.target };
          sink.write(chunks.content(JSON.stringify(block)));
        } else if (event.type === "run-end") {
          end(closingOf(event.result));
          // Memory off: nothing is written after the run's end.
          if (work && memory.handle) recordingUntil(chat.sessionId, work);
        }
      });
      // Normally ended at run-end already; this covers a run that ended without one.
      const result = await work;
      if (!ended) end(closingOf(result));
    } catch (error) {
      end([ChatChunkEncoder.error((error instanceof HttpError ? error : httpErrorOfRun(error)).body())]);
    }
  }

  // The web-standard route (`AgentServer.fetch`, and any request not taken by `handleChatOnNode`).
  app.post(CHAT_PATH, async (c) => {
    const chat = prepareChat(parseChatRequest(await readJson(c), c.req.header("x-session-id")));
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
      return c.json(completionBody(await track(runChat(chat, controller)), chat));
    } finally {
      unlink();
    }
  });

  /**
   * The hot path: `POST /v1/chat/completions` straight on node:http, without web streams, a web
   * `Request` or a Hono context. Same checks and answers as the Hono routes (draining, bearer auth,
   * body limit, validation, errors); one abort controller per request. Never rejects.
   */
  async function handleChatOnNode(incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
    let headers: Record<string, string> = {};
    try {
      if (draining) return sendNodeJson(outgoing, 503, shuttingDownError().body(), { connection: "close" });
      const denied = authorizationError(incoming.headers.authorization);
      if (denied) return sendNodeJson(outgoing, 401, denied.body(), { "www-authenticate": WWW_AUTHENTICATE });
      const declared = incoming.headers["content-length"];
      if (declared !== undefined && Number.parseInt(declared, 10) > bodyLimitBytes) throw requestTooLarge(bodyLimitBytes);
      const sessionHeader = incoming.headers["x-session-id"];
      const body = parseJsonText(await readNodeBody(incoming, bodyLimitBytes));
      const chat = prepareChat(parseChatRequest(body, Array.isArray(sessionHeader) ? sessionHeader.join(", ") : sessionHeader));
      headers = { "x-session-id": chat.sessionId };
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
      const result = await track(runChat(chat, controller));
      sendNodeJson(outgoing, 200, completionBody(result, chat), headers);
    } catch (error) {
      const failure = httpErrorOfRequest(error, "POST", CHAT_PATH);
      // Over the limit mid-body: the rest is not read, so the connection cannot be reused.
      sendNodeJson(outgoing, failure.status, failure.body(), failure.status === 413 ? { ...headers, connection: "close" } : headers);
    }
  }

  const a2a = createA2AHandler(card, ({ input, sessionId, signal, onEvent }) => {
    const controller = new RequestController();
    const unlink = onAbort(signal, () => controller.disconnect(signal.reason));
    return track(runAgent({ input, sessionId, controller, onEvent }).finally(unlink));
  });
  const a2aRoute = async (c: Context) => {
    let body: unknown;
    try {
      body = await readJson(c);
    } catch {
      return c.json({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error: the body is not valid JSON" } });
    }
    return a2a(c.req.raw, body);
  };
  app.post(A2A_PATH, a2aRoute);
  app.post("/", a2aRoute);

  let server: Server | undefined;
  let closing: Promise<void> | undefined;
  const fetchHandler = (request: Request) => Promise.resolve(app.fetch(request));

  const agentServer: AgentServer = {
    settings,
    fetch: fetchHandler,
    get url() {
      return baseUrl;
    },
    ready: async () => {
      await connecting;
      return readyStatus;
    },
    listen(port = options.port ?? settings.port, host = options.host ?? "0.0.0.0") {
      if (server) return Promise.reject(new Error("the server is already listening"));
      const honoListener = getRequestListener(app.fetch, { hostname: host });
      const created = createServer((incoming, outgoing) => {
        if (isChatRequest(incoming)) {
          handleChatOnNode(incoming, outgoing).catch(() => outgoing.destroy());
        } else {
          void honoListener(incoming, outgoing);
        }
      });
      server = created;
      return new Promise<string>((resolve, reject) => {
        created.once("error", (error: NodeJS.ErrnoException) => {
          reject(
            error.code === "EADDRINUSE"
              ? new AgentLoopError("configuration", `AGENT_PORT: port ${port} is already in use`, { cause: error })
              : new AgentLoopError("network", `cannot listen on ${host}:${port}: ${error.message}`, { cause: error }),
          );
        });
        created.listen(port, host, () => {
          const address = created.address() as AddressInfo;
          const shownHost = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
          baseUrl ??= `http://${shownHost}:${address.port}`;
          resolve(baseUrl);
        });
      });
    },
    close({ graceMs = options.shutdownGraceMs ?? 10_000 } = {}) {
      closing ??= (async () => {
        draining = true;
        const stopped = server
          ? new Promise<void>((resolve) => {
              server!.close(() => resolve());
              server!.closeIdleConnections();
            })
          : Promise.resolve();
        const pending = [...active];
        if (pending.length > 0) {
          log(`[${settings.name}] shutting down: waiting up to ${graceMs} ms for ${pending.length} request(s)`);
          let timer: NodeJS.Timeout | undefined;
          const deadline = new Promise<"timeout">((resolve) => {
            timer = setTimeout(() => resolve("timeout"), graceMs);
          });
          const outcome = await Promise.race([Promise.allSettled(pending).then(() => "done" as const), deadline]);
          clearTimeout(timer);
          if (outcome === "timeout") {
            log(`[${settings.name}] shutdown grace period over: aborting ${active.size} request(s)`);
            abortEverything("server shutting down");
            await Promise.allSettled([...active]);
          }
        }
        abortEverything("server shut down");
        server?.closeAllConnections();
        await stopped;
        await connecting;
        await runtime?.close();
        await prepared.close();
        await closeMemory();
        log(`[${settings.name}] shut down`);
      })();
      return closing;
    },
  };
  return agentServer;
}

/**
 * Creates the server and listens on `AGENT_PORT` (or `options.port`). With `handleSignals`,
 * SIGTERM and SIGINT shut it down gracefully and then exit the process.
 */
export async function startAgentServer(options: AgentServerOptions & { handleSignals?: boolean } = {}): Promise<AgentServer> {
  const server = await createAgentServer(options);
  await server.listen();
  if (options.handleSignals) {
    const stop = (signal: NodeJS.Signals) => {
      (options.log ?? ((line: string) => process.stderr.write(`${line}\n`)))(`[${server.settings.name}] ${signal} received: shutting down`);
      server.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  }
  return server;
}
