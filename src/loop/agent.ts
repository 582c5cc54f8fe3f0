import { randomUUID } from "node:crypto";
import { delegateTool } from "../agents/local.js";
import { AgentLoopError } from "../errors.js";
import { type AssistantPart, type Message, textOf, toolCallsOf, type ToolCallPart } from "../messages.js";
import { type Model, type ModelFallback, type ModelRequest, type ModelResponse, STEP_LIMIT_FINISH, type ToolDefinition } from "../model/model.js";
import { FallbackModel, withFallback } from "../model/fallback.js";
import { scriptedModelFromEnv } from "../model/scripted.js";
import type { Tool } from "../tools/tool.js";
import { addUsage, emptyUsage } from "../usage.js";
import { type ApprovalScope, runControlledWave, type WaveResume } from "./approvals.js";
import { checkAgentConfig } from "./config.js";
import { ContextWindow } from "./context.js";
import { claimCheckpoint, type RunCheckpoint } from "./checkpoint.js";
import { resolveInstrumentation } from "./global-tracing.js";
import { AnswerBuffer, evaluate } from "./guardrails.js";
import type { RunResult, TerminalState } from "./events.js";
import { callSignature, detectLoop, signatureName } from "./loop-detection.js";
import { type OutputContract, outputContract, parseAnswer, reaskMessage, withOutput } from "./output.js";
import { checkpointOf, type ResumableRun, restoreRun, resumedBefore, resumedWave } from "./resume.js";
import { Run, type RunControl } from "./run.js";
import { Toolbox } from "./toolbox.js";
import { trackTranscript } from "./transcript.js";
import { abortReason, noop, streamTurn } from "./turn.js";
import type { AgentConfig, Instrumentation, ResumeOptions, RunInfo, RunOptions, SessionMemory } from "./types.js";
import { cancelledResults } from "./wave.js";

const DEFAULT_MAX_TURNS = 10;
const DEFAULT_LOOP_WINDOW = 10;

/** How one input ended. */
interface Outcome {
  state: TerminalState;
  reason: string;
  error?: AgentLoopError;
}

/** Mutable state of one run, shared by the loop's helpers. */
interface RunContext extends ResumableRun {
  control: RunControl;
  info: RunInfo;
  options: RunOptions;
  services: Record<string, unknown>;
  agentPath: readonly string[];
  window: ContextWindow;
  /** What the final answer must match (`RunOptions.output`, else `AgentConfig.output`). */
  contract?: OutputContract;
  /** The current input's validated structured answer. */
  output?: unknown;
  /** The configured instrumentation, or the global tracer provider's (see global-tracing.ts). */
  instrumentation: Instrumentation | undefined;
  approvals: ApprovalScope;
  /** Set by a guardrail that ended the input (the output guardrail decides inside the model call). */
  stop?: Outcome;
  /** Set when the run stops for approvals. */
  checkpoint?: RunCheckpoint;
}

/**
 * An agent: a model, instructions and tools, plus the limits of its loop. `run` starts one run.
 */
export class Agent<Output = unknown> {
  readonly name: string;
  readonly description: string;
  readonly config: Readonly<AgentConfig<Output>>;
  readonly model: Model;
  /** The tools and toolsets in config order, then the delegate tools. */
  private readonly toolbox: Toolbox;
  private wrappedModel?: Model;
  private readonly output?: OutputContract;

  constructor(config: AgentConfig<Output>) {
    // A durable model (agentloop/durable) wraps the model already chosen, the scripted one included.
    const configured = Array.isArray(config.model) ? withFallback(config.model) : (config.model as Model);
    const model = (configured as { durable?: unknown } | undefined)?.durable === true ? configured : (scriptedModelFromEnv() ?? configured);
    if (!model || typeof model.stream !== "function") {
      throw new TypeError("Agent config: model must implement Model (a stream(request) method); see agentloop/providers");
    }
    this.output = checkAgentConfig(config);
    this.config = config;
    this.model = model;
    this.name = config.name ?? "agent";
    this.description = config.description ?? "";
    const sources = [...(config.tools ?? []), ...(config.subAgents ?? []).map((agent) => delegateTool(agent, { maxDepth: config.maxDelegationDepth }))];
    this.toolbox = new Toolbox(sources, this.name);
  }

  /** The tools the model sees, bound parameters hidden. Throws when a toolset's change made two tools share a name. */
  toolDefinitions(): ToolDefinition[] {
    const error = this.toolbox.sync();
    if (error) throw error;
    return this.toolbox.currentDefinitions();
  }

  /** The tools the agent can call now (toolsets' current tools included). Throws like `toolDefinitions`. */
  currentTools(): Tool<any>[] {
    const error = this.toolbox.sync();
    if (error) throw error;
    return [...this.toolbox.tools.values()];
  }

  /** Starts a run for one user input. Consume it as events (`for await`) or await its result. */
  run(input: string, options: RunOptions = {}): Run<Output> {
    if (typeof input !== "string") {
      throw new TypeError(`agent.run: the input must be a string (the user's message), got ${input === null ? "null" : typeof input}`);
    }
    if (options.runId !== undefined && (typeof options.runId !== "string" || options.runId === "")) {
      throw new TypeError(`agent.run: options.runId must be a non-empty string, got ${JSON.stringify(options.runId)}`);
    }
    // Checked now: a bad schema is the caller's error, thrown here.
    const contract = options.output !== undefined ? outputContract(options.output, "agent.run: options.output") : this.output;
    const runId = options.runId ?? `run_${randomUUID()}`;
    const fail = (error: unknown) => this.failedResult(runId, error);
    return new Run<Output>(runId, (control) => this.execute(control, input, options, undefined, contract), fail, options.signal, options.onEvent, options.approvals?.broker);
  }

  /**
   * Goes on with a run that stopped for approvals (state INTERRUPTED), in this process or another:
   * approved calls run once, rejected ones get `Rejected: <reason>`, the rest of the wave runs and
   * the loop goes on. Throws a `ResumeError` for a checkpoint resumed before (in this process; across
   * processes the session's memory refuses it: the run fails), a decision for a call that is not
   * pending, or arguments that changed since the approval was asked for.
   */
  resume(checkpoint: RunCheckpoint, options: ResumeOptions): Run {
    claimCheckpoint(checkpoint, options?.decisions, this.name);
    const runId = options.runId ?? `run_${randomUUID()}`;
    const fail = (error: unknown) => this.failedResult(runId, error);
    const runOptions: RunOptions = { ...options, sessionId: options.sessionId ?? checkpoint.sessionId, inputs: checkpoint.inputs };
    const resume = { checkpoint, decisions: options.decisions };
    return new Run(runId, (control) => this.execute(control, "", runOptions, resume, this.output), fail, options.signal, options.onEvent, options.approvals?.broker);
  }

  /** The model for one run: a fresh copy when the model offers one, wrapped in a text protocol if asked. */
  private async modelForRun(): Promise<Model> {
    const mode = this.config.toolCallMode ?? "native";
    if (mode === "native") return this.model.forRun?.() ?? this.model;
    if (!this.wrappedModel) {
      // Loaded only when asked for: the text protocols are not part of the core import.
      const { withToolCallMode } = await import("../text-tools/index.js");
      const steps = this.config.maxTurns ?? DEFAULT_MAX_TURNS;
      this.wrappedModel = withToolCallMode(this.model, mode, { maxSteps: steps, maxWaves: steps });
    }
    // One wrapper across runs, so `auto` remembers a fallback to string mode; its per-run copies share it.
    return this.wrappedModel.forRun?.() ?? this.wrappedModel;
  }

  private async execute(control: RunControl, input: string, options: RunOptions, resume?: Resume, contract?: OutputContract): Promise<RunResult> {
    const model = await this.modelForRun();
    const instrumentation = await resolveInstrumentation(this.config.instrumentation);
    const info: RunInfo = {
      runId: control.id,
      agentName: this.name,
      model,
      sessionId: options.sessionId,
      depth: options.depth ?? 0,
      parentRunId: options.parentRunId,
      parentToolCallId: options.parentToolCallId,
    };
    const observers = [...(this.config.memory && options.sessionId ? [this.config.memory] : []), ...(this.config.observers ?? [])];
    control.observe(observers, info);
    const context: RunContext = {
      control,
      info,
      options,
      messages: [],
      firstNew: 0,
      inputStart: 0,
      usage: emptyUsage(),
      turns: 0,
      toolRounds: 0,
      toolCalls: 0,
      signatures: [],
      loopWarnings: 0,
      services: options.services ?? {},
      inputs: options.inputs ?? {},
      agentPath: [...(options.agentPath ?? []), this.name],
      window: new ContextWindow(this.config.context),
      contract,
      instrumentation,
      approvals: {
        broker: control.approvals,
        mode: options.onApproval ?? options.approvals?.mode ?? this.config.onApproval ?? "wait",
        timeoutMs: options.approvalTimeoutMs ?? options.approvals?.timeoutMs ?? this.config.approvalTimeoutMs,
      },
    };
    trackTranscript(control, context.messages);
    const body = async () => {
      let outcome: Outcome;
      try {
        outcome = resume ? await this.resumeLoop(context, resume) : await this.loop(context, input);
      } catch (thrown) {
        const error = AgentLoopError.from(thrown);
        outcome = { state: "FAILED", reason: `internal error: ${error.message}`, error };
        control.emit({ type: "error", runId: control.id, error, fatal: true });
      }
      const result = resultOf(context, outcome);
      control.setState(result.state);
      control.emit({ type: "run-end", runId: control.id, state: result.state, reason: result.reason, result });
      await control.flushObservers();
      return result;
    };
    return instrumentation ? instrumentation.run({ ...info, input }, body) : body();
  }

  /** The outer loop: the first input, then each follow-up, until one does not complete. */
  private async loop(context: RunContext, input: string): Promise<Outcome> {
    const { control, info, options, messages } = context;
    control.setState("RUNNING");
    control.emit({
      type: "run-start",
      runId: control.id,
      agent: this.name,
      model: `${info.model.provider}:${info.model.modelId}`,
      input,
      sessionId: options.sessionId,
      timestamp: Date.now(),
    });
    const history = this.config.memory && options.sessionId && !options.newSession ? await loadHistory(this.config.memory, options.sessionId, control) : [];
    // Aborted while the store loaded: the run ends now, with nothing of the history in it.
    if (history === undefined) return { state: "ABORTED", reason: abortReason(control.signal) };
    if (this.config.instructions) messages.push({ role: "system", content: this.config.instructions });
    messages.push(...history, ...(options.history ?? []));
    context.firstNew = messages.length;
    return this.followUps(context, await this.input(context, input, false));
  }

  /** The outer loop of a resumed run: the stopped wave first (through the same wave gate), then on as `loop` does. */
  private async resumeLoop(context: RunContext, { checkpoint, decisions }: Resume): Promise<Outcome> {
    const { control, info, options } = context;
    control.setState("RUNNING");
    const sessionId = options.sessionId;
    const usedBefore = await resumedBefore(this.config.memory, sessionId, checkpoint);
    const resumedFrom = usedBefore ? undefined : { checkpointId: checkpoint.id, decisions };
    const model = `${info.model.provider}:${info.model.modelId}`;
    control.emit({ type: "run-start", runId: control.id, agent: this.name, model, input: "", sessionId, timestamp: Date.now(), resumedFrom });
    if (usedBefore) {
      control.emit({ type: "error", runId: control.id, error: usedBefore, fatal: true });
      return { state: "FAILED", reason: usedBefore.message, error: usedBefore };
    }
    const { turns, rounds } = restoreRun(context, checkpoint);
    return this.followUps(context, await this.runInput(context, { wave: resumedWave(checkpoint, decisions), turns, rounds }));
  }

  /** One input of the run: its user message, then the inner loop. */
  private input(context: RunContext, content: string, followUp: boolean): Promise<Outcome> {
    const { control, messages } = context;
    context.inputStart = messages.length;
    messages.push({ role: "user", content });
    control.emit({ type: "user-message", runId: control.id, content, followUp });
    return this.runInput(context);
  }

  /** The follow-up inputs queued while the run went on, each after the previous one completed. */
  private async followUps(context: RunContext, outcome: Outcome): Promise<Outcome> {
    for (let next: string | undefined; outcome.state === "COMPLETED" && (next = context.control.takeFollowUp()) !== undefined; ) {
      outcome = await this.input(context, next, true);
    }
    return outcome;
  }

  /** The inner loop for one input: model call, wave, repeat, until an answer or a stop. */
  private async runInput(context: RunContext, resumed?: { wave: WaveResume; turns: number; rounds: number }): Promise<Outcome> {
    const { control, messages } = context;
    const config = this.config;
    const maxTurns = config.maxTurns ?? DEFAULT_MAX_TURNS;
    // In the action, plan and fenced protocols maxTurns counts their steps (tool turns, waves) and the
    // protocol itself ends them; one more model call gives the final answer.
    const turnLimit = config.toolCallMode === "action" || config.toolCallMode === "plan" || config.toolCallMode === "fenced" ? maxTurns + 1 : maxTurns;
    let turns = resumed?.turns ?? 0;
    let rounds = resumed?.rounds ?? 0;
    const start = resumed ? await this.toolWave(context, resumed.wave.calls, turns, rounds, resumed.wave) : await this.checkInput(context);
    if (start) return start;
    for (;;) {
      if (control.signal.aborted) return { state: "ABORTED", reason: abortReason(control.signal) };
      if (turns >= turnLimit) return this.limit(context, "TURN_LIMIT", `maxTurns (${maxTurns}) reached`);
      if (config.maxTokens !== undefined && context.usage.totalTokens >= config.maxTokens) {
        return this.limit(context, "TOKEN_BUDGET", `token budget (${config.maxTokens}) used: ${context.usage.totalTokens} tokens`);
      }
      turns++;
      const toolsFailure = this.syncToolsForRun(context);
      if (toolsFailure) return toolsFailure;
      const response = await this.callModel(context);
      if (response.error) return this.modelFailed(context, response);
      if (context.stop) return context.stop;
      const calls = toolCallsOf(response.message);
      // An MCP tool answers to both its names (`<server>.<tool>`, `<tool>`): the call gets the one the tool is listed under.
      for (const call of calls) call.name = this.toolbox.resolveName(call.name);
      if (calls.length === 0) {
        // A text protocol's answer because its steps ran out (`Reached maximum reasoning steps (N)`):
        // the answer stands, and the state says a limit ended the run, as maxTurns does in native mode.
        if (response.finishReason.raw === STEP_LIMIT_FINISH) return { state: "TURN_LIMIT", reason: stepLimitReason(textOf(response.message)) };
        // Steering asks for another answer, but never at the cost of the one we have on the last turn.
        if (turns < turnLimit && this.injectSteering(context)) continue;
        return (await this.checkStructuredOutput(context, response)) ?? { state: "COMPLETED", reason: "the model answered" };
      }
      if (config.maxToolRounds !== undefined && rounds >= config.maxToolRounds) {
        messages.push(...cancelledResults(calls, "the tool-round limit was reached"));
        return this.limit(context, "ROUND_LIMIT", `maxToolRounds (${config.maxToolRounds}) reached`);
      }
      if (config.maxToolCalls !== undefined && context.toolCalls + calls.length > config.maxToolCalls) {
        messages.push(...cancelledResults(calls, "the tool-call budget would be exceeded"));
        const reason = `tool-call budget (${config.maxToolCalls}) would be exceeded: ${context.toolCalls} used, ${calls.length} requested`;
        return this.limit(context, "TOOL_BUDGET", reason);
      }
      // The wave runs the tools as they are now: a call to a tool that left its toolset since the
      // model answered gets the usual "Unknown tool" error result.
      const waveToolsFailure = this.syncToolsForRun(context);
      if (waveToolsFailure) {
        messages.push(...cancelledResults(calls, waveToolsFailure.reason));
        return waveToolsFailure;
      }
      rounds++;
      context.toolRounds++;
      context.toolCalls += calls.length;
      const stop = await this.toolWave(context, calls, turns, rounds);
      if (stop) return stop;
    }
  }

  /** One wave, under the guardrails and approvals; an outcome when the input ends here. */
  private async toolWave(context: RunContext, calls: ToolCallPart[], turns: number, rounds: number, resume?: WaveResume): Promise<Outcome | undefined> {
    const { control, messages } = context;
    const config = this.config;
    const wave = await runControlledWave(
      calls,
      {
        run: context.info,
        step: rounds,
        maxSteps: config.maxToolRounds ?? config.maxTurns ?? DEFAULT_MAX_TURNS,
        tools: this.toolbox.tools,
        inputs: context.inputs,
        signal: control.signal,
        concurrency: config.concurrency ?? Number.POSITIVE_INFINITY,
        toolTimeoutMs: config.toolTimeoutMs,
        truncation: config.truncation,
        depth: context.options.depth ?? 0,
        agentPath: context.agentPath,
        services: context.services,
        messages,
        instrumentation: context.instrumentation,
        onAbort: control.onAbort,
        emit: control.emit,
        approvals: context.approvals,
      },
      { agent: this.name, guardrails: config.guardrails, approvals: context.approvals, needsApproval: config.needsApproval, resume },
    );
    if (wave.interrupted) {
      if (control.signal.aborted) {
        messages.push(...cancelledResults(calls, abortReason(control.signal).slice("aborted: ".length)));
        return { state: "ABORTED", reason: abortReason(control.signal) };
      }
      const { pending } = wave.interrupted;
      const at = { agent: this.name, runId: control.id, sessionId: context.options.sessionId, inputTurns: turns, inputRounds: rounds };
      context.checkpoint = checkpointOf(context, at, wave.interrupted);
      const names = pending.map((entry) => `${entry.toolName} (${entry.toolCallId})`).join(", ");
      return { state: "INTERRUPTED", reason: `waiting for approval of ${pending.length} tool call(s): ${names}` };
    }
    const outcomes = wave.outcomes;
    messages.push(...outcomes.map((outcome) => outcome.result));
    if (control.signal.aborted) return { state: "ABORTED", reason: abortReason(control.signal) };
    const loopStop = this.checkLoop(context, outcomes);
    if (loopStop) return loopStop;
    this.injectSteering(context);
    return undefined;
  }

  /** The input guardrail, before the input's first model call. */
  private async checkInput(context: RunContext): Promise<Outcome | undefined> {
    const guardrail = this.config.guardrails?.input;
    if (!guardrail) return undefined;
    const { control, messages } = context;
    const last = messages.at(-1);
    const input = last?.role === "user" ? textOf(last) : "";
    const verdict = await evaluate("input", guardrail, { input, messages, agent: this.name, runId: control.id });
    if (verdict.allow) return undefined;
    control.emit({ type: "guardrail", runId: control.id, guardrail: "input", allowed: false, reason: verdict.reason });
    return { state: "GUARDRAIL", reason: `input guardrail: ${verdict.reason}` };
  }

  /** One model call, streaming text and reasoning out as events. Never throws. */
  private async callModel(context: RunContext, toolChoice = this.config.toolChoice): Promise<ModelResponse> {
    const { control, info, messages } = context;
    const turn = ++context.turns;
    control.emit({ type: "turn-start", runId: control.id, turn });
    const tools = this.toolbox.currentDefinitions();
    let fallbacks: ModelFallback[] | undefined;
    // The prepare phase of the call: the context budget, then the output format.
    const window = { messages, inputIndex: context.inputStart, turn, runId: control.id, model: info.model, signal: control.signal, emit: control.emit };
    const whole: ModelRequest = {
      messages: [...messages],
      tools: tools.length ? tools : undefined,
      toolChoice: tools.length ? toolChoice : undefined,
      options: this.config.modelOptions,
      signal: control.signal,
      inputStart: context.inputStart,
      sessionId: context.options.sessionId,
    };
    // Only a fallback chain is told of hand-overs: a model that keeps its requests (the scripted one)
    // must not keep the run alive through this callback.
    if (this.model instanceof FallbackModel) {
      whole.onFallback = (fallback) => {
        (fallbacks ??= []).push(fallback);
        control.emit({ type: "model-fallback", runId: control.id, turn, from: fallback.from, to: fallback.to, reason: fallback.reason, errorKind: fallback.error.kind });
      };
    }
    let fitted = this.config.context ? await context.window.fit(whole, window) : whole;
    let request = withOutput(fitted, context.contract, info.model);
    const instrumentation = context.instrumentation;
    // With an output guardrail, the answer text waits for its verdict (commentary and reasoning do not).
    const buffer = this.config.guardrails?.output ? new AnswerBuffer((type, delta) => control.emit({ type, runId: control.id, turn, delta })) : undefined;
    const streamed = async () => {
      const response = await streamModel(context, request, turn, buffer);
      if (fallbacks) response.fallbacks = fallbacks;
      return response;
    };
    const call = () => (instrumentation ? instrumentation.modelCall({ ...info, turn, toolNames: tools.map((tool) => tool.name) }, streamed) : streamed());
    let response = await call();
    // The provider found the request too long: one more try with less of the conversation.
    if (response.error?.kind === "context_length" && response.message.content.length === 0 && !control.signal.aborted) {
      const smaller = await context.window.shrink(fitted, window);
      if (smaller) {
        fitted = smaller;
        request = withOutput(fitted, context.contract, info.model);
        response = await call();
      }
    }
    context.window.reported(fitted, response.usage);
    let toolCalls = 0;
    for (const part of response.message.content) if (part.type === "tool-call") toolCalls++;
    if (buffer) await this.checkOutput(context, response, toolCalls, buffer);
    if (!response.message.content.every(keepPart)) response.message.content = response.message.content.filter(keepPart);
    if (response.message.content.length > 0) messages.push(response.message);
    context.usage = addUsage(context.usage, response.usage);
    control.emit({ type: "usage", runId: control.id, turn, usage: response.usage, total: context.usage });
    control.emit({
      type: "turn-end",
      runId: control.id,
      turn,
      message: response.message,
      finishReason: response.finishReason,
      usage: response.usage,
      toolCalls,
    });
    return response;
  }

  /** The output guardrail on an answer: allowed text is streamed, denied text is dropped from the transcript. */
  private async checkOutput(context: RunContext, response: ModelResponse, toolCalls: number, buffer: AnswerBuffer): Promise<void> {
    if (toolCalls > 0 || response.error) {
      buffer.releaseAsCommentary();
      return;
    }
    const { control, messages } = context;
    const text = textOf(response.message);
    const verdict = await evaluate("output", this.config.guardrails!.output!, { text, messages, agent: this.name, runId: control.id });
    if (verdict.allow) {
      buffer.release();
      return;
    }
    buffer.drop();
    response.message.content = response.message.content.filter((part) => part.type !== "text");
    control.emit({ type: "guardrail", runId: control.id, guardrail: "output", allowed: false, reason: verdict.reason });
    context.stop = { state: "GUARDRAIL", reason: `output guardrail: ${verdict.reason}` };
  }

  /** Syncs the toolsets' tools; a change that made two tools share a name fails the run. */
  private syncToolsForRun(context: RunContext): Outcome | undefined {
    const error = this.toolbox.sync();
    if (!error) return undefined;
    context.control.emit({ type: "error", runId: context.control.id, error, fatal: true });
    return { state: "FAILED", reason: error.message, error };
  }

  private modelFailed(context: RunContext, response: ModelResponse): Outcome {
    const error = response.error!;
    // Complete tool calls of an interrupted response get results, so the transcript stays valid.
    const calls = toolCallsOf(response.message);
    if (calls.length) context.messages.push(...cancelledResults(calls, error.message));
    if (error.kind === "aborted" || context.control.signal.aborted) {
      return { state: "ABORTED", reason: abortReason(context.control.signal, error.message) };
    }
    context.control.emit({ type: "error", runId: context.control.id, error, fatal: true });
    return { state: "FAILED", reason: `model error (${error.kind}): ${error.message}`, error };
  }

  /** Ends the input on a limit; with `onLimit: "final-answer"` asks once more with tools disabled. */
  private async limit(context: RunContext, state: TerminalState, reason: string): Promise<Outcome> {
    if (this.config.onLimit !== "final-answer" || context.control.signal.aborted) return { state, reason };
    context.messages.push({
      role: "user",
      content: `[agentloop] The run reached a limit (${reason}). Do not call tools; answer now with what you have.`,
    });
    const toolsFailure = this.syncToolsForRun(context);
    if (toolsFailure) return toolsFailure;
    const response = await this.callModel(context, "none");
    if (response.error) return this.modelFailed(context, response);
    if (context.stop) return context.stop;
    const calls = toolCallsOf(response.message);
    if (calls.length) context.messages.push(...cancelledResults(calls, "tools are disabled for the final answer"));
    return (await this.checkStructuredOutput(context, response)) ?? { state, reason: `${reason}; final answer given without tools` };
  }

  /**
   * With `config.output`: parses and validates the final answer into `context.output`. An invalid
   * answer is asked again once (tools off), naming what failed; a second failure ends the run.
   */
  private async checkStructuredOutput(context: RunContext, response: ModelResponse): Promise<Outcome | undefined> {
    const contract = context.contract;
    if (!contract) return undefined;
    context.output = undefined;
    let parsed = await parseAnswer(contract, textOf(response.message));
    if (!parsed.ok && context.control.signal.aborted) return { state: "ABORTED", reason: abortReason(context.control.signal) };
    if (!parsed.ok) {
      context.messages.push(reaskMessage(parsed.error));
      const again = await this.callModel(context, "none");
      if (again.error) return this.modelFailed(context, again);
      const calls = toolCallsOf(again.message);
      if (calls.length) context.messages.push(...cancelledResults(calls, "tools are disabled for the corrected answer"));
      parsed = await parseAnswer(contract, textOf(again.message));
    }
    if (parsed.ok) {
      context.output = parsed.value;
      return undefined;
    }
    const error = new AgentLoopError("output_validation", `the final answer does not match the output schema, also when asked again: ${parsed.error}`, { retryable: false });
    context.control.emit({ type: "error", runId: context.control.id, error, fatal: true });
    return { state: "FAILED", reason: error.message, error };
  }

  /** Records the wave's call signatures; warns (and maybe stops) on a repeating pattern. */
  private checkLoop(context: RunContext, outcomes: Array<{ call: ToolCallPart; arguments: unknown }>): Outcome | undefined {
    const options = this.config.loopDetection;
    if (options === false) return undefined;
    const window = options?.window ?? DEFAULT_LOOP_WINDOW;
    const signatures = context.signatures;
    for (const outcome of outcomes) signatures.push(callSignature(outcome.call.name, outcome.arguments));
    // Only the last `window` signatures matter: a long run keeps at most two windows of them.
    if (signatures.length >= 2 * window) signatures.splice(0, signatures.length - window);
    const pattern = detectLoop(signatures, window);
    if (!pattern) return undefined;
    context.signatures = []; // a new warning needs a new full window of repetition
    const warnings = ++context.loopWarnings;
    const names = pattern.map(signatureName);
    const message =
      `[agentloop] Loop detected: the last ${window} tool calls repeat the pattern ${names.join(" → ")}. ` +
      "The results will not change. Try a different approach, or answer with what you have.";
    context.messages.push({ role: "user", content: message });
    context.control.emit({ type: "loop-warning", runId: context.control.id, pattern: names, warnings, message });
    if (options?.maxWarnings !== undefined && warnings >= options.maxWarnings) {
      return { state: "LOOP_DETECTED", reason: `loop detected ${warnings} time(s): ${names.join(" → ")}` };
    }
    return undefined;
  }

  private injectSteering(context: RunContext): boolean {
    const steering = context.control.takeSteering();
    for (const content of steering) {
      context.messages.push({ role: "user", content });
      context.control.emit({ type: "steering", runId: context.control.id, content });
    }
    return steering.length > 0;
  }

  private failedResult(runId: string, error: unknown): RunResult {
    const wrapped = AgentLoopError.from(error);
    return {
      runId,
      state: "FAILED",
      reason: `internal error: ${wrapped.message}`,
      text: "",
      messages: [],
      newMessages: [],
      usage: emptyUsage(),
      turns: 0,
      toolRounds: 0,
      toolCalls: 0,
      error: wrapped,
    };
  }
}

/** The result of a run from its context and how it ended: the transcript is kept, whatever happened. */
function resultOf(context: RunContext, outcome: Outcome): RunResult {
  const { messages } = context;
  const last = messages.at(-1);
  return {
    runId: context.control.id,
    state: outcome.state,
    reason: outcome.reason,
    text: last?.role === "assistant" ? textOf(last) : "",
    messages,
    newMessages: messages.slice(context.firstNew),
    usage: context.usage,
    turns: context.turns,
    toolRounds: context.toolRounds,
    toolCalls: context.toolCalls,
    ...(context.output !== undefined ? { output: context.output } : {}),
    error: outcome.error,
    checkpoint: context.checkpoint,
  };
}

/** What `agent.resume` hands the run. */
interface Resume {
  checkpoint: RunCheckpoint;
  decisions: ResumeOptions["decisions"];
}

/** The reason of a run a text protocol's step limit ended: its answer (`Reached maximum reasoning steps (3)`), or what it was. */
function stepLimitReason(answer: string): string {
  return /^Reached maximum reasoning steps \(\d+\)$/.test(answer) ? answer : "the tool-call protocol's steps ran out; final answer given without tools";
}

/**
 * The session's history, raced with the run's abort: a slow store cannot hold an aborted run.
 * Undefined when the run was aborted first; the load may still finish in the background and its
 * result is dropped (a failing load after the abort is ignored too).
 */
async function loadHistory(memory: SessionMemory, sessionId: string, control: RunControl): Promise<Message[] | undefined> {
  if (control.signal.aborted) return undefined;
  let abortLoad: () => void = noop;
  const aborted = new Promise<undefined>((resolve) => {
    abortLoad = () => resolve(undefined);
  });
  const dispose = control.onAbort(abortLoad);
  try {
    const history = await Promise.race([memory.loadHistory(sessionId), aborted]);
    return control.signal.aborted ? undefined : history;
  } finally {
    dispose();
  }
}

/** An interrupted response can leave empty parts; providers reject empty text blocks. */
function keepPart(part: AssistantPart): boolean {
  return part.type === "tool-call" || part.text !== "" || part.providerData !== undefined;
}

/** One model call of the run, its deltas emitted as loop events. */
function streamModel(context: RunContext, request: ModelRequest, turn: number, buffer?: AnswerBuffer): Promise<ModelResponse> {
  const { control, info } = context;
  return streamTurn(info.model, request, control.onAbort, buffer ? buffer.forward : (delta, type) => control.emit({ type, runId: control.id, turn, delta }));
}
