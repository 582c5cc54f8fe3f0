/**
 * Runs: the sessions (newest first, searchable), a session's runs, and a run as a timeline. The
 * session's log is read once (up to 10,000 events a page) and then followed (`after_seq`), as
 * `agentloop events --follow` does: a running run grows on screen.
 */
import { useEffect, useMemo, useRef, useState } from "react";
import { ApiError, api, type SessionSummary, type StoredEvent } from "../api.js";
import { JsonView } from "../components/json-view.js";
import { Timeline } from "../components/timeline.js";
import { VirtualList } from "../components/virtual-list.js";
import { href, usePoll } from "../router.js";
import { type Bar, formatCost, formatMs, type RunView, runsOf } from "../timeline.js";

const FOLLOW_MS = 400;
const PAGE = 10_000;

function useSessions() {
  const [sessions, setSessions] = useState<SessionSummary[]>();
  const [error, setError] = useState<string>();
  usePoll(
    async () => {
      try {
        setSessions((await api.sessions()).sessions);
        setError(undefined);
      } catch (failure) {
        setError((failure as Error).message);
      }
    },
    2000,
    [],
  );
  return { sessions, error };
}

/** A session's whole log, then every event stored after it, by any process. */
export function useSessionEvents(sessionId: string | undefined) {
  const ref = useRef({ sessionId, events: [] as StoredEvent[], last: 0, loaded: false });
  const [, redraw] = useState(0);
  const [error, setError] = useState<string>();
  if (ref.current.sessionId !== sessionId) ref.current = { sessionId, events: [], last: 0, loaded: false };
  usePoll(
    async () => {
      const current = ref.current;
      if (!sessionId || current.sessionId !== sessionId) return;
      try {
        let changed = !current.loaded;
        for (;;) {
          const page = await api.events(sessionId, current.last, PAGE);
          if (ref.current !== current) return;
          if (page.events.length === 0) break;
          current.events = current.events.concat(page.events);
          current.last = page.last_seq;
          changed = true;
          if (page.events.length < PAGE) break;
        }
        current.loaded = true;
        setError(undefined);
        if (changed) redraw((count) => count + 1);
      } catch (failure) {
        setError(failure instanceof ApiError ? failure.message : String(failure));
      }
    },
    FOLLOW_MS,
    [sessionId],
    sessionId !== undefined,
  );
  return { ...ref.current, error };
}

function runLabel(run: RunView): string {
  return run.input ? run.input.slice(0, 80) : run.runId;
}

const stateClass = (state?: string) => (state === undefined ? "running" : state === "COMPLETED" ? "ok" : state === "INTERRUPTED" ? "waiting" : "bad");

function SessionList({ sessions, selected }: { sessions: SessionSummary[]; selected?: string }) {
  const [query, setQuery] = useState("");
  const shown = useMemo(() => (query ? sessions.filter((session) => session.session_id.toLowerCase().includes(query.toLowerCase())) : sessions), [sessions, query]);
  return (
    <nav className="pane sessions" aria-label="Sessions">
      <h2>Sessions</h2>
      <label className="search">
        <span className="visually-hidden">Search sessions</span>
        <input type="search" placeholder="Search sessions" value={query} onChange={(event) => setQuery(event.target.value)} />
      </label>
      <p className="muted small">{shown.length === sessions.length ? counted(sessions.length, "session") : `${shown.length} of ${sessions.length}`}</p>
      <VirtualList
        items={shown}
        rowHeight={52}
        label="Session list"
        render={(session) => (
          <a className={`item${session.session_id === selected ? " selected" : ""}`} href={href("runs", session.session_id)} aria-current={session.session_id === selected ? "page" : undefined}>
            <span className="item-title">{session.session_id}</span>
            <span className="muted small">
              {new Date(session.updated_at).toLocaleString()} · {session.event_count} events
            </span>
          </a>
        )}
      />
    </nav>
  );
}

function RunList({ sessionId, runs, selected }: { sessionId: string; runs: RunView[]; selected?: string }) {
  const newest = useMemo(() => [...runs].reverse(), [runs]);
  return (
    <nav className="pane runs" aria-label="Runs of the session">
      <h2>Runs</h2>
      <p className="muted small">{counted(runs.length, "run")}</p>
      <VirtualList
        items={newest}
        rowHeight={58}
        label="Run list"
        render={(run) => (
          <a className={`item${run.runId === selected ? " selected" : ""}`} href={href("runs", sessionId, run.runId)} aria-current={run.runId === selected ? "page" : undefined}>
            <span className="item-title">{runLabel(run)}</span>
            <span className="small">
              <span className={`pill pill-${stateClass(run.state)}`}>{run.state ?? "RUNNING"}</span> {new Date(run.start).toLocaleTimeString()} · {formatMs(run.end !== undefined ? run.end - run.start : undefined)}
              {run.children.length > 0 ? ` · ${counted(run.children.length, "sub-agent run")}` : ""}
            </span>
          </a>
        )}
      />
    </nav>
  );
}

function BarDetail({ bar }: { bar: Bar }) {
  return (
    <aside className="detail" aria-label="Selected call">
      <h3>
        {bar.label} <span className={`pill pill-${bar.status === "ok" ? "ok" : bar.status === "running" ? "running" : "bad"}`}>{bar.status}</span>
      </h3>
      <dl className="facts">
        <dt>Duration</dt>
        <dd>{formatMs(bar.durationMs)}</dd>
        <dt>Started</dt>
        <dd>{new Date(bar.start).toISOString()}</dd>
        {bar.wave !== undefined && (
          <>
            <dt>Wave</dt>
            <dd>{bar.wave}</dd>
          </>
        )}
        {bar.tokens && (
          <>
            <dt>Tokens</dt>
            <dd>
              {bar.tokens.input} in · {bar.tokens.output} out · {bar.tokens.total} total
            </dd>
          </>
        )}
        {bar.cost !== undefined && (
          <>
            <dt>Cost</dt>
            <dd>{formatCost(bar.cost)}</dd>
          </>
        )}
        {bar.finishReason && (
          <>
            <dt>Finish</dt>
            <dd>{bar.finishReason}</dd>
          </>
        )}
        {bar.toolCallId && (
          <>
            <dt>Call id</dt>
            <dd className="mono">{bar.toolCallId}</dd>
          </>
        )}
        {bar.errorKind && (
          <>
            <dt>Error kind</dt>
            <dd>{bar.errorKind}</dd>
          </>
        )}
        <dt>Trace id</dt>
        <dd className="mono">{bar.traceId ?? "—"}</dd>
        <dt>Span id</dt>
        <dd className="mono">{bar.spanId ?? "—"}</dd>
      </dl>
      {bar.kind !== "model" && (
        <>
          <h4>Arguments</h4>
          <JsonView value={bar.arguments} label="Arguments" />
          {bar.rawArguments !== undefined && (
            <details>
              <summary>As the model wrote them</summary>
              <JsonView value={bar.rawArguments} label="Raw arguments" />
            </details>
          )}
          <h4>Output</h4>
          <JsonView value={bar.output} label="Output" />
          {bar.modelResult !== undefined && (
            <details>
              <summary>What the model saw (truncated)</summary>
              <JsonView value={bar.modelResult} label="Model result" />
            </details>
          )}
        </>
      )}
      <details>
        <summary>Events ({bar.events.length})</summary>
        <JsonView value={bar.events} label="Events" />
      </details>
    </aside>
  );
}

/** Now, ticking while `running`: a running call's bar grows even while no event arrives. */
function useNow(running: boolean): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => setNow(Date.now()), 250);
    return () => clearInterval(timer);
  }, [running]);
  return running ? now : Date.now();
}

function RunPanel({ run }: { run: RunView }) {
  const [selected, setSelected] = useState<Bar>();
  const now = useNow(run.end === undefined);
  const bar = selected ? (run.bars.find((candidate) => candidate.id === selected.id) ?? findBar(run, selected.id) ?? selected) : undefined;
  return (
    <section className="pane run" aria-label="Run">
      <header className="run-head">
        <h2>{runLabel(run)}</h2>
        <p className="small">
          <span className={`pill pill-${stateClass(run.state)}`}>{run.state ?? "RUNNING"}</span> {run.agent}
          {run.model ? ` · ${run.model}` : ""} · {formatMs((run.end ?? now) - run.start)}
          {run.usage?.totalTokens !== undefined ? ` · ${run.usage.totalTokens} tokens` : ""}
          {run.usage?.cost !== undefined ? ` · ${formatCost(run.usage.cost)}` : ""}
          <span className="mono muted"> · {run.runId}</span>
        </p>
        {run.reason && run.state !== "COMPLETED" && <p className="small muted">{run.reason}</p>}
      </header>
      <Timeline run={run} now={now} selected={bar?.id} onSelect={setSelected} />
      {bar ? <BarDetail bar={bar} /> : <p className="muted pad">Select a bar to see its request, arguments, output and span ids.</p>}
      {run.answer && (
        <section className="answer" aria-label="Answer">
          <h4>Answer</h4>
          <p className="prewrap">{run.answer}</p>
        </section>
      )}
    </section>
  );
}

function findBar(run: RunView, id: string): Bar | undefined {
  for (const child of run.children) {
    const found = child.bars.find((bar) => bar.id === id) ?? findBar(child, id);
    if (found) return found;
  }
  return undefined;
}

export function RunsView({ sessionId, runId }: { sessionId?: string; runId?: string }) {
  const { sessions, error } = useSessions();
  const log = useSessionEvents(sessionId);
  const runs = useMemo(() => runsOf(log.events), [log.events]);
  const run = runId ? runs.find((candidate) => candidate.runId === runId) : runs[runs.length - 1];
  return (
    <div className={`runs-view${sessionId ? " has-session" : ""}${runId ? " has-run" : ""}`}>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {sessions ? <SessionList sessions={sessions} selected={sessionId} /> : <p className="pane muted">Loading sessions…</p>}
      {sessionId &&
        (log.loaded ? (
          <RunList sessionId={sessionId} runs={runs} selected={run?.runId} />
        ) : (
          <p className="pane muted" aria-busy="true">
            {log.error ?? "Loading the session…"}
          </p>
        ))}
      {sessionId && log.loaded && (run ? <RunPanel key={run.runId} run={run} /> : <p className="pane muted">This session has no runs yet.</p>)}
    </div>
  );
}

/** "1 run", "2 runs". */
function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
