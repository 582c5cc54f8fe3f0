/**
 * The server's durable mode (`DURABLE=true`): every chat request is a durable run (agentloop/durable,
 * DBOS on the same PostgreSQL as the memory) on one DBOS queue partitioned by session, one run at a
 * time per session across every replica. A run keeps its SSE chunks in a journal (the same encoder as
 * the plain server, so the same bytes), which any replica streams: the request's own stream, and
 * `GET /v1/runs/{run_id}/events?after=<seq>` for a client that lost its connection.
 * `@dbos-inc/dbos-sdk` is loaded only here, and only in durable mode.
 */
import type { AgentRuntime } from "../config/build-agent.js";
import type { AgentSettings } from "../config/settings.js";
import type { ApprovalWait, DurableAgent, DurableRunInfo, DurableRunResult, JournalEncoder, JournalEntry } from "../durable/index.js";
import { AgentLoopError } from "../errors.js";
import type { RunResult } from "../loop/events.js";
import type { Message } from "../messages.js";
import type { JsonSchema } from "../model/model.js";
import { ChatStreamEncoder, type ChatStreamSpec } from "./chat-encoder.js";
import type { ApprovalDecision, RunCheckpoint } from "../loop/checkpoint.js";
import { badRequest, HttpError, notFound } from "./http-errors.js";
import type { ServerMemory } from "./memory.js";

/** The DBOS queue of the chat runs (partitioned by session id). */
export const CHAT_QUEUE = "agentloop-chat";

export interface DurableChat {
  input: string;
  sessionId: string;
  newSession?: boolean;
  history?: Message[];
  output?: JsonSchema;
  /** A KAOS task delegation: its `task_delegation_received` event is recorded before the run's. */
  delegated?: boolean;
  /** The stream's chunk header (model, usage, structured); its `id` is `chatcmpl-<run id>`. */
  stream: Omit<ChatStreamSpec, "id" | "sessionId">;
}

/** A run's journal spec (its workflow input): the stream's header, and the task of a KAOS delegation. */
type RunSpec = ChatStreamSpec & { delegatedTask?: string };

export class DurableRuns {
  private durable?: DurableAgent;
  private launching?: Promise<DurableAgent>;
  private failure?: AgentLoopError;
  /** Why the agent could not be built (DBOS is then never launched). */
  private buildFailure?: AgentLoopError;

  private constructor(
    private readonly settings: AgentSettings,
    private readonly memory: ServerMemory,
    private readonly log: (line: string) => void,
    private readonly databaseUrl: string,
    private readonly onStoreFailure: (failure: string | undefined) => void,
  ) {}

  /** Checks the settings: durable runs keep their checkpoints in the memory's PostgreSQL. */
  static of(settings: AgentSettings, memory: ServerMemory, env: NodeJS.ProcessEnv, log: (line: string) => void, onStoreFailure: (failure: string | undefined) => void): DurableRuns {
    const type = settings.memoryEnv.MEMORY_TYPE;
    const url = settings.memoryEnv.MEMORY_POSTGRES_URL ?? env.DATABASE_URL;
    if (memory.store.kind !== "postgres" || !url) {
      throw new AgentLoopError(
        "configuration",
        `DURABLE: durable runs need MEMORY_TYPE=postgres (their checkpoints live in the same PostgreSQL), got MEMORY_TYPE=${type ?? "(unset)"}`,
      );
    }
    return new DurableRuns(settings, memory, log, url, onStoreFailure);
  }

  /** Makes the built agent durable and launches DBOS (which recovers this executor's unfinished runs). */
  launch(runtime: AgentRuntime): Promise<DurableAgent> {
    this.launching ??= (async () => {
      try {
        const { durableAgent } = await import("../durable/index.js");
        const { executorId, schema } = this.settings.durable!;
        const durable = durableAgent(runtime.agent, {
          databaseUrl: this.databaseUrl,
          executorId,
          schema,
          appName: `agentloop-${this.settings.name}`,
          logLevel: "error",
          queue: { name: CHAT_QUEUE, partitionConcurrency: 1 },
          journal: (spec, runId) => this.encoder(spec as RunSpec, runId),
        });
        await durable.launch();
        this.durable = durable;
        this.log(`[${this.settings.name}] durable runs: executor ${executorId}, DBOS schema ${schema}`);
        return durable;
      } catch (error) {
        this.failure = AgentLoopError.from(error, "configuration");
        throw this.failure;
      }
    })();
    return this.launching;
  }

  /** The agent could not be built: durable runs never will be, and the run routes say why. */
  buildFailed(failure: AgentLoopError): void {
    this.buildFailure ??= failure;
  }

  private async ready(): Promise<DurableAgent> {
    if (this.durable) return this.durable;
    if (!this.launching) {
      if (this.buildFailure) throw new HttpError(503, `durable runs are not available: the agent could not be built: ${this.buildFailure.message}`, "server_error", "agent_unavailable");
      throw new HttpError(503, "durable runs are not available yet: the agent is not built", "server_error", "agent_unavailable");
    }
    try {
      return await this.launching;
    } catch {
      throw new HttpError(503, `durable runs are not available: ${this.failure?.message}`, "server_error", "durable_unavailable");
    }
  }

  /** A run's journal: the chunks of its stream, closed (after its events are stored) by the finish chunk and `[DONE]`. */
  private encoder(spec: RunSpec, runId: string): JournalEncoder {
    const { memory, settings, log } = this;
    const chunks = new ChatStreamEncoder({ ...spec, agent: settings.name });
    return {
      begin: async ({ replayedEvents }) => {
        // A recovered (or resumed) execution replays the run: the durable agent's memory does not
        // store again what an earlier execution stored (src/durable/memory.ts).
        if (replayedEvents > 0) {
          log(`[${settings.name}] run ${runId} session ${spec.sessionId} recovered: its ${replayedEvents} stored event(s) are not stored again`);
        } else if (spec.delegatedTask !== undefined) {
          // As the plain server does, with the session to itself: the delegated task first.
          await memory.store
            .append(spec.sessionId, [{ event_type: "task_delegation_received", content: spec.delegatedTask, metadata: { source: "task-delegation" } }])
            .catch((error: unknown) => log(`[${settings.name}] could not record task_delegation_received in ${spec.sessionId}: ${(error as Error).message}`));
        }
      },
      start: () => [chunks.start()],
      event: (event) => chunks.event(event),
      end: async (result: RunResult) => {
        log(`[${settings.name}] run ${runId} session ${spec.sessionId} ${result.state}: ${result.reason}`);
        // The answer is acknowledged only once the run's events are stored.
        const writes = memory.handle?.settled(spec.sessionId);
        try {
          if (writes) await writes;
          this.onStoreFailure(undefined);
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          this.onStoreFailure(`${runId} in ${spec.sessionId}: ${message}`);
          log(`[${settings.name}] run ${runId} session ${spec.sessionId}: its events could not be stored: ${message}`);
          return ChatStreamEncoder.failure(new HttpError(503, `the answer could not be stored (memory store ${memory.store.kind}): ${message}`, "server_error", "memory_write_failed"));
        }
        return chunks.closing(result);
      },
    };
  }

  /** Queues a chat as a durable run (behind the session's earlier runs, on whichever replica takes it). */
  async start(chat: DurableChat, runId: string): Promise<{ result: () => Promise<DurableRunResult> }> {
    const durable = await this.ready();
    const spec: RunSpec = {
      ...chat.stream,
      id: `chatcmpl-${runId}`,
      sessionId: chat.sessionId,
      ...(chat.delegated && this.memory.handle ? { delegatedTask: chat.input } : {}),
    };
    return durable.run(chat.input, {
      runId,
      sessionId: chat.sessionId,
      newSession: chat.newSession,
      history: chat.history,
      output: chat.output,
      partitionKey: chat.sessionId,
      journal: spec,
    });
  }

  /** A run's journal after `after` (`known`: the run was just started, no need to look it up). */
  async events(runId: string, after: number, known = false): Promise<AsyncGenerator<JournalEntry>> {
    const durable = await this.ready();
    // Cheap when the run executes here (a client reattaching to the replica that recovered its run).
    if (!known && !(await durable.exists(runId))) throw new HttpError(404, `no durable run "${runId}"`, "not_found_error", "run_not_found", "run_id");
    return durable.readJournal(runId, { after });
  }

  /**
   * `POST /v1/approvals` in durable mode: the decisions go to the session's waiting run as a DBOS
   * message (the run resumes on the replica that runs it, or after a crash on the one that recovers
   * it); returns the journal of the leg after the decision. 404 when nothing waits, 409 when it was
   * decided already, 400 for decisions the checkpoint refuses.
   */
  async decide(sessionId: string, decisions: Record<string, ApprovalDecision>): Promise<{ runId: string; leg: AsyncGenerator<JournalEntry>; wait: ApprovalWait }> {
    const durable = await this.ready();
    const events = await this.memory.store.events(sessionId, { types: ["approval_requested", "approval_decided"] });
    const requested = events.findLast((event) => (event.content as { checkpoint?: unknown } | null)?.checkpoint !== undefined);
    const runId = requested?.metadata?.run_id;
    if (!requested || typeof runId !== "string") throw notFound(`no approval is pending in session "${sessionId}"`, "no_pending_approval", "session_id");
    const checkpoint = (requested.content as { checkpoint: RunCheckpoint }).checkpoint;
    const wait = await durable.approvalWait(runId);
    const decided = events.some((event) => event.event_type === "approval_decided" && (event.content as { checkpoint_id?: unknown } | null)?.checkpoint_id === checkpoint.id);
    // Expired: the run went on with the calls rejected (it records that resume as decided, too).
    if ((!wait || wait.result.checkpoint?.id !== checkpoint.id) && (await durable.expiredApprovals(runId)).includes(checkpoint.id)) {
      throw new HttpError(410, `the approvals of checkpoint ${checkpoint.id} in session "${sessionId}" expired (approvalTimeoutMs): its calls were rejected with "approval expired"`, "invalid_request_error", "approval_expired");
    }
    if (decided || !wait || wait.result.checkpoint?.id !== checkpoint.id) {
      throw new HttpError(409, `the approvals of checkpoint ${checkpoint.id} in session "${sessionId}" were decided already`, "invalid_request_error", "approval_already_decided");
    }
    const pending = new Map(checkpoint.pending.map((entry) => [entry.toolCallId, entry]));
    for (const [callId, decision] of Object.entries(decisions)) {
      const entry = pending.get(callId);
      if (!entry) throw badRequest(`no approval is pending for tool call "${callId}" (pending: ${[...pending.keys()].join(", ")})`, `decisions.${callId}`, "invalid_decisions");
      if (decision.argumentsHash !== undefined && decision.argumentsHash !== entry.argumentsHash) {
        throw badRequest(`the decision for "${callId}" (${entry.toolName}) was made for other arguments (hash ${decision.argumentsHash}, pending ${entry.argumentsHash}); ask again`, `decisions.${callId}`, "invalid_decisions");
      }
    }
    // Read from the leg's start before sending: nothing the resumed run writes is missed.
    const leg = durable.readJournal(runId, { after: wait.resumeAt });
    await durable.decide(runId, decisions, { checkpointId: checkpoint.id });
    this.log(`[${this.settings.name}] run ${runId} session ${sessionId}: decisions sent (${Object.keys(decisions).join(", ")})`);
    return { runId, leg, wait };
  }

  /** What a run waiting for approvals waits at (undefined when it does not wait). */
  async approvalWait(runId: string): Promise<ApprovalWait | undefined> {
    return (await this.ready()).approvalWait(runId);
  }

  /** A run's stored result (waits for its end). */
  async result(runId: string): Promise<DurableRunResult> {
    return (await this.ready()).retrieve(runId).result();
  }

  async list(filter: { status?: string; sessionId?: string; limit?: number }): Promise<DurableRunInfo[]> {
    return (await this.ready()).list(filter);
  }

  async show(runId: string): Promise<DurableRunInfo> {
    const info = await (await this.ready()).show(runId);
    if (!info) throw new HttpError(404, `no durable run "${runId}"`, "not_found_error", "run_not_found", "run_id");
    return info;
  }

  async cancel(runId: string): Promise<DurableRunInfo> {
    await this.show(runId);
    await this.durable!.cancel(runId);
    return this.show(runId);
  }

  /** Resumes a run; its cancelled execution still stopping here past `waitMs`: 409 `run_stopping`, the run as it was. */
  async resume(runId: string, waitMs?: number): Promise<DurableRunInfo> {
    await this.show(runId);
    try {
      await this.durable!.resume(runId, waitMs === undefined ? undefined : { waitMs });
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code === "run_stopping") throw new HttpError(409, (error as Error).message, "invalid_request_error", "run_stopping");
      throw error;
    }
    return this.show(runId);
  }

  async recover(executorIds: string[]): Promise<string[]> {
    return (await this.ready()).recover(executorIds);
  }

  /** Stops DBOS in this process: its unfinished runs stay in the database, recovered at the next start. */
  async close(): Promise<void> {
    await this.launching?.catch(() => undefined);
    await this.durable?.shutdown();
  }
}

/** A durable run's stored result as the completion builder reads it (its error an AgentLoopError again). */
export function runResultOf(stored: DurableRunResult): RunResult {
  const error = stored.error ? new AgentLoopError(stored.error.kind as AgentLoopError["kind"], stored.error.message) : undefined;
  return { ...stored, messages: [], ...(error ? { error } : {}) } as RunResult;
}
