/**
 * `sessionMemory(store)`: the loop's `SessionMemory`. It writes each loop event to the session's
 * log as it happens and rebuilds the history of the next run from that log.
 */
import { createRequire } from "node:module";
import type { LoopEvent } from "../loop/events.js";
import type { RunInfo, SessionMemory } from "../loop/types.js";
import { type Message, textOf } from "../messages.js";
import { DEFAULT_CONTEXT_LIMIT, historyFromEvents } from "./history.js";
import { InMemoryStore } from "./in-memory-store.js";
import { type AppendOptions, isoOf, type MemoryEventMetadata, type MemoryStore, type NewMemoryEvent } from "./store.js";

export interface TraceIds {
  traceId: string;
  spanId: string;
}

export interface SessionMemoryOptions {
  /** Exchanges of history given to the next run (default 6, KAOS `MEMORY_CONTEXT_LIMIT`). */
  contextLimit?: number;
  /** Trace ids for an event's metadata. Default: the active OpenTelemetry span, when there is one. */
  traceIds?: (event: LoopEvent, run: RunInfo) => TraceIds | undefined;
  /** Also record runs of sub-agents (depth > 0) that carry a session id. Default false: the parent's
   * log already holds the delegation request and response. */
  recordNestedRuns?: boolean;
  /**
   * How long the events of a run's start (`run_started`, its `user_message`), and its answer when
   * it comes within that time, may wait to be written with the run's next events (default 250 ms;
   * 0 writes them at once). A short run (a chat answered in one turn) is then one write, to its
   * `run_ended`, instead of two, and a burst of requests starts its models before any of them
   * writes. A tool call, the run's end, `flush` or `settled` writes them at once, and so does the
   * delay's end (a resume's start, with its approval decisions, is never held); a process killed
   * within the delay loses them along with the run itself (whose answer no client got).
   */
  startWriteDelayMs?: number;
}

/** A `SessionMemory` plus what the server and CLI need around it. */
export interface SessionMemoryHandle extends SessionMemory {
  readonly store: MemoryStore;
  readonly contextLimit: number;
  /** Resolves once every event received so far is written (or failed). */
  flush(): Promise<void>;
  /**
   * The acknowledgment of a session's writes: settles once every event of `sessionId` received so
   * far is written, and rejects with the first write that failed since the last call (so a failure
   * is reported once). Undefined when nothing is pending and nothing failed (no promise to await).
   */
  settled(sessionId: string): Promise<void> | undefined;
  /**
   * Calls `fn` once, just before the session's next write goes to the store (a held start goes
   * with the run's next events): work that must join that write, such as the server's lock attempt
   * on a session it just made (on SQLite, the same group commit). `wholeRuns`: that write holds
   * whole runs only, from `run_started` to `run_ended`, and no run of the session goes on here (a
   * short run held until its end, see `startWriteDelayMs`): nothing of them is in the store before
   * it, so nothing can interleave. Returns the way to cancel it.
   */
  beforeNextWrite(sessionId: string, fn: (wholeRuns: boolean) => void): () => void;
}

/** A session's held start events (see `startWriteDelayMs`). */
interface HeldWrite {
  events: NewMemoryEvent[];
  /** Settles once they are written (rejections are reported by the write that carries them). */
  written: Promise<void>;
  settle(written: Promise<void> | undefined): void;
  timer: NodeJS.Timeout;
}

interface RunState {
  sessionId: string;
  turn: number;
  /** Raw arguments of the tool calls of the last model turn, by call id. */
  rawArguments: Map<string, string>;
  /** Assistant text said alongside the last turn's tool calls, until the first call records it. */
  assistantText: string;
  /** The last answer recorded at a turn's end (run-end does not record it twice). */
  recordedAnswer?: string;
  /** When the current model call started (turn-start), in ms since the epoch. */
  turnStartedAt?: number;
  /**
   * The last model call (its turn, start, duration, tokens, finish reason): written into the
   * metadata (`model_call`) of the events that turn produced (its tool calls, or its answer), so a
   * viewer (the studio's timeline) draws model calls from the log without an event of their own.
   */
  modelCall?: ModelCallRecord;
}

/** What the log keeps of one model call (`metadata.model_call` of the events its turn produced). */
export interface ModelCallRecord {
  turn: number;
  /** ISO 8601 start of the call. */
  started_at: string;
  duration_ms: number;
  usage: { input_tokens: number; output_tokens: number; total_tokens: number };
  /** The call's cost in US dollars as its usage has it (`"unknown"` for an unpriced model); absent when nothing prices it. */
  cost?: number | "unknown";
  finish_reason: string;
}

/** Loop events that leave nothing in the log (deltas, usage, progress): `onEvent` returns at once for them. */
const NOT_RECORDED = [
  "text-delta",
  "reasoning-delta",
  "commentary-delta",
  "progress",
  "tool-progress",
  "tool-error",
  "usage",
  "nested",
  "guardrail",
  "model-fallback",
  "messages-updated",
  "context-trimmed",
] as const satisfies ReadonlyArray<LoopEvent["type"]>;
const notRecorded: ReadonlySet<string> = new Set(NOT_RECORDED);

/** The loop events `eventsFor` maps to log events (a turn's start only times its model call). */
type RecordedEvent = Exclude<LoopEvent, { type: (typeof NOT_RECORDED)[number] | "turn-start" }>;

function isNotRecorded(event: LoopEvent): event is Extract<LoopEvent, { type: (typeof NOT_RECORDED)[number] }> {
  return notRecorded.has(event.type);
}

/** Where `@opentelemetry/api` 1.x keeps its global registrations (context manager, tracer provider…). */
const OTEL_API_GLOBAL = Symbol.for("opentelemetry.js.api.1");
/** `@opentelemetry/api`, loaded the first time a span could be active. */
let otelApi: typeof import("@opentelemetry/api") | undefined;

function activeSpanIds(): TraceIds | undefined {
  // A span is active only through a context manager registered with the global API: with nothing
  // registered there is none, and the API is not loaded for it (`agentloop chat` and `serve` start
  // without it). Once something is registered, the API (CommonJS) is loaded synchronously.
  if ((globalThis as Record<symbol, unknown>)[OTEL_API_GLOBAL] === undefined) return undefined;
  otelApi ??= createRequire(import.meta.url)("@opentelemetry/api") as typeof import("@opentelemetry/api");
  const { isSpanContextValid, trace } = otelApi;
  const context = trace.getActiveSpan()?.spanContext();
  return context && isSpanContextValid(context) ? { traceId: context.traceId, spanId: context.spanId } : undefined;
}

function parseArguments(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/**
 * Records a run's events in its session's log (`RunInfo.sessionId`; runs without one record nothing)
 * and loads the history of the next run. Writes are queued and happen in event order; a failed
 * write rejects that event's promise (the loop reports it as a non-fatal `error` event) and later
 * writes still go through.
 *
 * Mapping: user-message → user_message, tool-start → tool_call (delegation_request for delegate
 * tools), tool-end → tool_result (delegation_response), steering → steering, error → error,
 * loop-warning → loop_warning, run-start → run_started, turn-end without tool calls →
 * agent_response (the model's answer), run-end → run_ended {state, reason} (preceded by an
 * agent_response only if the final text was not recorded yet). Deltas, usage and progress are not stored.
 */
export function sessionMemory(store: MemoryStore, options: SessionMemoryOptions = {}): SessionMemoryHandle {
  const contextLimit = options.contextLimit ?? DEFAULT_CONTEXT_LIMIT;
  if (Number.isNaN(contextLimit) || contextLimit < 0) throw new TypeError(`memory: contextLimit must be a non-negative number, got ${contextLimit}`);
  const traceIds = options.traceIds ?? activeSpanIds;
  const runs = new Map<string, RunState>();
  /** The ids of the runs in progress, by session (what `loadHistory` leaves out), without a scan of every run. */
  const activeRuns = new Map<string, Set<string>>();
  // One write queue per session: a session's events are written in order, sessions do not wait for each other.
  const queues = new Map<string, Promise<void>>();
  /** The first write failure of a session not reported by `settled` yet. */
  const failures = new Map<string, unknown>();
  const failed = (sessionId: string, error: unknown) => {
    if (!failures.has(sessionId)) failures.set(sessionId, error);
  };
  const takeFailure = (sessionId: string) => {
    const failure = failures.get(sessionId);
    if (failure === undefined) return;
    failures.delete(sessionId);
    throw failure;
  };

  /** Session memory never reads the stored events an append returns: a store may skip building them. */
  const appendOptions: AppendOptions = { returnEvents: false };
  const appendNow = (sessionId: string, events: NewMemoryEvent[]): Promise<unknown> => {
    try {
      return Promise.resolve(store.append(sessionId, events, appendOptions));
    } catch (error) {
      return Promise.reject(error);
    }
  };

  // The in-process store writes synchronously: its events are recorded without a promise each.
  // Only while `append` is its own: a subclass or wrapper that changes `append` (even after this
  // memory was made, as a durable agent's does) is always called.
  const inOrder = store.appendsInOrder === true;
  const appendSync = store instanceof InMemoryStore ? store.appendSync.bind(store) : undefined;

  /** `beforeNextWrite` callbacks, by session. */
  const beforeWrite = new Map<string, Set<(wholeRuns: boolean) => void>>();
  /**
   * Writes in event order; undefined when the events are already written (a synchronous store with
   * nothing queued).
   */
  const write = (sessionId: string, events: NewMemoryEvent[]): Promise<void> | undefined => {
    const hooks = beforeWrite.get(sessionId);
    if (hooks) {
      beforeWrite.delete(sessionId);
      const wholeRuns = events[0]?.event_type === "run_started" && events[events.length - 1].event_type === "run_ended" && !activeRuns.has(sessionId);
      for (const hook of hooks) hook(wholeRuns);
    }
    const previous = queues.get(sessionId);
    if (!previous && appendSync && store.append === InMemoryStore.prototype.append) {
      try {
        appendSync(sessionId, events);
        return undefined;
      } catch (error) {
        failed(sessionId, error);
        return Promise.reject(error);
      }
    }
    // A store that keeps a session's appends in call order is called at once (the events join the
    // group commit already waiting); any other after the previous append settled.
    const next = previous && !inOrder ? previous.then(() => store.append(sessionId, events, appendOptions)) : appendNow(sessionId, events);
    const settled = next.then(
      () => {},
      (error: unknown) => failed(sessionId, error),
    );
    // The tail settles after every earlier write too (an in-order store settles them in order anyway).
    const tail = previous && inOrder ? previous.then(() => settled) : settled;
    queues.set(sessionId, tail);
    void tail.then(() => {
      if (queues.get(sessionId) === tail) queues.delete(sessionId);
    });
    return next.then(() => {});
  };

  const startWriteDelayMs = options.startWriteDelayMs ?? 250;
  if (!(startWriteDelayMs >= 0)) throw new TypeError(`memory: startWriteDelayMs must be a non-negative number, got ${startWriteDelayMs}`);
  /** Events of runs' starts waiting for the delay or the session's next write, by session. */
  const held = new Map<string, HeldWrite>();

  /**
   * Holds a run's start events (see `startWriteDelayMs`). The first held events of a session get
   * the promise that settles once they are written; events joining them get none (that promise
   * covers them, and a failure is reported once).
   */
  const hold = (sessionId: string, events: NewMemoryEvent[]): Promise<void> | undefined => {
    const waiting = held.get(sessionId);
    if (waiting) {
      waiting.events.push(...events);
      return undefined;
    }
    let settle!: (written: Promise<void> | undefined) => void;
    const written = new Promise<void>((resolve) => {
      settle = resolve as (written: Promise<void> | undefined) => void;
    });
    const timer = setTimeout(() => release(sessionId), startWriteDelayMs);
    // `events` is this call's own array (from `eventsFor`): it collects the events joining it.
    held.set(sessionId, { events, written, settle, timer });
    return written;
  };

  /**
   * Writes a session's held events now, before `events` and with them. The held promise follows
   * that write; when `events` carry them, it resolves either way: a failure of the one append is
   * reported once, by the promise returned for `events`.
   */
  const release = (sessionId: string, events?: NewMemoryEvent[]): Promise<void> | undefined => {
    const waiting = held.get(sessionId);
    if (!waiting) return events ? write(sessionId, events) : undefined;
    held.delete(sessionId);
    clearTimeout(waiting.timer);
    if (events) waiting.events.push(...events);
    const written = write(sessionId, waiting.events);
    waiting.settle(events ? written?.catch(() => {}) : written);
    return written;
  };

  const eventsFor = (event: RecordedEvent, run: RunInfo, state: RunState): NewMemoryEvent[] => {
    // A Date, not its ISO text: the store writes it as ISO 8601 without parsing text back.
    const timestamp = new Date();
    const ids = traceIds(event, run);
    const metadata = (extra: MemoryEventMetadata): MemoryEventMetadata => {
      const data: MemoryEventMetadata = { run_id: run.runId, agent: run.agentName };
      if (ids) {
        data.trace_id = ids.traceId;
        data.span_id = ids.spanId;
      }
      return Object.assign(data, extra);
    };
    switch (event.type) {
      case "run-start": {
        const started: NewMemoryEvent = {
          event_type: "run_started",
          timestamp,
          content: { agent: event.agent, model: event.model },
          metadata: metadata({ depth: run.depth, ...(run.parentRunId ? { parent_run_id: run.parentRunId } : {}) }),
        };
        if (!event.resumedFrom) return [started];
        // A resume is recorded once, with its decisions: a second resume of the checkpoint is refused.
        const { checkpointId, decisions } = event.resumedFrom;
        return [started, { event_type: "approval_decided", timestamp, content: { checkpoint_id: checkpointId, decisions }, metadata: metadata({ checkpoint_id: checkpointId }) }];
      }
      case "approval-request":
        return [
          {
            event_type: "approval_requested",
            timestamp,
            content: { tool_call_id: event.toolCallId, tool: event.name, arguments: event.arguments, arguments_hash: event.argumentsHash },
            metadata: metadata({ tool_call_id: event.toolCallId, tool_name: event.name }),
          },
        ];
      case "approval-decision":
        if (event.checkpointId) return []; // recorded with the resume's run_started
        return [
          {
            event_type: "approval_decided",
            timestamp,
            content: { tool_call_id: event.toolCallId, approve: event.approve, ...(event.reason ? { reason: event.reason } : {}) },
            metadata: metadata({ tool_call_id: event.toolCallId, tool_name: event.name }),
          },
        ];
      case "user-message":
        return [{ event_type: "user_message", timestamp, content: event.content, metadata: metadata(event.followUp ? { follow_up: true } : {}) }];
      case "turn-end": {
        const startedAt = state.turnStartedAt ?? timestamp.getTime();
        state.modelCall = {
          turn: event.turn,
          started_at: isoOf(startedAt),
          duration_ms: Math.max(0, timestamp.getTime() - startedAt),
          usage: { input_tokens: event.usage.inputTokens, output_tokens: event.usage.outputTokens, total_tokens: event.usage.totalTokens },
          ...(event.usage.cost !== undefined ? { cost: event.usage.cost } : {}),
          finish_reason: event.finishReason.unified,
        };
        state.rawArguments.clear();
        for (const part of event.message.content) if (part.type === "tool-call") state.rawArguments.set(part.id, part.arguments);
        const text = textOf(event.message);
        state.assistantText = text;
        // A turn without tool calls is an answer: recorded now (not at run-end), so an answer that
        // steering or a follow-up continues from is in the log too.
        const failed = event.finishReason.unified === "error" || event.finishReason.unified === "aborted";
        if (event.toolCalls > 0 || failed || !text) return [];
        state.recordedAnswer = text;
        return [{ event_type: "agent_response", timestamp, content: text, metadata: metadata({ turn: event.turn, model_call: state.modelCall }) }];
      }
      case "tool-start": {
        const raw = state.rawArguments.get(event.toolCallId) ?? (typeof event.arguments === "string" ? event.arguments : JSON.stringify(event.arguments ?? {}));
        const args = event.arguments ?? parseArguments(raw);
        const delegate = event.action === "delegate";
        const assistantText = state.assistantText;
        state.assistantText = "";
        const task = typeof args === "object" && args !== null && "task" in args ? (args as { task: unknown }).task : args;
        return [
          {
            event_type: delegate ? "delegation_request" : "tool_call",
            timestamp,
            content: delegate ? { agent: event.name.replace(/^delegate_to_/, ""), task } : { tool: event.name, arguments: args },
            metadata: metadata({
              tool_call_id: event.toolCallId,
              tool_name: event.name,
              raw_arguments: raw,
              turn: state.turn,
              step: event.step,
              ...(event.kind ? { kind: event.kind } : {}),
              ...(assistantText ? { assistant_text: assistantText } : {}),
              ...(state.modelCall && state.modelCall.turn === state.turn ? { model_call: state.modelCall } : {}),
            }),
          },
        ];
      }
      case "tool-end": {
        const delegate = event.action === "delegate";
        const sent = typeof event.result.content === "string" ? event.result.content : textOf(event.result);
        return [
          {
            event_type: delegate ? "delegation_response" : "tool_result",
            timestamp,
            content: delegate ? { agent: event.name.replace(/^delegate_to_/, ""), response: event.output } : { tool: event.name, result: event.output },
            metadata: metadata({
              tool_call_id: event.toolCallId,
              tool_name: event.name,
              is_error: event.isError,
              duration_ms: Math.round(event.durationMs),
              ...(event.errorKind ? { error_kind: event.errorKind } : {}),
              // What the model saw, when it differs from the full output (truncation).
              ...(sent !== event.output ? { model_result: sent, truncated: event.truncated } : {}),
            }),
          },
        ];
      }
      case "steering":
        return [{ event_type: "steering", timestamp, content: event.content, metadata: metadata({}) }];
      case "loop-warning":
        return [{ event_type: "loop_warning", timestamp, content: event.message, metadata: metadata({ pattern: event.pattern, warnings: event.warnings }) }];
      case "error":
        return [
          {
            event_type: "error",
            timestamp,
            content: event.error.message,
            metadata: metadata({
              kind: event.error.kind,
              fatal: event.fatal,
              ...(event.error.status !== undefined ? { status: event.error.status } : {}),
              ...(event.error.provider ? { provider: event.error.provider } : {}),
            }),
          },
        ];
      case "run-end": {
        const { result } = event;
        const ended: NewMemoryEvent = {
          event_type: "run_ended",
          timestamp,
          content: { state: event.state, reason: event.reason },
          metadata: metadata({ turns: result.turns, tool_calls: result.toolCalls, usage: result.usage }),
        };
        const answered = result.text && result.text !== state.recordedAnswer;
        const events: NewMemoryEvent[] = answered ? [{ event_type: "agent_response", timestamp, content: result.text, metadata: metadata({}) }, ended] : [ended];
        // An interrupted run's checkpoint lives in the log, so any process sharing the store can resume it.
        if (result.checkpoint) {
          const { checkpoint } = result;
          events.unshift({
            event_type: "approval_requested",
            timestamp,
            content: { checkpoint_id: checkpoint.id, pending: checkpoint.pending, checkpoint },
            // The model call that asked for the calls waiting here (no tool_call carries it yet).
            metadata: metadata({ checkpoint_id: checkpoint.id, ...(state.modelCall ? { model_call: state.modelCall } : {}) }),
          });
        }
        return events;
      }
      default: {
        // Every event type is handled above; one added to the loop later (an older memory module
        // under a newer loop) records nothing rather than breaking the run's writes.
        const unknown: never = event;
        void unknown;
        return [];
      }
    }
  };

  return {
    store,
    contextLimit,
    // Writes keep event order per session (`write`): a run's events go out without waiting for each other.
    ordersItself: true,
    onEvent(event: LoopEvent, run: RunInfo): Promise<void> | undefined {
      // Most events of a run (one per streamed chunk) are not stored: they cost nothing here.
      if (isNotRecorded(event)) return undefined;
      let state = runs.get(event.runId);
      if (!state) {
        const sessionId = run.sessionId ?? (event.type === "run-start" ? event.sessionId : undefined);
        if (!sessionId || (run.depth > 0 && !options.recordNestedRuns)) return undefined;
        state = { sessionId, turn: 0, rawArguments: new Map(), assistantText: "" };
        runs.set(event.runId, state);
        const active = activeRuns.get(sessionId);
        if (active) active.add(event.runId);
        else activeRuns.set(sessionId, new Set([event.runId]));
      }
      const sessionId = state.sessionId;
      if (event.type === "run-end") {
        runs.delete(event.runId);
        const active = activeRuns.get(sessionId);
        if (active?.delete(event.runId) && active.size === 0) activeRuns.delete(sessionId);
      }
      if (event.type === "turn-start") {
        state.turn = event.turn;
        state.turnStartedAt = Date.now();
        return undefined;
      }
      const events = eventsFor(event, run, state);
      if (events.length === 0) return undefined;
      // A run's start (run_started, then its user_message) waits a little for the run's next
      // events (`startWriteDelayMs`): a run's setup up to its first model call does not pay for the
      // store. An answer within that time joins it, so a one-turn run is one write with its
      // run_ended. The run's end still waits for every write (`settled`).
      // A resume's start records its approval decisions: never held (a second resume must see them).
      if (startWriteDelayMs > 0 && ((event.type === "run-start" && !event.resumedFrom) || ((event.type === "user-message" || event.type === "turn-end") && held.has(sessionId)))) return hold(sessionId, events);
      return release(sessionId, events);
    },
    async loadHistory(sessionId: string): Promise<Message[]> {
      // What is held (runs' starts) belongs to runs in progress, which are not history: it stays held.
      await queues.get(sessionId);
      // Events of runs still in progress here (the run asking for its history) are not history yet.
      const running = activeRuns.get(sessionId);
      const active = running ? new Set(running) : undefined;
      const events = await store.events(sessionId);
      return historyFromEvents(active ? events.filter((event) => !active.has(String(event.metadata?.run_id))) : events, { contextLimit });
    },
    async checkpointResumed(sessionId: string, checkpointId: string): Promise<boolean> {
      // Nothing held can matter here: approval decisions are never held.
      await queues.get(sessionId);
      const events = await store.events(sessionId);
      return events.some((event) => event.event_type === "approval_decided" && (event.content as { checkpoint_id?: unknown } | null)?.checkpoint_id === checkpointId);
    },
    async flush(): Promise<void> {
      for (const sessionId of [...held.keys()]) release(sessionId);
      await Promise.all(queues.values());
    },
    beforeNextWrite(sessionId: string, fn: (wholeRuns: boolean) => void): () => void {
      let hooks = beforeWrite.get(sessionId);
      if (!hooks) {
        hooks = new Set();
        beforeWrite.set(sessionId, hooks);
      }
      // A wrapper of its own: the same function given twice is called twice, and cancelled one at a time.
      const hook = (wholeRuns: boolean) => fn(wholeRuns);
      hooks.add(hook);
      return () => {
        const current = beforeWrite.get(sessionId);
        if (current?.delete(hook) && current.size === 0) beforeWrite.delete(sessionId);
      };
    },
    settled(sessionId: string): Promise<void> | undefined {
      release(sessionId);
      const pending = queues.get(sessionId);
      if (pending) return pending.then(() => takeFailure(sessionId));
      if (!failures.has(sessionId)) return undefined;
      try {
        takeFailure(sessionId);
      } catch (error) {
        return Promise.reject(error);
      }
      return undefined;
    },
  };
}
