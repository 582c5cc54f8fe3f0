/**
 * The runs of a server: one at a time per session, each tracked so shutdown can wait for it and
 * abort what is left. A run resolves only once its events are stored (the acknowledgment).
 */
import type { AgentRuntime } from "../config/build-agent.js";
import type { AgentSettings } from "../config/settings.js";
import { Agent } from "../loop/agent.js";
import { type ApprovalDecision, ResumeError, type RunCheckpoint } from "../loop/checkpoint.js";
import type { LoopEvent, RunResult } from "../loop/events.js";
import type { Run } from "../loop/run.js";
import type { Message } from "../messages.js";
import type { JsonSchema } from "../model/model.js";
import { clientResultDecisions, clientTools } from "../ui/client-tools.js";
import { type ClientToolDeclaration, type ClientToolOutput, UiRequestError } from "../ui/requests.js";
import type { RequestController } from "./chat-stream.js";
import { badRequest, HttpError, notFound } from "./http-errors.js";
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
  /** The request's `response_format` schema: structured output for this run. */
  output?: JsonSchema;
  /** Tools the client declared and runs itself: offered to the model beside the agent's own. */
  clientTools?: ClientToolDeclaration[];
}

/** `POST /v1/approvals`: decisions for the calls a session's last run stopped at. */
export interface ResumeRequest {
  sessionId: string;
  decisions: Record<string, ApprovalDecision>;
  controller: RequestController;
  onEvent?: (event: LoopEvent) => void;
  /** Called once the decisions were accepted, right before the run goes on (a stream may start). */
  onStart?: () => void;
  /** The client tools of the run (declared again by the client) and the results it supplies for their calls. */
  clientTools?: ClientToolDeclaration[];
  toolOutputs?: Record<string, ClientToolOutput>;
  /**
   * Take only the results of pending client calls and ignore the others (the AI SDK route: the
   * continued message carries the outputs of every call it shows); else any other result is refused.
   */
  onlyPendingOutputs?: boolean;
}

/**
 * The agent with the client's tools beside its own (a client tool call stops the run at the
 * approvals checkpoint; its supplied result is its decision): the same agent otherwise, so a
 * checkpoint of one resumes on the other.
 */
function withClientTools(agent: Agent, declarations: ClientToolDeclaration[] | undefined, outputs?: Record<string, ClientToolOutput>): Agent {
  if (!declarations || declarations.length === 0) return agent;
  return new Agent({ ...agent.config, tools: [...(agent.config.tools ?? []), ...clientTools(declarations, outputs)] });
}

export class ServerRuns {
  /** The run going on in each session (one at a time: the session queue), for steering and abort. */
  readonly activeRuns = new Map<string, Run>();
  /** Checkpoints of interrupted runs by session, when memory is off (with memory, the session's log holds them). */
  private readonly checkpoints = new Map<string, RunCheckpoint>();
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
    // A server cannot wait for a person: a call that needs approval stops the run (its checkpoint in the session).
    const start = (agent: Agent) => ({
      run: withClientTools(agent, request.clientTools).run(request.input, { sessionId: request.sessionId, newSession: request.newSession, history: request.history, onEvent: request.onEvent, onApproval: "interrupt", output: request.output }),
    });
    return this.acknowledged(request, start);
  }

  /**
   * The run in its session's turn; resolves once the run's events are stored (the acknowledgment),
   * while the session's turn lasts until its lock is given back too.
   */
  private acknowledged(request: RunRequest | ResumeRequest, start: (agent: Agent) => { run: Run } | Promise<{ run: Run }>): Promise<RunResult> {
    return new Promise((resolve, reject) => {
      this.sessions.run(request.sessionId, () => this.runInSession(request, start, resolve)).then(resolve, reject);
    });
  }

  /**
   * Resumes the run a session stopped at for approvals (on any replica sharing the store). Rejects
   * with a 404 when nothing waits, a 409 when the checkpoint was decided already, a 400 for
   * decisions the checkpoint refuses (an unknown call, other arguments).
   */
  resume(request: ResumeRequest): Promise<RunResult> {
    // The run is wrapped: a Run is awaitable, and a promise would resolve it to its result.
    const start = async (agent: Agent): Promise<{ run: Run }> => {
      const checkpoint = await this.pendingCheckpoint(request.sessionId);
      let decisions = request.decisions;
      let outputs = request.toolOutputs;
      const names = new Set((request.clientTools ?? []).map((tool) => tool.name));
      if (outputs && request.onlyPendingOutputs) {
        const waiting = new Set(checkpoint.pending.filter((entry) => names.has(entry.toolName)).map((entry) => entry.toolCallId));
        outputs = Object.fromEntries(Object.entries(outputs).filter(([callId]) => waiting.has(callId)));
      }
      if (outputs && Object.keys(outputs).length > 0) {
        try {
          decisions = { ...decisions, ...clientResultDecisions(outputs, checkpoint.pending, names) };
        } catch (error) {
          if (error instanceof UiRequestError) throw badRequest(error.message, error.param, error.code);
          throw error;
        }
      }
      let run: Run;
      try {
        run = withClientTools(agent, request.clientTools, outputs).resume(checkpoint, { decisions, sessionId: request.sessionId, onEvent: request.onEvent, onApproval: "interrupt" });
      } catch (error) {
        if (!(error instanceof ResumeError)) throw error;
        const already = /already resumed/.test(error.message);
        throw new HttpError(already ? 409 : 400, error.message, "invalid_request_error", already ? "approval_already_decided" : "invalid_decisions");
      }
      this.checkpoints.delete(request.sessionId);
      request.onStart?.();
      return { run };
    };
    return this.acknowledged(request, start);
  }

  /** The checkpoint the session's last run stopped at, not resumed yet; a 404/409 HttpError otherwise. */
  private async pendingCheckpoint(sessionId: string): Promise<RunCheckpoint> {
    const store = this.memory.handle ? this.memory.store : undefined;
    if (!store) {
      const checkpoint = this.checkpoints.get(sessionId);
      if (!checkpoint) throw notFound(`no approval is pending in session "${sessionId}"`, "no_pending_approval", "session_id");
      return checkpoint;
    }
    const events = await store.events(sessionId, { types: ["approval_requested", "approval_decided"] });
    const requested = events.findLast((event) => (event.content as { checkpoint?: unknown } | null)?.checkpoint !== undefined);
    if (!requested) throw notFound(`no approval is pending in session "${sessionId}"`, "no_pending_approval", "session_id");
    const checkpoint = (requested.content as { checkpoint: RunCheckpoint }).checkpoint;
    const decided = events.some((event) => event.event_type === "approval_decided" && (event.content as { checkpoint_id?: unknown } | null)?.checkpoint_id === checkpoint.id);
    if (decided) throw new HttpError(409, `the approvals of checkpoint ${checkpoint.id} in session "${sessionId}" were decided already`, "invalid_request_error", "approval_already_decided");
    return checkpoint;
  }

  /**
   * One run, the session to itself (in this process, and across replicas on PostgreSQL).
   * `acknowledge` gets the result once the run's events are stored, before the lock is given back.
   */
  private async runInSession(
    request: RunRequest | ResumeRequest,
    start: (agent: Agent) => { run: Run } | Promise<{ run: Run }>,
    acknowledge: (result: RunResult) => void,
  ): Promise<RunResult> {
    const agent = this.agent();
    const built = agent instanceof Promise ? await agent : agent;
    const { controller } = request;
    const { memory, settings, log, shutdown, running } = this;
    // Shutdown aborts the controllers in `running`: Node 20 never prunes AbortSignal.any's
    // dependants, and a listener per request on the shutdown signal costs as much.
    if (shutdown.signal.aborted) controller.abort(shutdown.signal.reason);
    running.add(controller);
    let release: (() => Promise<void>) | undefined;
    let releasing: Promise<void> | undefined;
    // Replicas sharing a PostgreSQL store, or a CLI run on the SQLite file, take turns on a session
    // too (the queue covers this process). A session id this server just made is known to nobody
    // before its answer starts: its lock is taken alongside the run's first write to the store (the
    // same group commit on SQLite; a run's start waits for its next events, see
    // `startWriteDelayMs`), and held before the answer is acknowledged, instead of before the run:
    // a burst of new chats starts its models with no store work. It is held by nobody, so its
    // attempt never waits: no abort signal for it (an AbortController per request shows in the
    // server's CPU profiles). When that first write is the whole run (a short answer held to its
    // `run_ended`), no lock is taken at all: nothing of the run is in the store before it, and the
    // lock would be given back at once; a failure of that write still reaches the client (`settled`).
    const fresh = "newSession" in request && request.newSession === true;
    let locking: Promise<() => Promise<void>> | undefined;
    let cancelFreshLock: (() => void) | undefined;
    const { handle, store } = memory;
    if (handle && store.lockSession) {
      const lock = (signal?: AbortSignal) => {
        locking = store.lockSession!(request.sessionId, signal);
        locking.catch(() => {});
      };
      if (fresh)
        cancelFreshLock = handle.beforeNextWrite(request.sessionId, (wholeRuns) => {
          if (!wholeRuns) lock();
        });
      else lock(controller.signal);
    }
    try {
      if (locking && !fresh) {
        release = await locking;
        locking = undefined;
        // Granted just as the client left (the store's call-off lost the race): no run for a
        // request nobody waits for; the lock goes back below.
        controller.signal.throwIfAborted();
      }
      if ("delegated" in request && request.delegated && memory.handle) {
        await memory.store
          .append(request.sessionId, [{ event_type: "task_delegation_received", content: request.input, metadata: { source: "task-delegation" } }])
          .catch((error: unknown) => log(`[${settings.name}] could not record task_delegation_received in ${request.sessionId}: ${(error as Error).message}`));
      }
      const { run } = await start(built.agent);
      this.activeRuns.set(request.sessionId, run);
      // The run's own controller is the request's only one: a disconnect or the shutdown aborts the run.
      controller.attach(run);
      const result = await run;
      if (result.checkpoint && !memory.handle) this.checkpoints.set(request.sessionId, result.checkpoint);
      const reason = result.state === "ABORTED" && controller.byClient ? `${result.reason} (client disconnected)` : result.reason;
      log(`[${settings.name}] run ${result.runId} session ${request.sessionId} ${result.state}: ${reason}`);
      // A failed lock of a new session failed with the store (its writes report it) or with the request's abort.
      if (locking) release = await locking.catch(() => undefined);
      locking = undefined;
      // The lock goes back now: the store gives it back once the run's appends, all made by now,
      // are written (in the same group commit on SQLite), never before.
      releasing = release?.();
      release = undefined;
      // The answer is acknowledged only once the run's events (to run_ended) are stored: await its pending writes.
      const writes = memory.handle?.settled(request.sessionId);
      if (writes) await writes.catch((error: unknown) => this.writeFailed(result.runId, request.sessionId, error));
      if (this.storeFailure !== undefined && memory.handle) {
        this.storeFailure = undefined;
        log(`[${settings.name}] memory store ${memory.store.kind} writes again`);
      }
      acknowledge(result);
      return result;
    } finally {
      cancelFreshLock?.();
      running.delete(controller);
      this.activeRuns.delete(request.sessionId);
      // The session's next run here waits until the lock is back.
      if (locking && !release) release = await locking.catch(() => undefined);
      releasing ??= release?.();
      await releasing?.catch((error: unknown) => log(`[${settings.name}] could not give back the lock of session ${request.sessionId}: ${(error as Error).message}`));
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
