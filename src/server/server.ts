import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { Hono } from "hono";
import { type AgentRuntime, type BuildAgentOptions, type PreparedAgentRuntime, prepareAgentRuntime } from "../config/build-agent.js";
import { type AgentFile, type AgentSettings, resolveAgentSettings } from "../config/settings.js";
import { AgentLoopError } from "../errors.js";
import { DisabledMemoryStore, type MemoryStore } from "../memory/index.js";
import { buildAgentCard, buildKaosAgentCard } from "./agent-card.js";
import { errorResponse, type ReadyStatus, requestErrorMapper, type ServerContext, unixSeconds, VERSION } from "./context.js";
import { HttpError, notFound } from "./http-errors.js";
import { type ServerMemory, serverMemoryFromEnv, serverMemoryOf } from "./memory.js";
import { a2aRoutes } from "./routes/a2a.js";
import { agentCardRoutes } from "./routes/agent-card.js";
import { approvalRoutes } from "./routes/approvals.js";
import { CHAT_PATH, chatCompletionRoutes } from "./routes/chat-completions.js";
import { isPostTo } from "./routes/protocol-post.js";
import { authGuard, bodyLimitGuard, drainingGuard, readBodyFirst } from "./routes/guards.js";
import { healthRoutes } from "./routes/health.js";
import { memoryRoutes } from "./routes/memory.js";
import { runRoutes } from "./routes/runs.js";
import { agentInfoRoutes } from "./routes/agent-info.js";
import { sessionRoutes } from "./routes/sessions.js";
import { studioRoutes } from "./routes/studio.js";
import { AG_UI_PATH, agUiRoutes } from "./routes/ag-ui.js";
import { UI_CHAT_PATH, uiChatRoutes } from "./routes/ui-chat.js";
import { DurableRuns } from "./durable-runs.js";
import { ServerRuns } from "./runs.js";

export type { ReadyStatus } from "./context.js";

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
   * rest, close MCP connections and flush the memory store. Called again during the grace period
   * with `graceMs: 0`, it aborts the rest now (each aborted run still records its `run_ended`).
   */
  close(options?: { graceMs?: number }): Promise<void>;
}

/**
 * Creates an agent server from an agent file and the KAOS variables. Bad configuration rejects
 * with an `AgentLoopError` (kind `configuration`) naming the setting. Call `listen()` to serve.
 * This file only wires: the routes live in ./routes/, the runs in ./runs.ts.
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
  let durable: DurableRuns | undefined;
  try {
    // Durable mode: checked now (it needs the PostgreSQL memory), launched once the agent is built.
    if (settings.durable) durable = DurableRuns.of(settings, memory, env, log, (failure) => (runs.storeFailure = failure));
    prepared = await prepareAgentRuntime(settings, { ...options.build, env, memory: memory.handle, readyTimeoutMs: options.readyTimeoutMs });
  } catch (error) {
    await closeMemory();
    throw error;
  }
  let draining = false;
  /** Where the server listens (`url`, what `listen` resolves with). */
  let baseUrl: string | undefined;
  /** What the cards advertise: the public URL when one is set (behind a proxy), else the listening address. */
  const publicUrl = (options.publicUrl ?? settings.publicUrl)?.replace(/\/+$/, "");
  /** The readiness until the agent is built: starting, then failed if it could not be. */
  let readyStatus: ReadyStatus = { status: "starting", name: settings.name, timestamp: unixSeconds() };
  let runtime: AgentRuntime | undefined;
  let runtimeFailure: AgentLoopError | undefined;
  async function agentOrFail(): Promise<AgentRuntime> {
    const built = runtime ?? (await connecting);
    if (!built) throw new HttpError(503, `the agent is not available: ${runtimeFailure?.message ?? "not built"}`, "server_error", "agent_unavailable");
    return built;
  }
  const runs = new ServerRuns(settings, memory, log, () => runtime ?? agentOrFail());
  const connecting = prepared
    .connect(runs.shutdown.signal)
    // Durable mode: DBOS launches once the agent is built (recovering this executor's unfinished runs).
    .then((built) => (durable ? durable.launch(built).then(() => built) : built))
    .then(
      (built) => {
        // From now on the readiness is read live from the runtime (currentReadyStatus).
        runtime = built;
        for (const missing of built.unavailable) log(`[${settings.name}] degraded: ${missing.kind} "${missing.name}" unavailable: ${missing.reason}`);
        return built;
      },
      (error: unknown) => {
        runtimeFailure = AgentLoopError.from(error, "configuration");
        // A DBOS launch that failed is told by the durable runs themselves (durable_unavailable).
        durable?.buildFailed(runtimeFailure);
        readyStatus = { status: "failed", name: settings.name, timestamp: unixSeconds(), error: runtimeFailure.message };
        log(`[${settings.name}] agent could not be built: ${runtimeFailure.message}`);
        return undefined;
      },
    );

  /** The readiness, degraded while the memory store's last writes failed. */
  const currentReadyStatus = (): ReadyStatus => {
    // Live once the agent is built: an MCP server that goes down (or comes back) shows at once.
    const unavailable = runtime?.unavailable;
    const base: ReadyStatus = unavailable
      ? { status: unavailable.length === 0 ? "ready" : "degraded", name: settings.name, timestamp: unixSeconds(), ...(unavailable.length > 0 ? { unavailable } : {}) }
      : readyStatus;
    if (runs.storeFailure === undefined || base.status === "failed" || base.status === "starting") return base;
    const down = { kind: "memory" as const, name: memory.store.kind, reason: `a write failed: ${runs.storeFailure}` };
    return { ...base, status: "degraded", unavailable: [...(base.unavailable ?? []), down] };
  };

  const context: ServerContext = {
    settings,
    log,
    memory,
    runs,
    durable,
    bodyLimitBytes: options.bodyLimitBytes ?? 1024 * 1024,
    get draining() {
      return draining;
    },
    get readyStatus() {
      return currentReadyStatus();
    },
    connecting,
    card: () =>
      buildAgentCard({ name: settings.name, description: settings.description, baseUrl: publicUrl ?? baseUrl ?? `http://localhost:${settings.port}`, version: VERSION, tools: runtime?.tools ?? [] }),
    kaosCard: () =>
      buildKaosAgentCard({
        name: settings.name,
        description: settings.description,
        baseUrl: publicUrl ?? baseUrl ?? `http://localhost:${settings.port}`,
        version: VERSION,
        tools: runtime?.tools ?? [],
        delegates: settings.subAgents.length > 0,
      }),
    toolNames: async () => ((await connecting)?.tools ?? []).map((tool) => tool.name),
    httpErrorOfRequest: requestErrorMapper(settings, log),
  };

  // Order matters: draining first, then the unauthenticated probes, then auth and the body limit.
  const app = new Hono();
  app.onError((error, c) => errorResponse(c, context.httpErrorOfRequest(error, c.req.method, c.req.path)));
  app.notFound((c) => errorResponse(c, notFound(`no route ${c.req.method} ${c.req.path}`, "unknown_route")));
  app.use("*", drainingGuard(context));
  app.route("/", healthRoutes(context));
  // The studio's page and assets hold no data (the page asks the API with the key a person types).
  app.route("/", studioRoutes(context));
  app.use("*", authGuard(context));
  app.use("*", bodyLimitGuard(context));
  const chat = chatCompletionRoutes(context);
  const uiChat = uiChatRoutes(context);
  const agUi = agUiRoutes(context);
  const guarded = [agentCardRoutes(context), chat.app, memoryRoutes(context), a2aRoutes(context), approvalRoutes(context), runRoutes(context), sessionRoutes(context), agentInfoRoutes(context), uiChat.app, agUi.app];
  for (const routes of guarded) app.route("/", routes);

  let server: Server | undefined;
  let closing: Promise<void> | undefined;
  /** Ends the shutdown's grace period now (set while it runs). */
  let endGrace = () => {};
  const fetchHandler = (request: Request) => Promise.resolve(app.fetch(request));

  const agentServer: AgentServer = {
    settings,
    fetch: fetchHandler,
    get url() {
      return baseUrl;
    },
    ready: async () => {
      await connecting;
      return currentReadyStatus();
    },
    listen(port = options.port ?? settings.port, host = options.host ?? "0.0.0.0") {
      if (server) return Promise.reject(new Error("the server is already listening"));
      const honoListener = getRequestListener(app.fetch, { hostname: host });
      // The hot paths straight on node:http (the chat routes); everything else through Hono.
      const hotPaths = [
        { path: CHAT_PATH, handle: chat.handleNode },
        { path: UI_CHAT_PATH, handle: uiChat.handleNode },
        { path: AG_UI_PATH, handle: agUi.handleNode },
      ];
      const created = createServer((incoming, outgoing) => {
        const hot = incoming.method === "POST" ? hotPaths.find(({ path }) => isPostTo(incoming, path)) : undefined;
        if (hot) {
          hot.handle(incoming, outgoing).catch(() => outgoing.destroy());
        } else if (incoming.method === "GET" || incoming.method === "HEAD") {
          void honoListener(incoming, outgoing);
        } else {
          void readBodyFirst(context, incoming, outgoing).then(async (read) => {
            if (read) await honoListener(incoming, outgoing);
          });
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
      // Called again while draining: a shorter grace ends the wait now (a second SIGTERM).
      if (closing) {
        if (graceMs === 0) endGrace();
        return closing;
      }
      closing = (async () => {
        draining = true;
        const stopped = server
          ? new Promise<void>((resolve) => {
              server!.close(() => resolve());
              server!.closeIdleConnections();
            })
          : Promise.resolve();
        const { active } = runs;
        const pending = [...active];
        if (pending.length > 0) {
          log(`[${settings.name}] shutting down: waiting up to ${graceMs} ms for ${pending.length} request(s)`);
          let timer: NodeJS.Timeout | undefined;
          const deadline = new Promise<"timeout">((resolve) => {
            timer = setTimeout(() => resolve("timeout"), graceMs);
            endGrace = () => resolve("timeout");
          });
          const outcome = await Promise.race([Promise.allSettled(pending).then(() => "done" as const), deadline]);
          clearTimeout(timer);
          if (outcome === "timeout") {
            log(`[${settings.name}] shutdown grace period over: aborting ${active.size} request(s)`);
            runs.abortEverything("server shutting down");
            await Promise.allSettled([...active]);
          }
        }
        runs.abortEverything("server shut down");
        server?.closeAllConnections();
        await stopped;
        await connecting;
        // Each part is closed even when one before it failed (the memory is flushed whatever DBOS
        // did); the shutdown then rejects naming what failed.
        const failures: string[] = [];
        const closePart = async (what: string, part: () => Promise<void> | undefined) => {
          try {
            await part();
          } catch (error) {
            failures.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
          }
        };
        // Durable runs still going stay in the database: this executor (or a recovery) finishes them.
        await closePart("the durable runs' DBOS shutdown", () => durable?.close());
        await closePart("the MCP connections", async () => {
          await runtime?.close();
          await prepared.close();
        });
        await closePart(`the memory store (${memory.store.kind})`, closeMemory);
        if (failures.length > 0) throw new Error(`shutdown failed: ${failures.join("; ")}`);
        log(`[${settings.name}] shut down`);
      })();
      return closing;
    },
  };
  return agentServer;
}

/** The exit code after a signal cut the drain short: 128 + the signal's number, as shells report it. */
const signalExitCode = (signal: NodeJS.Signals) => (signal === "SIGINT" ? 130 : 143);

/**
 * Creates the server and listens on `AGENT_PORT` (or `options.port`). With `handleSignals`,
 * SIGTERM and SIGINT shut it down gracefully, run `beforeExit` (the CLI flushes its traces there)
 * and then exit the process (0). A second signal during the drain aborts the runs still going (each
 * records its `run_ended` ABORTED and its stream gets an error chunk and `[DONE]`), then exits 143
 * (SIGTERM) or 130 (SIGINT); a third exits at once.
 */
export async function startAgentServer(
  options: AgentServerOptions & { handleSignals?: boolean; beforeExit?: () => Promise<void> } = {},
): Promise<AgentServer> {
  const server = await createAgentServer(options);
  try {
    await server.listen();
  } catch (error) {
    // Nothing is served: what the server opened (its memory store, MCP connections, DBOS) is closed, not left to keep the process alive.
    await server.close();
    throw error;
  }
  if (options.handleSignals) {
    const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    let received = 0;
    /** Set by a second signal: the drain was cut short, the exit is not a clean one. */
    let cut: NodeJS.Signals | undefined;
    const stop = (signal: NodeJS.Signals) => {
      received++;
      if (received === 1) {
        log(`[${server.settings.name}] ${signal} received: shutting down`);
        server.close().then(
          async () => {
            await options.beforeExit?.().catch(() => undefined);
            process.exit(cut ? signalExitCode(cut) : 0);
          },
          (error: unknown) => {
            log(`[${server.settings.name}] ${error instanceof Error ? error.message : String(error)}`);
            process.exit(1);
          },
        );
      } else if (received === 2) {
        log(`[${server.settings.name}] ${signal} received again: aborting the runs still going`);
        cut = signal;
        void server.close({ graceMs: 0 });
      } else {
        log(`[${server.settings.name}] ${signal} received a third time: exiting now`);
        process.exit(signalExitCode(signal));
      }
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  }
  return server;
}
