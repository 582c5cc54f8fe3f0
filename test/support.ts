// Helpers shared by test files across folders.
import { type Model, type ModelEvent, type ModelRequest, ScriptedModel } from "../src/index.js";

/** Every item of an async iterable (a model stream, a run's events), in order. */
export async function collectAll<T>(items: AsyncIterable<T>): Promise<T[]> {
  const list: T[] = [];
  for await (const item of items) list.push(item);
  return list;
}

/** The events of one model call. */
export function streamEvents(model: Model, request: ModelRequest): Promise<ModelEvent[]> {
  return collectAll(model.stream(request));
}

/** A ScriptedModel as a plain Model, and the scripted model itself (`holder.current.requests`: the requests it got). */
export function observedScript(entries: string[], options?: { chunkDelayMs?: number }) {
  const scripted = new ScriptedModel(entries, options);
  const model: Model = { provider: scripted.provider, modelId: scripted.modelId, stream: (request) => scripted.stream(request) };
  return { model, holder: { current: scripted as ScriptedModel | undefined } };
}
