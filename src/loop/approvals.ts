/**
 * The controlled wave: tool guardrails and approvals, in the wave's prepare phase, before any
 * call of the wave starts. Then the wave runs as usual (`runWave`), with what this decided.
 */
import { onAbort } from "../abort.js";
import type { ToolCallPart } from "../messages.js";
import { parseToolArguments } from "../tools/parse-arguments.js";
import { type Tool, toolNames } from "../tools/tool.js";
import { validateArguments } from "../tools/validate.js";
import { applyBindings } from "./bindings.js";
import { type ApprovalDecision, argumentsHash, type CheckpointWave, type PendingApproval, type RunCheckpoint } from "./checkpoint.js";
import type { LoopEvent } from "./events.js";
import { deniedByRule, evaluate, type Guardrails, matchesAny } from "./guardrails.js";
import { type CallOutcome, type CallPreset, runWave, type WaveSettings } from "./wave.js";

export type ApprovalMode = "wait" | "interrupt";

/** What a call's `needsApproval` function gets besides the arguments. */
export interface ApprovalContext {
  toolCallId: string;
  toolName: string;
  runId: string;
  agentPath: readonly string[];
  inputs: Record<string, unknown>;
}

/**
 * Pending approvals of a run and its sub-agents (one broker for the whole tree, so a sub-agent's
 * request is answered through the top-level `run.approve`).
 */
export class ApprovalBroker {
  private readonly waiting = new Map<string, { toolName: string; resolve: (decision: ApprovalDecision) => void }>();

  /** The ids of the calls waiting for a decision now. */
  get pending(): string[] {
    return [...this.waiting.keys()];
  }

  /** Waits for the decision on `callId`: undefined when the run aborted first; a timeout rejects. */
  wait(callId: string, toolName: string, signal: AbortSignal, timeoutMs: number | undefined): Promise<ApprovalDecision | undefined> {
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = (decision: ApprovalDecision | undefined) => {
        if (!this.waiting.has(callId)) return;
        this.waiting.delete(callId);
        clearTimeout(timer);
        unlink();
        resolve(decision);
      };
      this.waiting.set(callId, { toolName, resolve: done });
      const unlink = onAbort(signal, () => done(undefined));
      if (timeoutMs !== undefined) timer = setTimeout(() => done({ approve: false, reason: `approval timed out after ${timeoutMs} ms` }), timeoutMs);
    });
  }

  /** Answers a pending request; throws when no call with this id waits. */
  decide(callId: string, decision: ApprovalDecision): void {
    const entry = this.waiting.get(callId);
    if (!entry) {
      const open = this.pending;
      throw new Error(`no approval is pending for tool call "${callId}" (pending: ${open.length ? open.join(", ") : "none"})`);
    }
    entry.resolve(decision);
  }
}

/** How a run handles approvals; handed to sub-agents through their tool context. */
export interface ApprovalScope {
  broker: ApprovalBroker;
  mode: ApprovalMode;
  timeoutMs?: number;
}

/** A resumed wave: where the checkpoint stopped, and the decisions given now. */
export interface WaveResume extends CheckpointWave {
  checkpointId: string;
  pending: PendingApproval[];
  decisions: Record<string, ApprovalDecision>;
}

export interface WaveControl {
  agent: string;
  guardrails?: Guardrails;
  approvals: ApprovalScope;
  /** Tool names or globs that need approval whatever the tool says (`AgentConfig.needsApproval`). */
  needsApproval?: readonly string[];
  resume?: WaveResume;
}

/** The wave stopped for approvals (interrupt mode): what the checkpoint records of it. */
export interface WaveInterruption {
  pending: PendingApproval[];
  wave: CheckpointWave;
}

export type ControlledWave = { outcomes: CallOutcome[]; interrupted?: undefined } | { interrupted: WaveInterruption; outcomes?: undefined };

function needsGate(calls: ToolCallPart[], settings: WaveSettings, control: WaveControl): boolean {
  if (control.resume || control.guardrails?.tool || control.guardrails?.deniedTools?.length || control.needsApproval?.length) return true;
  for (const call of calls) if (settings.tools.get(call.name)?.needsApproval) return true;
  return false;
}

/** Parse, bind, validate (as the wave's prepare does); undefined when the wave itself will report the failure. */
async function argumentsOf(call: ToolCallPart, tool: Tool<any>, inputs: Record<string, unknown>): Promise<Record<string, unknown> | undefined> {
  const parsed = parseToolArguments(call.arguments);
  if (!parsed.ok) return undefined;
  const validation = await validateArguments(tool, applyBindings(parsed.value, tool.bindings, inputs));
  return validation.ok ? validation.value : undefined;
}

async function approvalNeeded(tool: Tool<any>, args: Record<string, unknown>, context: ApprovalContext): Promise<boolean> {
  const rule = tool.needsApproval;
  if (typeof rule !== "function") return rule === true;
  try {
    return (await rule(args, context)) !== false;
  } catch {
    return true; // a check that fails asks a person
  }
}

function decisionPreset(decision: ApprovalDecision, args: Record<string, unknown>): CallPreset {
  if (decision.approve) return { args };
  return { error: `Rejected: ${decision.reason || "rejected by the user"}`, kind: "rejected" };
}

/**
 * Runs one wave under the run's guardrails and approvals. Before any call starts: each call's tool
 * guardrail (a denied call gets `Tool denied by guardrail: <reason>`; rewritten arguments are
 * validated again), then its `needsApproval`. Calls needing approval emit `approval-request` and
 * either wait for `run.approve`/`run.reject` or, in interrupt mode, stop the wave before anything
 * ran. A resumed wave applies the given decisions and skips calls that already ran.
 */
export async function runControlledWave(calls: ToolCallPart[], settings: WaveSettings, control: WaveControl): Promise<ControlledWave> {
  if (!needsGate(calls, settings, control)) return afterWave(calls, await runWave(calls, settings), {}, {});
  const { emit, run } = settings;
  const resume = control.resume;
  const done = { ...(resume?.done ?? {}) };
  const decided: CheckpointWave["decided"] = { ...(resume?.decided ?? {}) };
  const previouslyPending = new Map((resume?.pending ?? []).map((entry) => [entry.toolCallId, entry]));
  for (const [callId, decision] of Object.entries(resume?.decisions ?? {})) {
    const entry = previouslyPending.get(callId);
    if (!entry || !calls.some((call) => call.id === callId)) continue; // a sub-agent's: passed down below
    decided[callId] = { decision, request: entry };
    emit({ type: "approval-decision", runId: run.runId, toolCallId: callId, name: entry.toolName, approve: decision.approve, reason: decision.approve ? undefined : decision.reason, checkpointId: resume!.checkpointId });
  }
  const presets = new Map<string, CallPreset>();
  const pending: PendingApproval[] = [];
  for (const call of calls) {
    if (done[call.id]) continue;
    const nested = resume?.nested[call.id];
    if (nested) {
      const decisions: Record<string, ApprovalDecision> = {};
      for (const entry of nested.pending) if (resume.decisions[entry.toolCallId]) decisions[entry.toolCallId] = resume.decisions[entry.toolCallId]!;
      const tool = settings.tools.get(call.name);
      const args = tool ? await argumentsOf(call, tool, settings.inputs) : undefined;
      presets.set(call.id, { args: args ?? {}, resume: { checkpoint: nested, decisions } });
      continue;
    }
    const earlier = decided[call.id];
    if (earlier) {
      presets.set(call.id, decisionPreset(earlier.decision, earlier.request.arguments));
      continue;
    }
    const asked = previouslyPending.get(call.id);
    if (asked) {
      pending.push(asked);
      continue;
    }
    const tool = settings.tools.get(call.name);
    if (!tool) continue;
    let args = await argumentsOf(call, tool, settings.inputs);
    if (!args) continue;
    const denied = deniedByRule(control.guardrails?.deniedTools, toolNames(tool));
    if (denied !== undefined) {
      emit({ type: "guardrail", runId: run.runId, guardrail: "tool", allowed: false, reason: denied, toolCallId: call.id, name: call.name });
      presets.set(call.id, { error: `Tool denied by guardrail: ${denied}`, kind: "guardrail" });
      continue;
    }
    const guardrail = control.guardrails?.tool;
    if (guardrail) {
      const context = { toolName: call.name, toolCallId: call.id, arguments: args, agent: control.agent, runId: run.runId, inputs: settings.inputs };
      const verdict = await evaluate("tool", guardrail, context);
      if (!verdict.allow) {
        emit({ type: "guardrail", runId: run.runId, guardrail: "tool", allowed: false, reason: verdict.reason, toolCallId: call.id, name: call.name });
        presets.set(call.id, { error: `Tool denied by guardrail: ${verdict.reason}`, kind: "guardrail" });
        continue;
      }
      if ("arguments" in verdict) {
        const validation = await validateArguments(tool, applyBindings(verdict.arguments, tool.bindings, settings.inputs));
        if (!validation.ok) {
          const reason = `rewritten arguments are invalid: ${validation.error}`;
          emit({ type: "guardrail", runId: run.runId, guardrail: "tool", allowed: false, reason, toolCallId: call.id, name: call.name });
          presets.set(call.id, { error: `Tool denied by guardrail: ${reason}`, kind: "guardrail" });
          continue;
        }
        args = validation.value;
        emit({ type: "guardrail", runId: run.runId, guardrail: "tool", allowed: true, reason: "arguments rewritten", toolCallId: call.id, name: call.name });
      }
    }
    const context: ApprovalContext = { toolCallId: call.id, toolName: call.name, runId: run.runId, agentPath: settings.agentPath, inputs: settings.inputs };
    if (matchesAny(control.needsApproval, toolNames(tool)) || (tool.needsApproval && (await approvalNeeded(tool, args, context)))) {
      pending.push({ toolCallId: call.id, toolName: call.name, arguments: args, argumentsHash: argumentsHash(call, args), agentPath: [...settings.agentPath] });
    } else presets.set(call.id, { args });
  }
  if (pending.length > 0) {
    const { broker, mode, timeoutMs } = control.approvals;
    // Waiting before the requests go out: a listener may answer synchronously, from inside the event.
    const answers = mode === "wait" ? pending.map((entry) => broker.wait(entry.toolCallId, entry.toolName, settings.signal, timeoutMs)) : [];
    for (const entry of pending) {
      emit({ type: "approval-request", runId: run.runId, toolCallId: entry.toolCallId, name: entry.toolName, arguments: entry.arguments, argumentsHash: entry.argumentsHash, agentPath: entry.agentPath });
    }
    if (mode === "interrupt") return { interrupted: { pending, wave: { calls, done, decided, nested: {} } } };
    await Promise.all(answers);
    for (const [index, entry] of pending.entries()) {
      const decision = await answers[index];
      if (!decision) continue; // aborted: the wave's prepare cancels the call
      emit({ type: "approval-decision", runId: run.runId, toolCallId: entry.toolCallId, name: entry.toolName, approve: decision.approve, reason: decision.approve ? undefined : decision.reason });
      presets.set(entry.toolCallId, decisionPreset(decision, entry.arguments));
    }
  }
  const toRun = calls.filter((call) => !done[call.id]);
  return afterWave(calls, await runWave(toRun, { ...settings, presets }), done, decided);
}

/** The wave's outcomes in call order (calls that ran before a resume included), or its stop for a sub-agent's approvals. */
function afterWave(calls: ToolCallPart[], ran: CallOutcome[], done: CheckpointWave["done"], decided: CheckpointWave["decided"]): ControlledWave {
  if (ran.length === calls.length && !ran.some((outcome) => outcome.interrupt)) return { outcomes: ran };
  const byId = new Map(ran.map((outcome) => [outcome.call.id, outcome]));
  const outcomes = calls.map((call) => byId.get(call.id) ?? { call, arguments: done[call.id]!.arguments, result: done[call.id]!.result });
  const stopped = outcomes.filter((outcome) => outcome.interrupt);
  if (stopped.length === 0) return { outcomes };
  // A sub-agent stopped for approvals: the calls that ran are kept, the sub-agents' checkpoints nest.
  const nested: Record<string, RunCheckpoint> = {};
  for (const outcome of outcomes) {
    if (outcome.interrupt) nested[outcome.call.id] = outcome.interrupt;
    else done[outcome.call.id] = { result: outcome.result, arguments: outcome.arguments };
  }
  return { interrupted: { pending: stopped.flatMap((outcome) => outcome.interrupt!.pending), wave: { calls, done, decided, nested } } };
}

/** The approval requests in an event, a sub-agent's (nested) included. */
export function approvalRequestOf(event: LoopEvent): Extract<LoopEvent, { type: "approval-request" }> | undefined {
  let current: LoopEvent = event;
  while (current.type === "nested") current = current.event;
  return current.type === "approval-request" ? current : undefined;
}
