/**
 * Model fallback: `withFallback([primary, secondary, …])` is one `Model` that sends each request to
 * the first model, and when that call fails in a way another provider could serve (rate limit,
 * server error or overload, timeout, connection failure) — after the model's own retry policy gave
 * up — sends the same request to the next one (each adapter translates it to its own wire format).
 * Never once anything of the answer reached the caller: a call that already streamed text, reasoning
 * or a tool call ends with its error.
 */
import type { AgentLoopError, ErrorKind } from "../errors.js";
import type { Model, ModelEvent, ModelFallback, ModelRequest } from "./model.js";

/** The failures a fallback answers: what another provider may well serve right now. */
const fallbackKinds: ReadonlySet<ErrorKind> = new Set<ErrorKind>(["rate_limit", "server", "network", "timeout"]);

/** True when `error` lets the next model take the request. */
export function fallsBack(error: AgentLoopError): boolean {
  return fallbackKinds.has(error.kind);
}

/** `provider:model`, as events name a model. */
export const modelName = (model: Model) => `${model.provider}:${model.modelId}`;

export class FallbackModel implements Model {
  readonly provider: string;
  readonly modelId: string;
  readonly supportsStructuredOutput: boolean;

  constructor(readonly models: readonly Model[]) {
    if (models.length === 0) throw new TypeError("withFallback: give at least one model");
    for (const model of models) {
      if (!model || typeof model.stream !== "function") throw new TypeError("withFallback: every model must implement Model (a stream(request) method)");
    }
    this.provider = models[0].provider;
    this.modelId = models[0].modelId;
    this.supportsStructuredOutput = models.every((model) => model.supportsStructuredOutput === true);
  }

  forRun(): Model {
    return new FallbackModel(this.models.map((model) => model.forRun?.() ?? model));
  }

  async *stream(request: ModelRequest): AsyncGenerator<ModelEvent> {
    for (let index = 0; index < this.models.length; index++) {
      const model = this.models[index];
      const next = this.models[index + 1];
      // `response-start` says nothing of the answer yet: held back until something else comes.
      let start: ModelEvent | undefined;
      let delivered = false;
      let fellBack = false;
      for await (const event of model.stream(request)) {
        if (!delivered && event.type === "response-start") {
          start = event;
          continue;
        }
        if (!delivered && event.type === "error" && next && fallsBack(event.error) && !request.signal?.aborted) {
          const fallback: ModelFallback = { from: modelName(model), to: modelName(next), reason: event.error.message, error: event.error };
          request.onFallback?.(fallback);
          fellBack = true;
          break;
        }
        if (start) {
          yield start;
          start = undefined;
        }
        delivered = true;
        yield event;
      }
      if (!fellBack) return;
    }
  }
}

/** One model over several: the next takes a request the one before could not serve (see `FallbackModel`). */
export function withFallback(models: readonly Model[]): Model {
  return models.length === 1 ? models[0] : new FallbackModel(models);
}
