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

/** A ScriptedModel whose per-run copy stays reachable, to inspect the requests it got. */
export function observedScript(entries: string[], options?: { chunkDelayMs?: number }) {
  const scripted = new ScriptedModel(entries, options);
  const holder: { current?: ScriptedModel } = {};
  const model: Model = {
    provider: scripted.provider,
    modelId: scripted.modelId,
    stream: (request) => (holder.current ??= scripted.forRun()).stream(request),
    forRun() {
      holder.current = scripted.forRun();
      return holder.current;
    },
  };
  return { model, holder };
}
