import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
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
        : await serverMemoryFromEnv(settings.memoryEnv);
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
    void work.finally(() => active.delete(work)).catch(() => {});
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
    delegated?: boolean;
    signal: AbortSignal;
    onEvent?: (event: LoopEvent) => void;
  }

  /** Runs the agent for one input, after earlier requests on the same session finished. */
  function runAgent(request: RunRequest): Promise<RunResult> {
    return sessions.run(request.sessionId, async () => {
      const built = await agentOrFail();
      // One controller following both signals, unlinked afterwards: AbortSignal.any on Node 20 would
      // leave an entry per request on the process-long shutdown signal.
      const controller = new AbortController();
      const unlinkRequest = onAbort(request.signal, () => controller.abort(request.signal.reason));
      const unlinkShutdown = onAbort(shutdown.signal, () => controller.abort(shutdown.signal.reason));
      const signal = controller.signal;
      let release: (() => Promise<void>) | undefined;
      try {
        // Replicas sharing a PostgreSQL store take turns on a session too (the queue covers this process).
        release = memory.handle ? await memory.store.lockSession?.(request.sessionId, signal) : undefined;
        return await runInSession(built, request, signal);
      } finally {
        unlinkRequest();
        unlinkShutdown();
        await release?.();
      }
    });
  }

  /** One run, the session to itself. */
  async function runInSession(built: AgentRuntime, request: RunRequest, signal: AbortSignal): Promise<RunResult> {
    if (request.delegated && memory.handle) {
      await memory.store
        .append(request.sessionId, [{ event_type: "task_delegation_received", content: request.input, metadata: { source: "task-delegation" } }])
        .catch((error: unknown) => log(`[${settings.name}] could not record task_delegation_received in ${request.sessionId}: ${(error as Error).message}`));
    }
    const run = built.agent.run(request.input, { sessionId: request.sessionId, signal, history: request.history });
    for await (const event of run) request.onEvent?.(event);
    const result = await run;
    const reason = result.state === "ABORTED" && request.signal.aborted ? `${result.reason} (client disconnected)` : result.reason;
    log(`[${settings.name}] run ${result.runId} session ${request.sessionId} ${result.state}: ${reason}`);
    return result;
  }

  const app = new Hono();

  app.onError((error, c) => {
    if (error instanceof HttpError) return errorResponse(c, error);
    if (AgentLoopError.isInstance(error)) {
      // A store or dependency failure (requests are validated before): the service is unavailable.
      log(`[${settings.name}] ${c.req.method} ${c.req.path} failed: ${error.kind}: ${error.message}`);
      return errorResponse(c, new HttpError(503, error.message, "server_error", error.kind));
    }
    log(`[${settings.name}] unexpected error on ${c.req.method} ${c.req.path}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return errorResponse(c, new HttpError(500, "internal error", "server_error", "internal_error"));
  });
  app.notFound((c) => errorResponse(c, notFound(`no route ${c.req.method} ${c.req.path}`, "unknown_route")));

  app.use("*", async (c, next) => {
    if (draining && c.req.path !== "/health") {
      c.header("connection", "close");
      return errorResponse(c, new HttpError(503, "the server is shutting down", "server_error", "shutting_down"));
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
    if (settings.apiKey === undefined) return next();
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!match || !constantTimeEqual(match[1], settings.apiKey)) {
      c.header("www-authenticate", 'Bearer realm="agentloop"');
      return errorResponse(c, new HttpError(401, "a valid bearer token is required (Authorization: Bearer <AGENT_API_KEY>)", "authentication_error", "invalid_api_key"));
    }
    return next();
  });

  app.use(
    "*",
    bodyLimit({
      maxSize: bodyLimitBytes,
      onError: (c) => errorResponse(c, new HttpError(413, `the request body is larger than ${bodyLimitBytes} bytes`, "invalid_request_error", "request_too_large")),
    }),
  );

  const readJson = async (c: Context): Promise<unknown> => {
    const text = await c.req.text();
    if (text.trim() === "") throw badRequest("the request body is empty; send a JSON object", null, "invalid_json");
    try {
      return JSON.parse(text);
    } catch (error) {
      throw badRequest(`the request body is not valid JSON: ${(error as Error).message}`, null, "invalid_json");
    }
  };

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
    if (sessionParam !== undefined && sessionParam !== "") {
      sessionId = validSessionId(sessionParam, "session_id");
      if (!(await memory.store.getSession(sessionId))) throw notFound(`session "${sessionId}" not found`, "session_not_found", "session_id");
    }
    const stored = sessionId ? await memory.store.events(sessionId, { limit }) : await memory.store.latestEvents({ limit });
    const events = stored.map(eventView);
    return c.json({ agent: settings.name, events, total: events.length });
  });

  app.post("/v1/chat/completions", async (c) => {
    const request = parseChatRequest(await readJson(c), c.req.header("x-session-id"));
    const sessionId = request.sessionId ?? `session_${randomUUID()}`;
    // With a session, its log is the history; a stateless OpenAI client sends the history itself.
    const history = request.sessionId === undefined && request.history.length > 0 ? request.history : undefined;
    const model = request.model ?? settings.name;
    c.header("x-session-id", sessionId);
    if (request.stream) return streamCompletion(c, request, sessionId, history, model);
    const disconnect = c.req.raw.signal;
    const result = await track(runAgent({ input: request.input, sessionId, history, delegated: request.delegated, signal: disconnect }));
    if (result.state === "FAILED" || result.state === "ABORTED") throw httpErrorOfRun(result.error ?? new AgentLoopError("aborted", result.reason));
    const text = result.text !== "" ? result.text : result.reason;
    return c.json({
      id: `chatcmpl-${result.runId}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model,
      session_id: sessionId,
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: result.state === "COMPLETED" ? "stop" : "length" }],
      usage: { prompt_tokens: result.usage.inputTokens, completion_tokens: result.usage.outputTokens, total_tokens: result.usage.totalTokens },
    });
  });

  function streamCompletion(c: Context, request: ChatRequest, sessionId: string, history: Message[] | undefined, model: string): Response {
    const id = `chatcmpl-${randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    const encoder = new TextEncoder();
    const disconnected = new AbortController();
    c.req.raw.signal.addEventListener("abort", () => disconnected.abort("client disconnected"), { once: true });
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
      encoder.encode(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        let open = true;
        const send = (bytes: Uint8Array) => {
          if (!open) return;
          try {
            controller.enqueue(bytes);
          } catch {
            open = false;
          }
        };
        send(chunk({ role: "assistant", content: "" }));
        const work = runAgent({
          input: request.input,
          sessionId,
          history,
          delegated: request.delegated,
          signal: disconnected.signal,
          onEvent: (event) => {
            if (event.type === "progress") {
              const block = { type: "progress", step: event.step, max_steps: event.max_steps, action: event.action, target: event.target };
              send(chunk({ content: JSON.stringify(block) }));
            } else if (event.type === "text-delta" && event.delta !== "") {
              send(chunk({ content: event.delta }));
            }
          },
        })
          .then((result) => {
            if (result.state === "FAILED" || result.state === "ABORTED") {
              // The answer did not finish: an error event instead of a finish chunk.
              const failure = httpErrorOfRun(result.error ?? new AgentLoopError("aborted", result.reason));
              send(encoder.encode(`data: ${JSON.stringify(failure.body())}\n\n`));
            } else {
              // A limit ended the run: say so when the model gave no answer text.
              if (result.state !== "COMPLETED" && result.text === "") send(chunk({ content: result.reason }));
              send(chunk({}, result.state === "COMPLETED" ? "stop" : "length"));
              if (request.includeUsage) {
                const usage = { prompt_tokens: result.usage.inputTokens, completion_tokens: result.usage.outputTokens, total_tokens: result.usage.totalTokens };
                send(encoder.encode(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage })}\n\n`));
              }
            }
            send(encoder.encode("data: [DONE]\n\n"));
          })
          .catch((error: unknown) => {
            const failure = error instanceof HttpError ? error : httpErrorOfRun(error);
            send(encoder.encode(`data: ${JSON.stringify(failure.body())}\n\n`));
            send(encoder.encode("data: [DONE]\n\n"));
          })
          .finally(() => {
            if (open) {
              open = false;
              try {
                controller.close();
              } catch {
                // already closed by a cancel
              }
            }
          });
        track(work);
      },
      cancel() {
        disconnected.abort("client disconnected");
      },
    });
    return new Response(stream, {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive", "x-session-id": sessionId },
    });
  }

  const a2a = createA2AHandler(card, ({ input, sessionId, signal, onEvent }) => track(runAgent({ input, sessionId, signal, onEvent })));
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
      const created = createAdaptorServer({ fetch: app.fetch, hostname: host }) as Server;
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
            shutdown.abort("server shutting down");
            await Promise.allSettled([...active]);
          }
        }
        shutdown.abort("server shut down");
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
