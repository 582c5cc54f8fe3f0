// The model of a durable run: each model call a DBOS step, its events recorded.
import { DBOS } from "@dbos-inc/dbos-sdk";
import { AgentLoopError } from "../errors.js";
import type { Model, ModelEvent, ModelRequest } from "../model/model.js";
import { cancellable, watched } from "./cancellation.js";
import { Channel } from "./channel.js";
import { flushJournal } from "./journal.js";

type StoredEvent = ModelEvent | { type: "error"; error: { kind: string; message: string; status?: number; provider?: string } };

/** A model whose `stream` is a DBOS step inside a workflow (and the model itself outside one). */
export function durableModel(model: Model): Model & { durable: true } {
  return {
    provider: model.provider,
    modelId: model.modelId,
    durable: true,
    stream: (request) => (DBOS.isWithinWorkflow() ? recordedStream(model, request) : model.stream(request)),
    ...(model.forRun ? { forRun: () => durableModel(model.forRun!()) } : {}),
  } as Model & { durable: true };
}

/** A model step's record: its events, and the tool calls whose "started" marker it holds. */
interface StoredModelCall {
  events: StoredEvent[];
  started: string[];
}

/**
 * A model call whose response asked for tools stays open after its stream ended: a model call has
 * no side effect, so it may be recorded late, and it is recorded with the "started" markers of the
 * tool calls that begin right after it (one checkpoint where there were two). It closes at the
 * run's next step, which waits for its record before doing anything (a tool must not run on a
 * response that was not recorded).
 */
export interface OpenModelCall {
  started: string[];
  closing: boolean;
  /** Settles once `close` was called. */
  closed: Promise<void>;
  close(): void;
}

/** Opens run `runId`'s model call (the one whose stream is being read). */
function openModelCall(runId: string): OpenModelCall {
  let close!: () => void;
  const closed = new Promise<void>((resolve) => {
    close = resolve;
  });
  const open: OpenModelCall = {
    started: [],
    closing: false,
    closed,
    close: () => {
      open.closing = true;
      if (openModelCalls.get(runId) === open) openModelCalls.delete(runId);
      close();
    },
  };
  openModelCalls.set(runId, open);
  return open;
}

/** The open model call of each run executing here, and the last model step's record (the barrier of the next steps). */
export const openModelCalls = new Map<string, OpenModelCall>();
export const modelRecords = new Map<string, Promise<unknown>>();
/** The markers of the last replayed model step of each run: those calls had started. */
export const replayedStarts = new Map<string, Set<string>>();

/** Closes the run's open model call (no more markers) and returns its record's settling. */
export function closeModelCall(runId: string | undefined): Promise<unknown> {
  if (!runId) return Promise.resolve();
  openModelCalls.get(runId)?.close();
  return modelRecords.get(runId) ?? Promise.resolve();
}

/** Every step of a run begins with this: the model call before it is recorded first. */
export function afterModelCall(runId: string | undefined): Promise<unknown> {
  return closeModelCall(runId).catch(() => undefined);
}

/**
 * One model call as a step: live, its events are passed on as they arrive and recorded when the
 * call closes (see OpenModelCall); replayed, the recorded events are passed on. A step never throws
 * (a throwing stream is recorded as an error event, as the loop would treat it).
 */
async function* recordedStream(model: Model, request: ModelRequest): AsyncGenerator<ModelEvent> {
  const runId = DBOS.workflowID;
  const before = afterModelCall(runId);
  const channel = new Channel<ModelEvent>();
  let live = false;
  flushJournal();
  const step = watched(
    runId,
    `a model call (${model.provider}:${model.modelId})`,
    DBOS.runStep(
      async (): Promise<StoredModelCall> => {
        await before;
        return cancellable(async () => {
          live = true;
          // Open before the loop sees the first event: the loop starts the calls the response asks
          // for once it has read the `finish`, which may be before this stream's own cleanup (its
          // `return()`, an HTTP body's end) settles. Their markers must find this call open.
          const open = runId ? openModelCall(runId) : undefined;
          const events: StoredEvent[] = [];
          try {
            for await (const event of model.stream(request)) {
              channel.push(event);
              events.push(storeEvent(event));
              if (event.type === "finish" || event.type === "error") break;
            }
          } catch (error) {
            const wrapped = AgentLoopError.from(error);
            channel.push({ type: "error", error: wrapped });
            events.push(storeEvent({ type: "error", error: wrapped }));
          }
          channel.end();
          // Recorded now, unless it asked for tools: then with the markers of the calls that start next.
          if (!open || !events.some((event) => event.type === "tool-call-end")) {
            open?.close();
            return { events, started: [] };
          }
          await open.closed;
          return { events, started: open.started };
        });
      },
      { name: "model" },
    ),
  );
  if (runId) {
    modelRecords.set(runId, step);
    replayedStarts.delete(runId);
  }
  step.then(
    (stored) => {
      if (!live) {
        if (runId) replayedStarts.set(runId, new Set(stored.started));
        for (const event of stored.events) channel.push(restoreEvent(event));
      }
      channel.end();
    },
    (error: unknown) => channel.fail(error),
  );
  yield* channel;
}

function storeEvent(event: ModelEvent): StoredEvent {
  if (event.type !== "error") return event;
  const { kind, message, status, provider } = event.error;
  return { type: "error", error: { kind, message, status, provider } };
}

function restoreEvent(event: StoredEvent): ModelEvent {
  if (event.type !== "error") return event as ModelEvent;
  const { kind, message, status, provider } = event.error as { kind: string; message: string; status?: number; provider?: string };
  return { type: "error", error: new AgentLoopError(kind as AgentLoopError["kind"], message, { status, provider }) };
}
