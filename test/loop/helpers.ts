import { sleep } from "../../src/abort.js";
import { defineTool, type LoopEvent, type Model, type ModelRequest, type Run, ScriptedModel, type Tool } from "../../src/index.js";

/** A script entry asking for tool calls, in the DEBUG_MOCK_RESPONSES format. */
export function calls(...list: Array<[name: string, args: unknown, id?: string]>): string {
  return JSON.stringify({ tool_calls: list.map(([name, args, id]) => ({ ...(id ? { id } : {}), name, arguments: args })) });
}

/** A tool that waits `ms` (honouring the abort signal) and echoes its arguments; records its calls. */
export function waitingTool(name: string, ms: number, options: Partial<Tool> = {}) {
  const log: Array<{ args: Record<string, unknown>; startedAt: number; endedAt?: number; aborted?: boolean }> = [];
  const tool = defineTool({
    name,
    description: `waits ${ms} ms`,
    parameters: { type: "object", properties: { value: {} } },
    async execute(args, context) {
      const entry: (typeof log)[number] = { args, startedAt: performance.now() };
      log.push(entry);
      await sleep(typeof args.ms === "number" ? args.ms : ms, context.signal);
      entry.endedAt = performance.now();
      entry.aborted = context.signal.aborted;
      return `${name}:${JSON.stringify(args)}`;
    },
    ...options,
  });
  return { tool, log };
}

export async function eventsOf(run: Run): Promise<LoopEvent[]> {
  const events: LoopEvent[] = [];
  for await (const event of run) events.push(event);
  return events;
}

export function ofType<T extends LoopEvent["type"]>(events: LoopEvent[], type: T): Array<Extract<LoopEvent, { type: T }>> {
  return events.filter((event): event is Extract<LoopEvent, { type: T }> => event.type === type);
}

/**
 * A model that answers entry k after the result of call `c<k>` (entry 0 when the last message is no
 * result). A ScriptedModel counts the turns it sees after the input, so a request that lost rounds of
 * the input to the budget would make it answer the wrong entry.
 */
export function byLastResult(scripted: string[]): Model & { requests: ModelRequest[] } {
  return {
    provider: "test",
    modelId: "by-last-result",
    requests: [] as ModelRequest[],
    stream(request: ModelRequest) {
      this.requests.push(request);
      const last = request.messages.at(-1);
      const step = last?.role === "tool" ? Number(last.toolCallId.slice(1)) : 0;
      return new ScriptedModel([scripted[step]!]).stream({ messages: [] });
    },
  };
}

