import { onAbort } from "../abort.js";
import { abortError } from "../errors.js";
import type { ImagePart, Message, TextPart, ToolCallPart, ToolResultMessage } from "../messages.js";
import { parseToolArguments } from "../tools/parse-arguments.js";
import type { Tool, ToolContext, TruncationOptions } from "../tools/tool.js";
import { type Validation, validateArguments, validateArgumentsNow, validatorReady } from "../tools/validate.js";
import type { ApprovalScope } from "./approvals.js";
import { applyBindings } from "./bindings.js";
import { type NestedResume, type RunCheckpoint, ToolInterrupt } from "./checkpoint.js";
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
  /** Abort listeners for `signal` without an EventTarget registration (the run's); else `onAbort`. */
  onAbort?: (listener: () => void) => () => void;
  emit(event: LoopEvent): void;
  /** What the wave's guardrails and approvals decided per call id (src/loop/approvals.ts). */
  presets?: ReadonlyMap<string, CallPreset>;
  /** The run's approvals, handed on to sub-agents through the tool context. */
  approvals?: ApprovalScope;
}

/** A call decided before its wave: run with these arguments (a sub-agent maybe resumed), or this error result. */
export type CallPreset = { args: unknown; resume?: NestedResume } | { error: string; kind: ToolErrorKind };

export interface CallOutcome {
  call: ToolCallPart;
  /** Parsed (and bound) arguments, or the raw text when they could not be parsed. */
  arguments: unknown;
  result: ToolResultMessage;
  /** The call's sub-agent stopped for approvals: its checkpoint (the call has no result yet). */
  interrupt?: RunCheckpoint;
}

interface Settled {
  content: string | Array<TextPart | ImagePart>;
  isError: boolean;
  errorKind?: ToolErrorKind;
  structured?: unknown;
  interrupt?: RunCheckpoint;
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

/** One call on its way through prepare → execute → finalize. */
interface CallState {
  call: ToolCallPart;
  tool: Tool<any> | undefined;
  action: "tool_call" | "delegate";
  /**
   * When the tool started executing (`performance.now()`): `durationMs` measures the execution only,
   * never the wait for a validator to compile or for the rest of the wave to be prepared.
   */
  started: number;
  /** Parsed (and bound) arguments once prepared; the raw text until then. */
  args: unknown;
  /** Once the call has settled (finished, timed out, cancelled), a tool still running is ignored. */
  settled: boolean;
}

/** Emits the call's progress block. */
function begin(call: ToolCallPart, settings: WaveSettings): CallState {
  const tool = settings.tools.get(call.name);
  const action = tool?.action ?? "tool_call";
  // The seeds' progress block names the agent for a delegation ("worker"), the tool otherwise.
  const target = action === "delegate" ? call.name.replace(/^delegate_to_/, "") : call.name;
  settings.emit({ type: "progress", step: settings.step, max_steps: settings.maxSteps, action, target, runId: settings.run.runId, toolCallId: call.id });
  return { call, tool, action, started: performance.now(), args: call.arguments, settled: false };
}

/** Emits the call's tool-start and starts its clock (restarted when the tool itself starts). */
function emitStart(state: CallState, settings: WaveSettings): void {
  const { call, tool } = state;
  state.started = performance.now();
  settings.emit({ type: "tool-start", runId: settings.run.runId, step: settings.step, toolCallId: call.id, name: call.name, arguments: state.args, kind: tool?.kind, action: state.action });
}

function cancelled(settings: WaveSettings): Settled {
  return { content: `Cancelled: ${abortError(settings.signal).message}`, isError: true, errorKind: "cancelled" };
}

function failed(kind: ToolErrorKind, message: string): Settled {
  return { content: message, isError: true, errorKind: kind };
}

/** A tool's exception as its result. */
function thrown(error: unknown, settings: WaveSettings): Settled {
  if (error instanceof ToolFailure) return failed(error.kind, error.message);
  if (error instanceof ToolInterrupt) return { content: "Interrupted: waiting for approval", isError: true, errorKind: "cancelled", interrupt: error.checkpoint };
  if (settings.signal.aborted) return cancelled(settings);
  const message = error instanceof Error ? `${error.name}: ${error.message}` : `Error: ${String(error)}`;
  return failed("threw", message);
}

/**
 * Prepare: find the tool, read and bind the arguments, validate them. `undefined` when the call
 * may run (its arguments are in `state.args`), its result when it may not. Synchronous once the
 * tool's validator is compiled; never rejects.
 */
function prepare(state: CallState, settings: WaveSettings): Settled | undefined | Promise<Settled | undefined> {
  const { call, tool } = state;
  try {
    if (settings.signal.aborted) return cancelled(settings);
    if (!tool) {
      const names = [...settings.tools.keys()];
      return failed("unknown_tool", `Unknown tool: ${call.name}. Available tools: ${names.length ? names.join(", ") : "(none)"}`);
    }
    const preset = settings.presets?.get(call.id);
    if (preset) {
      if ("error" in preset) return failed(preset.kind, preset.error);
      state.args = preset.args;
      return undefined;
    }
    const parsed = parseToolArguments(call.arguments);
    if (!parsed.ok) return failed("invalid_arguments", `Invalid arguments for tool ${call.name}: ${parsed.error}`);
    const bound = applyBindings(parsed.value, tool.bindings, settings.inputs);
    const validation = validateArgumentsNow(tool, bound);
    if (validation) return validated(state, validation);
    return validateArguments(tool, bound).then(
      (result) => validated(state, result),
      (error: unknown) => failed("threw", String(error)),
    );
  } catch (error) {
    return failed("threw", String(error));
  }
}

/** The end of preparation: the validated arguments, or the schema failure as the call's result. */
function validated(state: CallState, result: Validation): Settled | undefined {
  if (!result.ok) return failed("schema", `Invalid arguments for tool ${state.call.name}: ${result.error}`);
  state.args = result.value;
  return undefined;
}

function toolContext(state: CallState, settings: WaveSettings, signal: AbortSignal): ToolContext {
  const { call } = state;
  return {
    signal,
    runId: settings.run.runId,
    toolCallId: call.id,
    idempotencyKey: `${settings.run.runId}:${call.id}`,
    toolName: call.name,
    step: settings.step,
    inputs: settings.inputs,
    depth: settings.depth,
    agentPath: settings.agentPath,
    services: settings.services,
    messages: settings.messages,
    progress: progressOf(state, settings),
    nested: nestedOf(state, settings),
    approvals: settings.approvals,
    resume: settings.presets && resumeOf(settings.presets.get(call.id)),
  };
}

// Made by functions, so the closures stay anonymous (no name defined on each under a keepNames build).
function progressOf(state: CallState, settings: WaveSettings): ToolContext["progress"] {
  return (data) => {
    if (!state.settled) settings.emit({ type: "tool-progress", runId: settings.run.runId, toolCallId: state.call.id, name: state.call.name, data });
  };
}

function nestedOf(state: CallState, settings: WaveSettings): ToolContext["nested"] {
  return (agent, event) => {
    if (!state.settled) settings.emit({ type: "nested", runId: settings.run.runId, toolCallId: state.call.id, agent, event });
  };
}

function resumeOf(preset: CallPreset | undefined): NestedResume | undefined {
  return preset && "args" in preset ? preset.resume : undefined;
}

function noop(): void {}

function abortAll(running: Running[], settings: WaveSettings): void {
  for (const entry of running) {
    entry.aborted = true;
    entry.stop?.(cancelFailure(settings));
  }
}

/** A call running on the run's own signal (no timeout of its own). */
interface Running {
  state: CallState;
  context: ToolContext;
  /** The run aborted after this call was set to start. */
  aborted: boolean;
  /** Ends the call's race, once its tool has returned a promise. */
  stop?: (reason: ToolFailure) => void;
}

/**
 * Execute prepared calls (`null` entries are not run); never throws. Tools start back to back, in
 * order, after one abort listener for all of them: an abort while they run cancels them, even a
 * tool that reacts first (by resolving in its own listener). A tool that answers synchronously
 * settles at once, without a promise; one that returns a promise races the signal, so a tool that
 * ignores it cannot hold the wave. A call with a timeout gets a signal of its own.
 */
function executeAll(states: Array<CallState | null>, settings: WaveSettings): Array<Settled | Promise<Settled> | undefined> {
  const signal = settings.signal;
  const results = new Array<Settled | Promise<Settled> | undefined>(states.length);
  const running: Running[] = [];
  for (const state of states) {
    // Contexts first, so the tools start as close together as they can.
    if (state && !(state.tool!.timeoutMs ?? settings.toolTimeoutMs)) running.push({ state, context: toolContext(state, settings, signal), aborted: false });
  }
  // One listener for the whole group: a wave of many calls adds one, not one per call.
  let unlink: () => void = noop;
  if (running.length > 0) {
    unlink = settings.onAbort ? settings.onAbort(() => abortAll(running, settings)) : onAbort(signal, () => abortAll(running, settings));
  }
  const races: Array<{ index: number; entry: Running; output: PromiseLike<unknown> }> = [];
  let next = 0;
  for (let index = 0; index < states.length; index++) {
    const state = states[index];
    if (!state) continue;
    const timeoutMs = state.tool!.timeoutMs ?? settings.toolTimeoutMs;
    if (timeoutMs) {
      results[index] = executeWithTimeout(state, settings, timeoutMs);
      continue;
    }
    const entry = running[next++];
    // A tool earlier in the wave may have aborted the run: the rest do not start.
    if (entry.aborted) {
      state.settled = true;
      results[index] = cancelled(settings);
      continue;
    }
    try {
      state.started = performance.now();
      const output = state.tool!.execute(state.args, entry.context);
      if (entry.aborted || !isThenable(output)) {
        state.settled = true;
        results[index] = entry.aborted ? cancelled(settings) : normalizeOutput(output);
      } else races.push({ index, entry, output });
    } catch (error) {
      state.settled = true;
      results[index] = thrown(error, settings);
    }
  }
  // The listener stays until the last promise of the group settled.
  let open = races.length;
  if (open === 0) unlink();
  for (const { index, entry, output } of races) {
    const stopped = new Promise<never>((_, reject) => {
      entry.stop = reject;
      if (entry.aborted) reject(cancelFailure(settings));
    });
    results[index] = settle(
      output,
      stopped,
      entry.state,
      settings,
      () => {
        if (--open === 0) unlink();
      },
      entry,
    );
  }
  return results;
}

/** One prepared call (the instrumented and the pooled path). */
function execute(state: CallState, settings: WaveSettings): Settled | Promise<Settled> {
  return executeAll([state], settings)[0]!;
}

function cancelFailure(settings: WaveSettings): ToolFailure {
  return new ToolFailure("cancelled", `Cancelled: ${abortError(settings.signal).message}`);
}

/** With a timeout the call gets its own signal, aborted by the run's or by the timer. */
function executeWithTimeout(state: CallState, settings: WaveSettings, timeoutMs: number): Promise<Settled> {
  const { call, tool } = state;
  const controller = new AbortController();
  const unlink = onAbort(settings.signal, () => controller.abort(settings.signal.reason));
  const timer = setTimeout(() => controller.abort(new ToolFailure("timeout", `Tool ${call.name} timed out after ${timeoutMs} ms`)), timeoutMs);
  const signal = controller.signal;
  const context = toolContext(state, settings, signal);
  const work = Promise.resolve().then(() => {
    state.started = performance.now();
    return tool!.execute(state.args, context);
  });
  let dispose = () => {};
  const stopped = new Promise<never>((_, reject) => {
    dispose = onAbort(signal, () => reject(signal.reason instanceof ToolFailure ? signal.reason : cancelFailure(settings)));
  });
  return settle(work, stopped, state, settings, () => {
    clearTimeout(timer);
    unlink();
    dispose();
  });
}

/** The tool's promise against the call's stop (abort or timeout); settles the call and cleans up either way. */
async function settle(
  output: PromiseLike<unknown>,
  stopped: Promise<never>,
  state: CallState,
  settings: WaveSettings,
  cleanup: () => void,
  running?: Running,
): Promise<Settled> {
  try {
    const work = Promise.resolve(output);
    work.catch(() => undefined);
    stopped.catch(() => undefined);
    const value = await Promise.race([work, stopped]);
    // The run's listeners run after the signal's: a tool that resolved in its own abort listener
    // won the race, but the call was still aborted while it ran.
    if (running?.aborted) return cancelled(settings);
    return normalizeOutput(value);
  } catch (error) {
    return thrown(error, settings);
  } finally {
    state.settled = true;
    cleanup();
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/** Finalize: the result the model sees (truncated) and the call's closing events. */
function finish(state: CallState, settled: Settled, output: string, settings: WaveSettings): CallOutcome {
  const { call, tool } = state;
  // A sub-agent waiting for approvals: no result yet, the resumed run ends the call.
  if (settled.interrupt) return { call, arguments: state.args, result: { role: "tool", toolCallId: call.id, toolName: call.name, content: output, isError: true }, interrupt: settled.interrupt };
  const { run, step, emit } = settings;
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
    emit({ type: "tool-error", runId: run.runId, toolCallId: call.id, name: call.name, kind: settled.errorKind ?? "threw", message: output });
  }
  emit({
    type: "tool-end",
    runId: run.runId,
    step,
    toolCallId: call.id,
    name: call.name,
    action: state.action,
    output,
    result,
    isError: settled.isError,
    errorKind: settled.errorKind,
    truncated,
    durationMs: Math.round((performance.now() - state.started) * 100) / 100,
    structured: settled.structured,
  });
  return { call, arguments: state.args, result };
}

/** Runs one call through prepare → execute → finalize, emitting its events. Never throws. */
async function runCall(call: ToolCallPart, settings: WaveSettings): Promise<CallOutcome> {
  const state = begin(call, settings);
  let startEmitted = false;
  const start = () => {
    if (startEmitted) return;
    startEmitted = true;
    emitStart(state, settings);
  };
  type Outcome = ToolCallOutcome & { settled: Settled };
  const outcomeOf = (settled: Settled): Outcome => ({ isError: settled.isError, errorKind: settled.errorKind, output: plainText(settled.content), settled });
  let finished: Outcome | undefined;
  const body = async (): Promise<Outcome> => {
    let settled = await prepare(state, settings);
    start();
    if (!settled) {
      // One turn later, so the calls started alongside announce themselves before this one runs.
      await undefined;
      settled = await execute(state, settings);
    }
    finished = outcomeOf(settled);
    return finished;
  };
  let outcome: Outcome;
  if (settings.instrumentation) {
    // The validator compiles before the call's span opens: its cost is the agent's, not the tool's.
    const ready = state.tool && validatorReady(state.tool);
    if (ready) await ready;
    try {
      outcome = (await settings.instrumentation.toolCall(
        { ...settings.run, toolCallId: call.id, toolName: call.name, kind: state.tool?.kind, arguments: state.args, services: settings.services },
        body,
      )) as Outcome;
    } catch (error) {
      // A broken wrapper (a tracer) must not cost the call: keep its result if it ran, else report it.
      start();
      const message = error instanceof Error ? error.message : String(error);
      outcome = finished ?? outcomeOf({ content: `Error: instrumentation failed: ${message}`, isError: true, errorKind: "threw" });
    }
  } else {
    outcome = await body();
  }
  return finish(state, outcome.settled, outcome.output, settings);
}

/**
 * A group whose calls all run at once, without instrumentation: every progress block, then every
 * tool-start, then every call starts, then each finishes as it settles. Calls that settle
 * synchronously (answers, failed preparation) cost no promise at all.
 */
async function runAtOnce(group: ToolCallPart[], settings: WaveSettings): Promise<CallOutcome[]> {
  const states = group.map((call) => begin(call, settings));
  // Validators compile in the background from the agent's construction; an early wave may wait for them.
  let compiling: Array<Promise<unknown>> | undefined;
  for (const state of states) {
    const ready = state.tool && validatorReady(state.tool);
    if (ready) (compiling ??= []).push(ready);
  }
  if (compiling) await Promise.all(compiling);
  let prepared: Array<Settled | undefined | Promise<Settled | undefined>> = states.map((state) => prepare(state, settings));
  if (prepared.some((entry) => entry instanceof Promise)) prepared = await Promise.all(prepared);
  for (const state of states) emitStart(state, settings);
  const executed = executeAll(
    states.map((state, index) => (prepared[index] ? null : state)),
    settings,
  );
  const settling = states.map((_, index) => (prepared[index] as Settled | undefined) ?? executed[index]!);
  const outcomes = new Array<CallOutcome>(states.length);
  let pending: Array<Promise<void>> | undefined;
  for (let index = 0; index < states.length; index++) {
    const entry = settling[index];
    const state = states[index];
    if (entry instanceof Promise) {
      (pending ??= []).push(
        entry.then((settled) => {
          outcomes[index] = finish(state, settled, plainText(settled.content), settings);
        }),
      );
    } else outcomes[index] = finish(state, entry, plainText(entry.content), settings);
  }
  if (pending) await Promise.all(pending);
  return outcomes;
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
  if (groups.length === 1 && !settings.instrumentation && settings.concurrency >= calls.length) return runAtOnce(calls, settings);
  const outcomes: CallOutcome[] = [];
  for (const group of groups) {
    if (!settings.instrumentation && settings.concurrency >= group.length) outcomes.push(...(await runAtOnce(group, settings)));
    else outcomes.push(...(await pooled(group.map((call) => () => runCall(call, settings)), settings.concurrency)));
  }
  return outcomes;
}

/** Results for calls that will not run (a budget or limit stopped the wave, or the run aborted). */
export function cancelledResults(calls: ToolCallPart[], reason: string): ToolResultMessage[] {
  return calls.map((call) => ({ role: "tool", toolCallId: call.id, toolName: call.name, content: `Cancelled: ${reason}`, isError: true }));
}
