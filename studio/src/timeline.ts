/**
 * A session's event log read as runs and timelines: a pure function of the stored events (the
 * view reads the log, it never recomputes the loop). Model calls come from `metadata.model_call`
 * (written on the events a model call produced), tool calls from `tool_call`/`tool_result` pairs;
 * a sub-agent's run (`metadata.parent_run_id`) nests under the delegation it ran in.
 */
import type { StoredEvent } from "./wire.js";

export type BarStatus = "ok" | "error" | "denied" | "running" | "interrupted";

export interface Bar {
  id: string;
  kind: "model" | "tool" | "delegation";
  label: string;
  /** ms since the epoch. */
  start: number;
  /** Undefined while it runs. */
  end?: number;
  durationMs?: number;
  /** The model call (turn) a tool call came from: the calls of one wave share it. */
  wave?: number;
  status: BarStatus;
  tokens?: { input: number; output: number; total: number };
  /** A model call's cost in US dollars (`"unknown"` for an unpriced model); absent when nothing prices it. */
  cost?: number | "unknown";
  finishReason?: string;
  toolCallId?: string;
  arguments?: unknown;
  rawArguments?: string;
  /** The full, untruncated output. */
  output?: unknown;
  /** What the model saw when it was truncated. */
  modelResult?: unknown;
  errorKind?: string;
  traceId?: string;
  spanId?: string;
  /** Nesting depth in the timeline (a sub-agent's bars are one deeper than its delegation). */
  depth: number;
  events: StoredEvent[];
}

export interface Mark {
  at: number;
  kind: "error" | "retry" | "limit" | "guardrail" | "approval" | "warning" | "steering" | "rejected";
  label: string;
  event: StoredEvent;
}

export interface RunView {
  runId: string;
  parentRunId?: string;
  depth: number;
  agent: string;
  model?: string;
  start: number;
  end?: number;
  state?: string;
  reason?: string;
  input?: string;
  answer?: string;
  usage?: { inputTokens?: number; outputTokens?: number; totalTokens?: number; cost?: number | "unknown" };
  bars: Bar[];
  marks: Mark[];
  children: RunView[];
  events: StoredEvent[];
  /** The checkpoint this run went on from (a resume after approvals): its view joins the run that stopped. */
  resumes?: string;
}

const LIMIT_STATES = new Set(["TURN_LIMIT", "ROUND_LIMIT", "TOKEN_BUDGET", "TOOL_BUDGET", "LOOP_DETECTED"]);

const time = (event: StoredEvent) => Date.parse(event.timestamp);
const text = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

interface ModelCallRecord {
  turn: number;
  started_at: string;
  duration_ms: number;
  usage?: { input_tokens: number; output_tokens: number; total_tokens: number };
  cost?: number | "unknown";
  finish_reason?: string;
}

/** A cost as the log has it (a number of dollars or "unknown"), or undefined for anything else. */
const costOf = (value: unknown): number | "unknown" | undefined => (value === "unknown" || (typeof value === "number" && Number.isFinite(value)) ? value : undefined);

/** Builds one run's view from its events (in log order). */
function runOf(runId: string, events: StoredEvent[]): RunView {
  const first = events[0];
  const run: RunView = { runId, depth: 0, agent: String(first.metadata.agent ?? "agent"), start: time(first), bars: [], marks: [], children: [], events };
  const calls = new Map<string, Bar>();
  const models = new Map<number, Bar>();
  const modelCall = (event: StoredEvent) => {
    const record = event.metadata.model_call as ModelCallRecord | undefined;
    if (!record || models.has(record.turn)) return;
    const start = Date.parse(record.started_at);
    const usage = record.usage;
    const bar: Bar = {
      id: `${runId}:model:${record.turn}`,
      kind: "model",
      label: `model call ${record.turn}`,
      start,
      end: start + record.duration_ms,
      durationMs: record.duration_ms,
      wave: record.turn,
      status: record.finish_reason === "error" ? "error" : "ok",
      tokens: usage ? { input: usage.input_tokens, output: usage.output_tokens, total: usage.total_tokens } : undefined,
      cost: costOf(record.cost),
      finishReason: record.finish_reason,
      traceId: event.metadata.trace_id as string | undefined,
      spanId: event.metadata.span_id as string | undefined,
      depth: 0,
      events: [event],
    };
    models.set(record.turn, bar);
    run.bars.push(bar);
  };
  for (const event of events) {
    const at = time(event);
    const meta = event.metadata;
    switch (event.event_type) {
      case "run_started": {
        const content = event.content as { agent?: string; model?: string } | null;
        run.start = at;
        run.agent = content?.agent ?? run.agent;
        run.model = content?.model;
        run.depth = Number(meta.depth ?? 0);
        if (typeof meta.parent_run_id === "string") run.parentRunId = meta.parent_run_id;
        break;
      }
      case "user_message":
        if (run.input === undefined) run.input = text(event.content);
        break;
      case "tool_call":
      case "delegation_request": {
        modelCall(event);
        const id = String(meta.tool_call_id ?? event.event_id);
        const delegation = event.event_type === "delegation_request";
        const content = event.content as { tool?: string; arguments?: unknown; agent?: string; task?: unknown } | null;
        const bar: Bar = {
          id: `${runId}:${id}`,
          kind: delegation ? "delegation" : "tool",
          label: delegation ? `→ ${content?.agent ?? meta.tool_name}` : String(content?.tool ?? meta.tool_name ?? "tool"),
          start: at,
          wave: typeof meta.turn === "number" ? meta.turn : undefined,
          status: "running",
          toolCallId: id,
          arguments: delegation ? content?.task : content?.arguments,
          rawArguments: typeof meta.raw_arguments === "string" ? meta.raw_arguments : undefined,
          traceId: meta.trace_id as string | undefined,
          spanId: meta.span_id as string | undefined,
          depth: 0,
          events: [event],
        };
        calls.set(id, bar);
        run.bars.push(bar);
        break;
      }
      case "tool_result":
      case "delegation_response": {
        const id = String(meta.tool_call_id ?? "");
        const bar = calls.get(id);
        if (!bar) break;
        const content = event.content as { result?: unknown; response?: unknown } | null;
        bar.end = at;
        bar.durationMs = typeof meta.duration_ms === "number" ? meta.duration_ms : at - bar.start;
        // The tool ran `duration_ms`; the bar ends when its result was recorded.
        bar.start = Math.min(bar.start, at - bar.durationMs);
        bar.output = event.event_type === "delegation_response" ? content?.response : content?.result;
        bar.modelResult = meta.model_result;
        bar.errorKind = meta.error_kind as string | undefined;
        bar.status = bar.errorKind === "guardrail" || bar.errorKind === "rejected" ? "denied" : meta.is_error ? "error" : "ok";
        bar.events.push(event);
        if (bar.errorKind === "guardrail") run.marks.push({ at, kind: "guardrail", label: `guardrail denied ${bar.label}`, event });
        if (bar.errorKind === "rejected") run.marks.push({ at, kind: "rejected", label: `${bar.label} rejected`, event });
        break;
      }
      case "agent_response":
        modelCall(event);
        run.answer = text(event.content);
        break;
      case "error":
        run.marks.push({ at, kind: meta.fatal === false ? "retry" : "error", label: `${meta.fatal === false ? "retried: " : ""}${text(event.content)}`, event });
        break;
      case "loop_warning":
        run.marks.push({ at, kind: "warning", label: text(event.content), event });
        break;
      case "steering":
        run.marks.push({ at, kind: "steering", label: `steering: ${text(event.content)}`, event });
        break;
      case "approval_requested":
        if ((event.content as { checkpoint_id?: unknown } | null)?.checkpoint_id) {
          modelCall(event);
          run.marks.push({ at, kind: "approval", label: "stopped for approval", event });
        }
        break;
      case "approval_decided": {
        const content = event.content as { checkpoint_id?: string; decisions?: Record<string, { approve: boolean; reason?: string }> } | null;
        if (content?.checkpoint_id) {
          run.resumes = content.checkpoint_id;
          const decided = Object.entries(content.decisions ?? {}).map(([id, decision]) => `${id} ${decision.approve ? "approved" : `rejected${decision.reason ? ` (${decision.reason})` : ""}`}`);
          run.marks.push({ at, kind: "approval", label: `resumed: ${decided.join(", ")}`, event });
        }
        break;
      }
      case "run_ended": {
        const content = event.content as { state?: string; reason?: string } | null;
        run.end = at;
        run.state = content?.state;
        run.reason = content?.reason;
        run.usage = meta.usage as RunView["usage"];
        if (run.usage && run.usage.cost !== undefined) run.usage = { ...run.usage, cost: costOf(run.usage.cost) };
        if (run.state && LIMIT_STATES.has(run.state)) run.marks.push({ at, kind: "limit", label: `${run.state}: ${run.reason ?? ""}`, event });
        if (run.state === "GUARDRAIL") run.marks.push({ at, kind: "guardrail", label: run.reason ?? "guardrail", event });
        if (run.state === "INTERRUPTED") for (const bar of calls.values()) if (bar.status === "running") bar.status = "interrupted";
        break;
      }
    }
  }
  run.bars.sort((a, b) => a.start - b.start || (a.kind === "model" ? -1 : 1));
  return run;
}

/** The session's runs, oldest first; sub-agent runs are in their parent's `children`, not at the top. */
export function runsOf(events: readonly StoredEvent[]): RunView[] {
  const byRun = new Map<string, StoredEvent[]>();
  for (const event of events) {
    const runId = typeof event.metadata.run_id === "string" ? event.metadata.run_id : "(no run)";
    let list = byRun.get(runId);
    if (!list) byRun.set(runId, (list = []));
    list.push(event);
  }
  const runs = new Map<string, RunView>();
  const stoppedAt = new Map<string, RunView>();
  for (const [runId, list] of byRun) {
    const run = runOf(runId, list);
    // A run that went on after approvals continues the run that stopped (one request, one timeline).
    const original = run.resumes ? stoppedAt.get(run.resumes) : undefined;
    const target = original ?? run;
    if (original) joinContinuation(original, run);
    else runs.set(runId, run);
    for (const event of list) {
      const checkpoint = event.event_type === "approval_requested" ? (event.content as { checkpoint_id?: unknown } | null)?.checkpoint_id : undefined;
      if (typeof checkpoint === "string") stoppedAt.set(checkpoint, target);
    }
    if (original) runs.set(runId, original);
  }
  const top: RunView[] = [];
  const seen = new Set<RunView>();
  for (const run of runs.values()) {
    if (seen.has(run)) continue;
    seen.add(run);
    const parent = run.parentRunId ? runs.get(run.parentRunId) : undefined;
    if (parent) parent.children.push(run);
    else top.push(run);
  }
  return top;
}

/** Adds a resumed run's calls, marks and end to the run it continues. */
function joinContinuation(original: RunView, continuation: RunView): void {
  original.bars.push(...continuation.bars);
  original.bars.sort((a, b) => a.start - b.start || (a.kind === "model" ? -1 : 1));
  // Calls the stop left waiting ran in the continuation: their bars there replace the waiting ones.
  const ran = new Set(continuation.bars.map((bar) => bar.toolCallId).filter(Boolean));
  original.bars = original.bars.filter((bar) => !(bar.status === "interrupted" && ran.has(bar.toolCallId)));
  original.marks.push(...continuation.marks);
  original.events = original.events.concat(continuation.events);
  original.children.push(...continuation.children);
  original.end = continuation.end;
  original.state = continuation.state;
  original.reason = continuation.reason;
  original.answer = continuation.answer ?? original.answer;
  original.usage = continuation.usage ?? original.usage;
}

/** One row of a run's timeline: a bar, indented by its depth (a sub-agent's bars under its delegation). */
export interface TimelineRow {
  bar: Bar;
  depth: number;
}

/** The rows of a run's waterfall: its bars in time order, each child run's bars after the delegation it ran in. */
export function timelineRows(run: RunView, depth = 0): TimelineRow[] {
  const rows: TimelineRow[] = [];
  const children = [...run.children];
  for (const bar of run.bars) {
    rows.push({ bar, depth });
    if (bar.kind !== "delegation") continue;
    const end = bar.end ?? Number.POSITIVE_INFINITY;
    const agent = bar.label.replace(/^→ /, "");
    const index = children.findIndex((child) => child.start >= bar.start - 5 && child.start <= end && (child.agent === agent || children.length === 1));
    if (index >= 0) rows.push(...timelineRows(children.splice(index, 1)[0], depth + 1));
  }
  for (const child of children) rows.push(...timelineRows(child, depth + 1));
  return rows;
}

/** The span of time a run's timeline shows: its start to its end (or `now` while it runs). */
export function timeRange(run: RunView, rows: TimelineRow[], now: number): { start: number; end: number } {
  let start = run.start;
  let end = run.end ?? now;
  for (const { bar } of rows) {
    start = Math.min(start, bar.start);
    end = Math.max(end, bar.end ?? now);
  }
  return { start, end: Math.max(end, start + 1) };
}

/** Two bars overlap in time (the calls of one wave run in parallel). */
export const overlaps = (a: Bar, b: Bar) => a.start < (b.end ?? Number.POSITIVE_INFINITY) && b.start < (a.end ?? Number.POSITIVE_INFINITY);

/** A cost for people: `$0.000123` (three significant digits below a dollar, cents above), or `cost unknown`. */
export function formatCost(cost: number | "unknown"): string {
  if (cost === "unknown") return "cost unknown";
  if (cost === 0) return "$0";
  const digits = Math.min(12, Math.max(2, 2 - Math.floor(Math.log10(Math.abs(cost)))));
  return `$${cost.toFixed(digits)}`;
}

export function formatMs(ms: number | undefined): string {
  if (ms === undefined) return "…";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}
