/**
 * A resume is the loop continuing from a checkpoint: what a stopped run keeps (`checkpointOf`), what
 * a resumed run takes back before its loop goes on (`restoreRun`), and the stopped wave handed to
 * the same wave gate as the first pass (`resumedWave`, src/loop/approvals.ts).
 */
import { AgentLoopError } from "../errors.js";
import type { Message } from "../messages.js";
import type { Usage } from "../usage.js";
import type { WaveInterruption, WaveResume } from "./approvals.js";
import { type ApprovalDecision, newCheckpointId, type RunCheckpoint } from "./checkpoint.js";
import type { SessionMemory } from "./types.js";

/** What a checkpoint keeps of a run (a run's context has these fields). */
export interface ResumableRun {
  messages: Message[];
  /** Index of the first message this run added (after system prompt and history). */
  firstNew: number;
  /** Index of the user message of the current input (steering and loop warnings do not move it). */
  inputStart: number;
  /** The same for every wave of the run. */
  inputs: Record<string, unknown>;
  usage: Usage;
  turns: number;
  toolRounds: number;
  toolCalls: number;
  signatures: string[];
  loopWarnings: number;
}

/** Where in its loop the run stopped. */
export interface StopPoint {
  agent: string;
  runId: string;
  sessionId?: string;
  /** Model calls and waves of the current input so far. */
  inputTurns: number;
  inputRounds: number;
}

/** The JSON checkpoint of a run whose wave stopped for approvals. */
export function checkpointOf(run: ResumableRun, at: StopPoint, stopped: WaveInterruption): RunCheckpoint {
  const checkpoint: RunCheckpoint = {
    version: 1,
    id: newCheckpointId(),
    agent: at.agent,
    runId: at.runId,
    sessionId: at.sessionId,
    createdAt: new Date().toISOString(),
    pending: stopped.pending,
    messages: run.messages,
    firstNew: run.firstNew,
    inputs: run.inputs,
    counters: {
      turns: run.turns,
      toolRounds: run.toolRounds,
      toolCalls: run.toolCalls,
      inputTurns: at.inputTurns,
      inputRounds: at.inputRounds,
      inputStart: run.inputStart,
      loopWarnings: run.loopWarnings,
      signatures: run.signatures,
      usage: run.usage,
    },
    wave: stopped.wave,
  };
  return JSON.parse(JSON.stringify(checkpoint));
}

/** Puts a checkpoint's conversation and counters back into a run about to go on; the input's own counters are returned. */
export function restoreRun(run: ResumableRun, checkpoint: RunCheckpoint): { turns: number; rounds: number } {
  const { counters } = checkpoint;
  run.messages.push(...structuredClone(checkpoint.messages));
  run.firstNew = checkpoint.firstNew;
  // A checkpoint made before `inputStart` was kept: its run's first input, which is where the run's own messages start.
  run.inputStart = counters.inputStart ?? checkpoint.firstNew;
  run.usage = { ...counters.usage };
  run.turns = counters.turns;
  run.toolRounds = counters.toolRounds;
  run.toolCalls = counters.toolCalls;
  run.signatures = [...counters.signatures];
  run.loopWarnings = counters.loopWarnings;
  return { turns: counters.inputTurns, rounds: counters.inputRounds };
}

/** The stopped wave with the decisions given now, for the wave gate. */
export function resumedWave(checkpoint: RunCheckpoint, decisions: Record<string, ApprovalDecision>): WaveResume {
  return { ...checkpoint.wave, checkpointId: checkpoint.id, pending: checkpoint.pending, decisions };
}

/** Across processes, the session's log says whether this checkpoint was resumed before: the error to end the run with, if so. */
export async function resumedBefore(memory: SessionMemory | undefined, sessionId: string | undefined, checkpoint: RunCheckpoint): Promise<AgentLoopError | undefined> {
  if (!memory?.checkpointResumed || !sessionId || !(await memory.checkpointResumed(sessionId, checkpoint.id))) return undefined;
  return new AgentLoopError("invalid_request", `checkpoint ${checkpoint.id} was already resumed (session ${sessionId} records it); a checkpoint is resumed once`);
}
