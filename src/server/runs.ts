/**
 * The runs of a server: one at a time per session, each tracked so shutdown can wait for it and
 * abort what is left. A run resolves only once its events are stored (the acknowledgment).
 */
import type { AgentRuntime } from "../config/build-agent.js";
import type { AgentSettings } from "../config/settings.js";
import type { LoopEvent, RunResult } from "../loop/events.js";
import type { Message } from "../messages.js";
import type { RequestController } from "./chat-stream.js";
import { HttpError } from "./http-errors.js";
import type { ServerMemory } from "./memory.js";
import { SessionQueue } from "./session-queue.js";

export interface RunRequest {
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

export class ServerRuns {
  private readonly sessions = new SessionQueue();
  /** Aborted at the end of the shutdown grace period: every run still going stops. */
  readonly shutdown = new AbortController();
  /** The controllers of the runs going on, aborted with `shutdown` (no listener per request on it). */
  private readonly running = new Set<RequestController>();
  /** Requests going on, for shutdown to wait for. */
  readonly active = new Set<Promise<unknown>>();
  /** Why the store's last writes failed (the server reports itself degraded), until a run's writes succeed again. */
  storeFailure: string | undefined;

  constructor(
    private readonly settings: AgentSettings,
    private readonly memory: ServerMemory,
    private readonly log: (line: string) => void,
    /** The built agent, or a promise of it (rejecting with the 503 to answer when it cannot be built). */
    private readonly agent: () => AgentRuntime | Promise<AgentRuntime>,
  ) {}

  abortEverything(reason: string): void {
    this.shutdown.abort(reason);
    for (const controller of this.running) controller.abort(reason);
  }

  /** Tracks a request so shutdown can wait for it. */
  track<T>(work: Promise<T>): Promise<T> {
    const active = this.active;
    active.add(work);
    const settled = () => void active.delete(work);
    void work.then(settled, settled);
    return work;
  }

  /** Runs the agent for one input, after earlier requests on the same session finished. */
  run(request: RunRequest): Promise<RunResult> {
    return this.sessions.run(request.sessionId, () => this.runInSession(request));
  }

  /** One run, the session to itself (in this process, and across replicas on PostgreSQL). */
  private async runInSession(request: RunRequest): Promise<RunResult> {
    const agent = this.agent();
    const built = agent instanceof Promise ? await agent : agent;
    const { controller } = request;
    const { memory, settings, log, shutdown, running } = this;
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
      // The answer is acknowledged only once the run's events (to run_ended) are stored: await its pending writes.
      const writes = memory.handle?.settled(request.sessionId);
      if (writes) await writes.catch((error: unknown) => this.writeFailed(result.runId, request.sessionId, error));
      if (this.storeFailure !== undefined && memory.handle) {
        this.storeFailure = undefined;
        log(`[${settings.name}] memory store ${memory.store.kind} writes again`);
      }
      return result;
    } finally {
      running.delete(controller);
      if (release) await release();
    }
  }

  /** A run's events could not all be stored: logged, the server degraded, the client told (a 503 / an error chunk). */
  private writeFailed(runId: string, sessionId: string, error: unknown): never {
    const message = error instanceof Error ? error.message : String(error);
    this.storeFailure = `${runId} in ${sessionId}: ${message}`;
    this.log(`[${this.settings.name}] run ${runId} session ${sessionId}: its events could not be stored: ${message}`);
    throw new HttpError(503, `the answer could not be stored (memory store ${this.memory.store.kind}): ${message}`, "server_error", "memory_write_failed");
  }
}
