import { onAbort } from "../abort.js";
import { abortError } from "../errors.js";
import type { ImagePart, Message, TextPart, ToolCallPart, ToolResultMessage } from "../messages.js";
import { parseToolArguments } from "../tools/parse-arguments.js";
import type { Tool, ToolContext, TruncationOptions } from "../tools/tool.js";
import { validateArguments } from "../tools/validate.js";
import { applyBindings } from "./bindings.js";
import type { LoopEvent, ToolErrorKind } from "./events.js";
import { truncateOutput } from "./truncate.js";
import type { Instrumentation, RunInfo, ToolCallOutcome } from "./types.js";

export interface WaveSettings {
  run: RunInfo;
  step: number;
  maxSteps: number;
  tools: ReadonlyMap<string, Tool<any>>;
  inputs: Record<string, unknown>;
  signal: AbortSignal;
  concurrency: number;
  toolTimeoutMs?: number;
  truncation?: TruncationOptions;
  depth: number;
  agentPath: readonly string[];
  services: Record<string, unknown>;
  messages: readonly Message[];
  instrumentation?: Instrumentation;
  emit(event: LoopEvent): void;
}

export interface CallOutcome {
  call: ToolCallPart;
  /** Parsed (and bound) arguments, or the raw text when they could not be parsed. */
  arguments: unknown;
  result: ToolResultMessage;
}

interface Settled {
  content: string | Array<TextPart | ImagePart>;
  isError: boolean;
  errorKind?: ToolErrorKind;
  structured?: unknown;
}

class ToolFailure extends Error {
  constructor(
    readonly kind: ToolErrorKind,
    message: string,
  ) {
    super(message);
  }
}

function plainText(content: string | Array<TextPart | ImagePart>): string {
  if (typeof content === "string") return content;
  return content.map((part) => (part.type === "text" ? part.text : `[image${part.mediaType ? ` ${part.mediaType}` : ""}]`)).join("\n");
}

/** Normalizes whatever a tool returned into content for the model. */
function normalizeOutput(output: unknown): Settled {
  if (typeof output === "string") return { content: output, isError: false };
  if (output === undefined || output === null) return { content: "", isError: false };
  if (typeof output === "object" && "content" in output) {
    const value = output as { content: unknown; isError?: unknown; structured?: unknown };
    if (typeof value.content === "string" || Array.isArray(value.content)) {
      const isError = value.isError === true;
      return {
        content: value.content as Settled["content"],
        isError,
        errorKind: isError ? "error_result" : undefined,
        structured: value.structured,
      };
    }
  }
  return { content: JSON.stringify(output) ?? String(output), isError: false, structured: output };
}

/** Prepare: find the tool, read and bind the arguments, validate them. Throws ToolFailure. */
async function prepare(call: ToolCallPart, settings: WaveSettings): Promise<{ tool: Tool<any>; args: Record<string, unknown> }> {
  const tool = settings.tools.get(call.name);
  if (!tool) {
    const names = [...settings.tools.keys()];
    throw new ToolFailure("unknown_tool", `Unknown tool: ${call.name}. Available tools: ${names.length ? names.join(", ") : "(none)"}`);
  }
  const parsed = parseToolArguments(call.arguments);
  if (!parsed.ok) throw new ToolFailure("invalid_arguments", `Invalid arguments for tool ${call.name}: ${parsed.error}`);
  const bound = applyBindings(parsed.value, tool.bindings, settings.inputs);
  const validation = await validateArguments(tool, bound);
  if (!validation.ok) throw new ToolFailure("schema", `Invalid arguments for tool ${call.name}: ${validation.error}`);
  return { tool, args: validation.value };
}

/** Execute one call with its timeout and the run's abort signal; never throws. */
async function execute(call: ToolCallPart, tool: Tool<any>, args: Record<string, unknown>, settings: WaveSettings): Promise<Settled> {
  const timeoutMs = tool.timeoutMs ?? settings.toolTimeoutMs;
  // Without a timeout the call uses the run's signal as is: no per-call controller on the hot path.
  let signal = settings.signal;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let unlink = () => {};
  if (timeoutMs) {
    const controller = new AbortController();
    unlink = onAbort(settings.signal, () => controller.abort(settings.signal.reason));
    timer = setTimeout(() => controller.abort(new ToolFailure("timeout", `Tool ${call.name} timed out after ${timeoutMs} ms`)), timeoutMs);
    signal = controller.signal;
  }
  const context: ToolContext = {
    signal,
    runId: settings.run.runId,
    toolCallId: call.id,
    toolName: call.name,
    step: settings.step,
    inputs: settings.inputs,
    depth: settings.depth,
    agentPath: settings.agentPath,
    services: settings.services,
    messages: settings.messages,
    // Once the call has settled (finished, timed out, cancelled), a tool still running is ignored.
    progress: (data) => {
      if (!settled) settings.emit({ type: "tool-progress", runId: settings.run.runId, toolCallId: call.id, name: call.name, data });
    },
    nested: (agent, event) => {
      if (!settled) settings.emit({ type: "nested", runId: settings.run.runId, toolCallId: call.id, agent, event });
    },
  };
  let settled = false;
  let dispose = () => {};
  try {
    // A tool that ignores its signal cannot hold the wave: the race ends when the signal fires.
    const work = Promise.resolve().then(() => tool.execute(args, context));
    const stopped = new Promise<never>((_, reject) => {
      dispose = onAbort(signal, () =>
        reject(signal.reason instanceof ToolFailure ? signal.reason : new ToolFailure("cancelled", `Cancelled: ${abortError(settings.signal).message}`)),
      );
    });
    work.catch(() => undefined);
    stopped.catch(() => undefined);
    return normalizeOutput(await Promise.race([work, stopped]));
  } catch (error) {
    if (error instanceof ToolFailure) return { content: error.message, isError: true, errorKind: error.kind };
    if (settings.signal.aborted) return { content: `Cancelled: ${abortError(settings.signal).message}`, isError: true, errorKind: "cancelled" };
    const message = error instanceof Error ? `${error.name === "Error" ? "Error" : error.name}: ${error.message}` : `Error: ${String(error)}`;
    return { content: message, isError: true, errorKind: "threw" };
  } finally {
    settled = true;
    clearTimeout(timer);
    unlink();
    dispose();
  }
}

/** Runs one call through prepare → execute → finalize, emitting its events. Never throws. */
async function runCall(call: ToolCallPart, settings: WaveSettings): Promise<CallOutcome> {
  const { run, step, emit } = settings;
  const tool = settings.tools.get(call.name);
  const action = tool?.action ?? "tool_call";
  // The seeds' progress block names the agent for a delegation ("worker"), the tool otherwise.
  const target = action === "delegate" ? call.name.replace(/^delegate_to_/, "") : call.name;
  emit({ type: "progress", step, max_steps: settings.maxSteps, action, target, runId: run.runId, toolCallId: call.id });
  const started = performance.now();
  let args: unknown = call.arguments;
  let startEmitted = false;
  const emitStart = () => {
    if (startEmitted) return;
    startEmitted = true;
    emit({ type: "tool-start", runId: run.runId, step, toolCallId: call.id, name: call.name, arguments: args, kind: tool?.kind, action });
  };
  type Outcome = ToolCallOutcome & { settled: Settled };
  const outcomeOf = (settled: Settled): Outcome => ({ isError: settled.isError, errorKind: settled.errorKind, output: plainText(settled.content), settled });
  let finished: Outcome | undefined;
  const body = async (): Promise<Outcome> => {
    let settled: Settled;
    if (settings.signal.aborted) {
      emitStart();
      settled = { content: `Cancelled: ${abortError(settings.signal).message}`, isError: true, errorKind: "cancelled" };
    } else {
      try {
        const prepared = await prepare(call, settings);
        args = prepared.args;
        emitStart();
        settled = await execute(call, prepared.tool, prepared.args, settings);
      } catch (error) {
        const failure = error instanceof ToolFailure ? error : new ToolFailure("threw", String(error));
        emitStart();
        settled = { content: failure.message, isError: true, errorKind: failure.kind };
      }
    }
    finished = outcomeOf(settled);
    return finished;
  };
  let outcome: Outcome;
  if (settings.instrumentation) {
    try {
      outcome = (await settings.instrumentation.toolCall(
        { ...run, toolCallId: call.id, toolName: call.name, kind: tool?.kind, arguments: args, services: settings.services },
        body,
      )) as Outcome;
    } catch (error) {
      // A broken wrapper (a tracer) must not cost the call: keep its result if it ran, else report it.
      emitStart();
      const message = error instanceof Error ? error.message : String(error);
      outcome = finished ?? outcomeOf({ content: `Error: instrumentation failed: ${message}`, isError: true, errorKind: "threw" });
    }
  } else {
    outcome = await body();
  }
  const { settled } = outcome;
  const limits = tool?.truncation ?? settings.truncation;
  let truncated = false;
  let content = settled.content;
  if (typeof content === "string") {
    const cut = truncateOutput(content, call.name, limits);
    content = cut.text;
    truncated = cut.truncated;
  } else {
    content = content.map((part) => {
      if (part.type !== "text") return part;
      const cut = truncateOutput(part.text, call.name, limits);
      truncated ||= cut.truncated;
      return { ...part, text: cut.text };
    });
  }
  const result: ToolResultMessage = { role: "tool", toolCallId: call.id, toolName: call.name, content };
  if (settled.isError) {
    result.isError = true;
    emit({ type: "tool-error", runId: run.runId, toolCallId: call.id, name: call.name, kind: settled.errorKind ?? "threw", message: outcome.output });
  }
  emit({
    type: "tool-end",
    runId: run.runId,
    step,
    toolCallId: call.id,
    name: call.name,
    action,
    output: outcome.output,
    result,
    isError: settled.isError,
    errorKind: settled.errorKind,
    truncated,
    durationMs: Math.round((performance.now() - started) * 100) / 100,
    structured: settled.structured,
  });
  return { call, arguments: args, result };
}

/** Runs `tasks` with at most `limit` in flight; results in input order. */
async function pooled<T>(tasks: Array<() => Promise<T>>, limit: number): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next++;
      results[index] = await tasks[index]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), tasks.length) }, worker));
  return results;
}

/**
 * One wave: every call of one model response, concurrently (up to `concurrency`), with a
 * `sequential` tool acting as a barrier. Results come back in the order the model asked for them.
 */
export async function runWave(calls: ToolCallPart[], settings: WaveSettings): Promise<CallOutcome[]> {
  const groups: ToolCallPart[][] = [];
  for (const call of calls) {
    const sequential = settings.tools.get(call.name)?.sequential === true;
    const last = groups.at(-1);
    if (sequential || !last || (last.length === 1 && settings.tools.get(last[0].name)?.sequential)) groups.push([call]);
    else last.push(call);
  }
  const outcomes: CallOutcome[] = [];
  for (const group of groups) {
    outcomes.push(...(await pooled(group.map((call) => () => runCall(call, settings)), settings.concurrency)));
  }
  return outcomes;
}

/** Results for calls that will not run (a budget or limit stopped the wave, or the run aborted). */
export function cancelledResults(calls: ToolCallPart[], reason: string): ToolResultMessage[] {
  return calls.map((call) => ({ role: "tool", toolCallId: call.id, toolName: call.name, content: `Cancelled: ${reason}`, isError: true }));
}
