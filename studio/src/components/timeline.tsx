/**
 * A run as a waterfall: model calls and tool calls as bars on one time axis, the calls of one wave
 * on rows of their own so parallel work is visibly parallel, marks for errors, retries, limits,
 * guardrail denials and approvals. Takes data, renders it; a click (or Enter) selects a bar.
 */
import { type KeyboardEvent, useMemo } from "react";
import { type Bar, formatCost, formatMs, type RunView, type TimelineRow, timeRange, timelineRows } from "../timeline.js";
import { VirtualList } from "./virtual-list.js";

const ROW = 30;

function ticks(span: number): number[] {
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000, 60_000, 300_000, 600_000, 3_600_000];
  const step = steps.find((candidate) => span / candidate <= 6) ?? span / 6;
  const out: number[] = [];
  for (let at = 0; at <= span; at += step) out.push(at);
  return out;
}

export function Timeline({ run, now, selected, onSelect }: { run: RunView; now: number; selected?: string; onSelect: (bar: Bar) => void }) {
  const rows = useMemo(() => timelineRows(run), [run]);
  const range = timeRange(run, rows, now);
  const span = range.end - range.start;
  const position = (at: number) => ((at - range.start) / span) * 100;
  const renderRow = ({ bar, depth }: TimelineRow) => {
    const left = position(bar.start);
    const width = Math.max(0.4, position(bar.end ?? now) - left);
    const choose = () => onSelect(bar);
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        choose();
      }
    };
    const tokens = bar.tokens ? ` · ${bar.tokens.total} tokens` : "";
    const cost = bar.cost !== undefined ? ` · ${formatCost(bar.cost)}` : "";
    const wave = bar.kind !== "model" && bar.wave !== undefined ? ` · wave ${bar.wave}` : "";
    const description = `${bar.label}: ${formatMs(bar.durationMs)}${tokens}${cost}${wave}, ${bar.status}`;
    return (
      <div className={`trow${selected === bar.id ? " selected" : ""}`}>
        <div className="tlabel" style={{ paddingLeft: 8 + depth * 16 }} title={bar.label}>
          <span className={`kind kind-${bar.kind}`} aria-hidden="true" />
          {bar.label}
        </div>
        <div className="ttrack">
          <button
            type="button"
            className={`bar bar-${bar.kind} status-${bar.status}`}
            style={{ left: `${left}%`, width: `${width}%` }}
            onClick={choose}
            onKeyDown={onKey}
            aria-label={description}
            title={description}
            data-bar-kind={bar.kind}
            data-start={bar.start}
            data-end={bar.end ?? ""}
          >
            <span className="bar-text">
              {formatMs(bar.durationMs ?? (bar.end === undefined ? now - bar.start : undefined))}
              {tokens}
            </span>
          </button>
        </div>
      </div>
    );
  };
  return (
    <section className="timeline" aria-label={`Timeline of run ${run.runId}`}>
      <div className="taxis" aria-hidden="true">
        <div className="tlabel">{formatMs(span)}</div>
        <div className="ttrack">
          {ticks(span).map((at) => (
            <span key={at} className="tick" style={{ left: `${(at / span) * 100}%` }}>
              {formatMs(at)}
            </span>
          ))}
          {run.marks.map((mark) => (
            <span key={mark.event.event_id + mark.kind} className={`mark mark-${mark.kind}`} style={{ left: `${position(mark.at)}%` }} title={mark.label} />
          ))}
        </div>
      </div>
      {rows.length === 0 ? <p className="muted pad">No model or tool calls yet.</p> : <VirtualList items={rows} rowHeight={ROW} render={renderRow} label="Calls" className="tlist" height={Math.min(rows.length, 14) * ROW} />}
      {run.marks.length > 0 && (
        <ul className="marks" aria-label="Marks">
          {run.marks.map((mark) => (
            <li key={mark.event.event_id + mark.kind} className={`note note-${mark.kind}`}>
              <span className="badge">{mark.kind}</span> {mark.label}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
