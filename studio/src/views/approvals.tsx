/**
 * Approvals inbox: every call waiting for a person, across sessions (`GET /v1/approvals`). A
 * decision goes to `POST /v1/approvals` bound to the arguments hash the request showed; the
 * answer streams in below it. A call decided here cannot be decided again from this page (and the
 * server refuses a second decision: 409).
 */
import { useState } from "react";
import { ApiError, api, decideApprovals, type PendingApproval } from "../api.js";
import { JsonView } from "../components/json-view.js";
import { href, usePoll } from "../router.js";

type Outcome = { state: "sending" | "done" | "refused"; approve: boolean; text: string; error?: string };

const keyOf = (item: PendingApproval) => `${item.checkpoint_id}/${item.tool_call_id}`;

function ApprovalItem({ item, outcome, onDecide }: { item: PendingApproval; outcome?: Outcome; onDecide: (approve: boolean, reason: string) => void }) {
  const [reason, setReason] = useState("");
  const id = `reason-${item.tool_call_id}`;
  const decided = outcome !== undefined;
  return (
    <li className="card approval" aria-label={`Approval for ${item.tool}`}>
      <header>
        <h3>
          <span className="mono">{item.tool}</span>
        </h3>
        <p className="small muted">
          {item.agent_path.join(" › ")} · session <a href={href("runs", item.session_id, ...(item.run_id ? [item.run_id] : []))}>{item.session_id}</a> · {new Date(item.requested_at).toLocaleString()}
        </p>
      </header>
      <h4>Arguments</h4>
      <JsonView value={item.arguments} label={`Arguments of ${item.tool}`} />
      <p className="small muted mono">arguments hash {item.arguments_hash.slice(0, 16)}…</p>
      <div className="decide">
        <label htmlFor={id}>Reason (sent with a rejection)</label>
        <input id={id} value={reason} disabled={decided} onChange={(event) => setReason(event.target.value)} placeholder="Why not?" />
        <div className="buttons">
          <button type="button" className="approve" disabled={decided} onClick={() => onDecide(true, reason)}>
            Approve
          </button>
          <button type="button" className="reject" disabled={decided} onClick={() => onDecide(false, reason)}>
            Reject
          </button>
        </div>
      </div>
      {outcome && (
        <div className="outcome" aria-live="polite">
          <p className="small">
            <span className={`pill pill-${outcome.state === "refused" ? "bad" : outcome.approve ? "ok" : "waiting"}`}>{outcome.approve ? "approved" : "rejected"}</span>{" "}
            {outcome.state === "sending" ? "the run goes on…" : outcome.state === "done" ? "the run went on" : "refused"}
          </p>
          {outcome.error && (
            <p className="error" role="alert">
              {outcome.error}
            </p>
          )}
          {outcome.text && (
            <section className="prewrap answer-text" aria-label="Answer">
              {outcome.text}
            </section>
          )}
        </div>
      )}
    </li>
  );
}

export function ApprovalsView() {
  const [pending, setPending] = useState<PendingApproval[]>();
  const [error, setError] = useState<string>();
  const [outcomes, setOutcomes] = useState<Record<string, Outcome>>({});
  const [kept, setKept] = useState<Record<string, PendingApproval>>({});
  usePoll(
    async () => {
      try {
        setPending((await api.approvals()).pending);
        setError(undefined);
      } catch (failure) {
        setError((failure as Error).message);
      }
    },
    1500,
    [],
  );
  const update = (key: string, change: Partial<Outcome>) => setOutcomes((all) => ({ ...all, [key]: { ...all[key], ...change } }));
  const decide = async (item: PendingApproval, approve: boolean, reason: string) => {
    const key = keyOf(item);
    if (outcomes[key]) return; // decided once on this page: never twice
    setKept((all) => ({ ...all, [key]: item }));
    setOutcomes((all) => ({ ...all, [key]: { state: "sending", approve, text: "" } }));
    try {
      await decideApprovals(item.session_id, { [item.tool_call_id]: { approve, arguments_hash: item.arguments_hash, ...(!approve && reason ? { reason } : {}) } }, (delta) =>
        setOutcomes((all) => ({ ...all, [key]: { ...all[key], text: all[key].text + delta } })),
      );
      update(key, { state: "done" });
    } catch (failure) {
      update(key, { state: "refused", error: failure instanceof ApiError ? failure.message : String(failure) });
    }
  };
  // Decided items stay on screen (with their answer) after the server stops listing them.
  const shown = [...(pending ?? [])];
  for (const [key, item] of Object.entries(kept)) if (!shown.some((entry) => keyOf(entry) === key)) shown.push(item);
  return (
    <main className="page approvals-view" aria-label="Approvals">
      <h2>Approvals</h2>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {pending === undefined ? (
        <p className="muted">Loading…</p>
      ) : shown.length === 0 ? (
        <p className="muted">Nothing waits for a decision.</p>
      ) : (
        <ul className="approval-list">
          {shown.map((item) => (
            <ApprovalItem key={keyOf(item)} item={item} outcome={outcomes[keyOf(item)]} onDecide={(approve, reason) => void decide(item, approve, reason)} />
          ))}
        </ul>
      )}
    </main>
  );
}
