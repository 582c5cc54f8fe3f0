/**
 * Reading one model call: its stream into a response, its deltas forwarded as they arrive, an abort
 * honoured at once even by a model that ignores its signal.
 */
import { AgentLoopError } from "../errors.js";
import { type Model, type ModelEvent, type ModelRequest, type ModelResponse, ResponseAccumulator } from "../model/model.js";
import { keepShape } from "../shapes.js";
import type { RunControl } from "./run.js";

/** The reason of a run the signal ended: `aborted: <the signal's reason>`. */
export function abortReason(signal: AbortSignal, fallback = "aborted"): string {
  const reason = signal.reason;
  const text = reason instanceof Error ? reason.message : typeof reason === "string" ? reason : fallback;
  return `aborted: ${text}`;
}

/**
 * Streams one model call into an accumulator, forwarding text and reasoning deltas as they arrive.
 * Text in a turn already known to call tools is commentary, not answer text. Reading stops at the
 * stream's `finish` or `error`; a stream that ends without either was cut off. A model that ignores
 * the abort signal cannot hang the loop: the whole read races the signal once (not every event),
 * and whatever the model yields after the abort is dropped.
 */
export async function streamTurn(
  model: Model,
  request: ModelRequest,
  onRunAbort: RunControl["onAbort"],
  forward: Forward,
): Promise<ModelResponse> {
  const reader = new TurnReader(model, request, forward);
  const signal = request.signal;
  if (!signal) {
    await reader.read();
    return reader.accumulator.response();
  }
  let abortRead: () => void = noop;
  const aborted = new Promise<void>((resolve) => {
    abortRead = resolve;
  });
  // The run's own listener list: request.signal is the run's signal.
  const dispose = onRunAbort(() => {
    if (reader.finished) return;
    reader.stopped = true;
    abortRead();
  });
  try {
    await Promise.race([reader.read(), aborted]);
  } finally {
    dispose();
  }
  if (reader.stopped) {
    reader.accumulator.add({ type: "error", error: abortedError(signal) });
    release(reader.iterator);
  }
  return reader.accumulator.response();
}

export type Forward = (delta: string, kind: "text-delta" | "commentary-delta" | "reasoning-delta") => void;

/** One model call being read (see `streamTurn`); a class, so no closure is made per call. */
class TurnReader {
  readonly accumulator = new ResponseAccumulator();
  iterator?: AsyncIterator<ModelEvent>;
  /** The read is over (the stream ended, failed or was cut off): a later abort changes nothing. */
  finished = false;
  /** The signal fired before the read was over: the reader stops and drops what still arrives. */
  stopped = false;

  constructor(
    private readonly model: Model,
    private readonly request: ModelRequest,
    private readonly forward: Forward,
  ) {}

  async read(): Promise<void> {
    const { accumulator, forward, model } = this;
    const signal = this.request.signal;
    let toolTurn = false;
    try {
      const iterator = model.stream(this.request)[Symbol.asyncIterator]();
      this.iterator = iterator;
      for (;;) {
        const next = await iterator.next();
        if (this.stopped) return;
        if (next.done) {
          if (signal?.aborted) accumulator.add({ type: "error", error: abortedError(signal) });
          else accumulator.add({ type: "error", error: new AgentLoopError("network", `the ${model.provider} stream ended without a finish event (connection dropped?)`) });
          return;
        }
        const event = next.value;
        accumulator.add(event);
        if (event.type === "text-delta") forward(event.delta, toolTurn ? "commentary-delta" : "text-delta");
        else if (event.type === "reasoning-delta") forward(event.delta, "reasoning-delta");
        else if (event.type === "tool-call-start" || event.type === "tool-call-end") toolTurn = true;
        else if (event.type === "finish" || event.type === "error") break;
      }
      // Done reading (finished or failed): let the model release its connection.
      release(iterator);
    } catch (error) {
      // The contract says a model stream never throws; a broken one still must not crash the run.
      if (!this.stopped) accumulator.add({ type: "error", error: AgentLoopError.from(error) });
    } finally {
      this.finished = true;
    }
  }
}
keepShape(new TurnReader({} as Model, { messages: [] }, noop)); // see src/shapes.ts

export function noop(): void {}

function abortedError(signal: AbortSignal): AgentLoopError {
  return new AgentLoopError("aborted", abortReason(signal).slice("aborted: ".length));
}

/** Lets a model release its connection; a failing `return` is not the loop's problem. */
function release(iterator: AsyncIterator<ModelEvent> | undefined): void {
  try {
    void Promise.resolve(iterator?.return?.()).catch(() => undefined);
  } catch {
    // A `return` that throws at once is as harmless as one that rejects.
  }
}
