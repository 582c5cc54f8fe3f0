/**
 * Durable runs (when the server runs in durable mode): their state, cancel, resume, and reattach to
 * a run's stream (`GET /v1/runs/{id}/events`, from the start of its journal).
 */
import { useEffect, useState } from "react";
import { ApiError, api, type DurableRun, streamRequest } from "../api.js";
import { href, usePoll } from "../router.js";

const statusClass = (status: string) => (status === "SUCCESS" ? "ok" : status === "PENDING" || status === "ENQUEUED" ? "running" : "bad");

function Reattached({ runId }: { runId: string }) {
  const [text, setText] = useState("");
  const [state, setState] = useState<"streaming" | "ended" | string>("streaming");
  useEffect(() => {
    // From the start of the run's journal until its [DONE] (or the view goes away: the run goes on).
    const controller = new AbortController();
    streamRequest(`/v1/runs/${encodeURIComponent(runId)}/events?after=0`, { method: "GET", signal: controller.signal }, (data) => {
      const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }>; error?: { message: string } };
      if (chunk.error) setState(chunk.error.message);
      const content = chunk.choices?.[0]?.delta?.content;
      if (content) setText((all) => all + (content.startsWith('{"type":"progress"') ? `\n[${(JSON.parse(content) as { target: string }).target}]\n` : content));
    }).then(
      () => setState((current) => (current === "streaming" ? "ended" : current)),
      (failure: unknown) => {
        if (!controller.signal.aborted) setState(failure instanceof ApiError ? failure.message : String(failure));
      },
    );
    return () => controller.abort();
  }, [runId]);
  return (
    <section className="reattached" aria-live="polite" aria-label={`Stream of ${runId}`}>
      <p className="small muted">{state === "streaming" ? "following the run's stream…" : state}</p>
      <p className="prewrap">{text}</p>
    </section>
  );
}

export function DurableView({ enabled }: { enabled: boolean }) {
  const [runs, setRuns] = useState<DurableRun[]>();
  const [error, setError] = useState<string>();
  const [attached, setAttached] = useState<string>();
  usePoll(
    async () => {
      try {
        setRuns((await api.durableRuns()).runs);
        setError(undefined);
      } catch (failure) {
        setError((failure as Error).message);
      }
    },
    1500,
    [],
    enabled,
  );
  if (!enabled) return <main className="page muted">Durable mode is off on this server (DURABLE=true turns it on).</main>;
  const act = async (runId: string, action: "cancel" | "resume") => {
    try {
      const updated = action === "cancel" ? await api.cancelRun(runId) : await api.resumeRun(runId);
      setRuns((all) => all?.map((run) => (run.runId === runId ? { ...run, ...updated } : run)));
      setError(undefined);
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  return (
    <main className="page durable-view" aria-label="Durable runs">
      <h2>Durable runs</h2>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {!runs ? (
        <p className="muted">Loading…</p>
      ) : runs.length === 0 ? (
        <p className="muted">No durable runs yet.</p>
      ) : (
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Status</th>
              <th scope="col">Session</th>
              <th scope="col">Input</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((run) => (
              <tr key={run.runId} aria-label={`Durable run ${run.runId}`}>
                <td className="mono small">{run.runId}</td>
                <td>
                  <span className={`pill pill-${statusClass(run.status)}`}>{run.status}</span>
                  {run.pendingApprovals?.length ? <span className="small"> waits for approval</span> : null}
                </td>
                <td className="small">{run.sessionId ? <a href={href("runs", run.sessionId)}>{run.sessionId}</a> : "—"}</td>
                <td className="small">{run.input?.slice(0, 60) ?? ""}</td>
                <td className="buttons">
                  <button type="button" disabled={run.status !== "PENDING" && run.status !== "ENQUEUED"} onClick={() => void act(run.runId, "cancel")} aria-label={`Cancel ${run.runId}`}>
                    Cancel
                  </button>
                  <button type="button" disabled={run.status === "SUCCESS" || run.status === "PENDING"} onClick={() => void act(run.runId, "resume")} aria-label={`Resume ${run.runId}`}>
                    Resume
                  </button>
                  <button type="button" onClick={() => setAttached(run.runId)} aria-label={`Reattach to ${run.runId}`}>
                    Reattach
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {attached && <Reattached key={attached} runId={attached} />}
    </main>
  );
}
