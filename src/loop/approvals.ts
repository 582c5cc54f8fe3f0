/**
 * The controlled wave: tool guardrails and approvals, in the wave's prepare phase, before any
 * call of the wave starts. Then the wave runs as usual (`runWave`), with what this decided. A
 * resumed wave (src/loop/resume.ts) passes the very same gate again, with the decisions given.
 */
import type { ApprovalContext, ApprovalScope } from "../contracts/approvals.js";
import type { ToolCallPart } from "../messages.js";
import { parseToolArguments } from "../tools/parse-arguments.js";
import { type Tool, toolNames } from "../tools/tool.js";
import { validateArguments } from "../tools/validate.js";
import { applyBindings } from "./bindings.js";
import { type ApprovalDecision, argumentsHash, type CheckpointWave, type NestedResume, type PendingApproval, type RunCheckpoint } from "./checkpoint.js";
import type { LoopEvent } from "./events.js";
import { deniedByRule, evaluate, type Guardrails, matchesAny } from "./guardrails.js";
import { type CallOutcome, type CallPreset, runWave, type WaveSettings } from "./wave.js";

export { type ApprovalContext, ApprovalBroker, type ApprovalMode, type ApprovalScope } from "../contracts/approvals.js";

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

type Decided = CheckpointWave["decided"][string];

/** What a resumed wave knows of its calls from before: decisions (with what they were asked for), calls asked about, sub-agents to resume. */
interface Earlier {
  decided: Record<string, Decided>;
  asked: Set<string>;
  nested: Record<string, NestedResume>;
}

/** The checkpoint's decisions and the ones given now (each given one emits `approval-decision`). */
function earlierOf(calls: ToolCallPart[], settings: WaveSettings, resume: WaveResume | undefined): Earlier {
  const earlier: Earlier = { decided: { ...(resume?.decided ?? {}) }, asked: new Set(), nested: {} };
  if (!resume) return earlier;
  const own = new Set(calls.map((call) => call.id));
  for (const entry of resume.pending) {
    if (!own.has(entry.toolCallId)) continue; // a sub-agent's: passed down with its checkpoint
    const decision = resume.decisions[entry.toolCallId];
    if (!decision) {
      earlier.asked.add(entry.toolCallId);
      continue;
    }
    earlier.decided[entry.toolCallId] = { decision, request: entry };
    const { run, emit } = settings;
    emit({ type: "approval-decision", runId: run.runId, toolCallId: entry.toolCallId, name: entry.toolName, approve: decision.approve, reason: decision.approve ? undefined : decision.reason, checkpointId: resume.checkpointId });
  }
  // A checkpoint written before sub-agents' checkpoints were kept (or by hand) has no `nested`: none to pass down.
  for (const [callId, checkpoint] of Object.entries(resume.nested ?? {})) {
    const decisions: Record<string, ApprovalDecision> = {};
    for (const entry of checkpoint.pending) if (resume.decisions[entry.toolCallId]) decisions[entry.toolCallId] = resume.decisions[entry.toolCallId]!;
    earlier.nested[callId] = { checkpoint, decisions };
  }
  return earlier;
}

/** Where a call stands after the gate: decided (run with these arguments, or this error result), or to be asked about. */
type Gate = { preset: CallPreset; decided?: Decided } | { ask: PendingApproval } | undefined;

/**
 * One call through the wave's gate, the same on the first pass and on every resume: parse, bind
 * and validate its arguments, its guardrails (which may deny or rewrite), then its approval. A
 * decision from before applies to the arguments it was asked for only: a rejection stands, an
 * approval of other arguments (the guardrail rewrites differently now) asks again. Undefined when
 * the wave's own prepare reports the call (unknown tool, invalid arguments).
 */
async function gateCall(call: ToolCallPart, settings: WaveSettings, control: WaveControl, earlier: Earlier): Promise<Gate> {
  const tool = settings.tools.get(call.name);
  if (!tool) return undefined;
  const prepared = await argumentsOf(call, tool, settings.inputs);
  if (!prepared) return undefined;
  const guarded = await guardCall(call, tool, prepared, settings, control);
  if ("error" in guarded) return { preset: guarded };
  const args = guarded.args;
  const nested = earlier.nested[call.id];
  if (nested) return { preset: { args, resume: nested } };
  const request: PendingApproval = { toolCallId: call.id, toolName: call.name, arguments: args, argumentsHash: argumentsHash(call, args), agentPath: [...settings.agentPath] };
  const decided = earlier.decided[call.id];
  if (decided && (!decided.decision.approve || decided.request.argumentsHash === request.argumentsHash)) return { preset: decisionPreset(decided.decision, args), decided };
  if (decided || earlier.asked.has(call.id)) return { ask: request };
  const context: ApprovalContext = { toolCallId: call.id, toolName: call.name, runId: settings.run.runId, agentPath: settings.agentPath, inputs: settings.inputs };
  if (matchesAny(control.needsApproval, toolNames(tool)) || (tool.needsApproval && (await approvalNeeded(tool, args, context)))) return { ask: request };
  return { preset: { args } };
}

/** A call's guardrails: `deniedTools`, then the tool guardrail (rewritten arguments are validated again). */
async function guardCall(call: ToolCallPart, tool: Tool<any>, args: Record<string, unknown>, settings: WaveSettings, control: WaveControl): Promise<{ args: Record<string, unknown> } | Extract<CallPreset, { error: string }>> {
  const { emit, run } = settings;
  const deny = (reason: string) => {
    emit({ type: "guardrail", runId: run.runId, guardrail: "tool", allowed: false, reason, toolCallId: call.id, name: call.name });
    return { error: `Tool denied by guardrail: ${reason}`, kind: "guardrail" as const };
  };
  const denied = deniedByRule(control.guardrails?.deniedTools, toolNames(tool));
  if (denied !== undefined) return deny(denied);
  const guardrail = control.guardrails?.tool;
  if (!guardrail) return { args };
  const verdict = await evaluate("tool", guardrail, { toolName: call.name, toolCallId: call.id, arguments: args, agent: control.agent, runId: run.runId, inputs: settings.inputs });
  if (!verdict.allow) return deny(verdict.reason);
  if (!("arguments" in verdict)) return { args };
  const validation = await validateArguments(tool, applyBindings(verdict.arguments, tool.bindings, settings.inputs));
  if (!validation.ok) return deny(`rewritten arguments are invalid: ${validation.error}`);
  emit({ type: "guardrail", runId: run.runId, guardrail: "tool", allowed: true, reason: "arguments rewritten", toolCallId: call.id, name: call.name });
  return { args: validation.value };
}

/**
 * Runs one wave under the run's guardrails and approvals. Before any call starts, each call passes
 * the gate (`gateCall`). Calls needing approval emit `approval-request` and either wait for
 * `run.approve`/`run.reject` or, in interrupt mode, stop the wave before anything ran. A resumed
 * wave is this same pass again: every call that has not run passes the gate again (its guardrails
 * asked again), with the decisions given; calls that already ran are not run again.
 */
export async function runControlledWave(calls: ToolCallPart[], settings: WaveSettings, control: WaveControl): Promise<ControlledWave> {
  if (!needsGate(calls, settings, control)) return afterWave(calls, await runWave(calls, settings), {}, {});
  const { emit, run } = settings;
  const done = { ...(control.resume?.done ?? {}) };
  const earlier = earlierOf(calls, settings, control.resume);
  const decided: CheckpointWave["decided"] = {};
  const presets = new Map<string, CallPreset>();
  const pending: PendingApproval[] = [];
  for (const call of calls) {
    if (done[call.id]) continue;
    const gate = await gateCall(call, settings, control, earlier);
    if (!gate) continue;
    if ("ask" in gate) pending.push(gate.ask);
    else {
      presets.set(call.id, gate.preset);
      if (gate.decided) decided[call.id] = gate.decided;
    }
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
