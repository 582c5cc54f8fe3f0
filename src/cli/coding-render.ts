// The coding session's view: the run renderer's waves and answer, plus the diff of each edit and
// shell output as it streams.
import type { LoopEvent } from "../loop/events.js";
import { type Palette, palette, RunRenderer, type WriteTarget } from "./render.js";

/** At most this many diff lines per edit are shown (the rest is counted). */
const MAX_DIFF_LINES = 80;
/** The tools' own marker when they cut a diff (`… N more diff lines`). */
const CUT_MARKER = /^… (\d+) more diff lines$/;

interface Change {
  path?: string;
  moveTo?: string;
  action?: string;
  diff?: string;
}

/** The file changes a tool-end reports in `structured`: write_file/edit_file one, apply_patch several. */
function changesOf(structured: unknown): Change[] {
  if (typeof structured !== "object" || structured === null) return [];
  const value = structured as { changes?: unknown; diff?: unknown };
  if (Array.isArray(value.changes)) return value.changes as Change[];
  return typeof value.diff === "string" ? [value as Change] : [];
}

export class CodingRenderer {
  private readonly colors: Palette;
  private readonly runs: RunRenderer;
  /** Shell output not yet ended by a newline, per call. */
  private readonly pending = new Map<string, string>();

  constructor(private readonly out: WriteTarget) {
    this.colors = palette(out);
    this.runs = new RunRenderer(out, { colors: this.colors });
  }

  private shellLines(text: string): void {
    for (const line of text.split("\n")) this.out.write(`    ${this.colors.dim("│")} ${line}\n`);
  }

  private diff(changes: Change[]): void {
    const c = this.colors;
    for (const change of changes) {
      if (!change.diff) continue;
      const lines = change.diff.split("\n");
      // Lines the tool already left out count as not shown.
      const cut = CUT_MARKER.exec(lines[lines.length - 1] ?? "");
      if (cut) lines.pop();
      const hidden = Math.max(0, lines.length - MAX_DIFF_LINES) + (cut ? Number(cut[1]) : 0);
      const shown = lines.slice(0, MAX_DIFF_LINES);
      this.out.write(`    ${c.bold(`${change.path ?? ""}${change.moveTo ? ` → ${change.moveTo}` : ""}`)}\n`);
      for (const line of shown) {
        const colored = line.startsWith("@@") ? c.cyan(line) : line.startsWith("+") ? c.green(line) : line.startsWith("-") ? c.red(line) : c.dim(line);
        this.out.write(`    ${colored}\n`);
      }
      if (hidden > 0) this.out.write(`    ${c.dim(`… ${hidden} more diff lines`)}\n`);
    }
  }

  onEvent(event: LoopEvent): void {
    if (event.type === "tool-progress" && event.name === "shell") {
      const data = event.data as { stream?: string; text?: string };
      if (typeof data?.text !== "string") return;
      const text = (this.pending.get(event.toolCallId) ?? "") + data.text;
      const end = text.lastIndexOf("\n");
      if (end === -1) {
        this.pending.set(event.toolCallId, text);
        return;
      }
      this.pending.set(event.toolCallId, text.slice(end + 1));
      this.shellLines(text.slice(0, end));
      return;
    }
    if (event.type === "tool-end") {
      const rest = this.pending.get(event.toolCallId);
      if (rest) this.shellLines(rest);
      this.pending.delete(event.toolCallId);
      this.runs.onEvent(event);
      if (!event.isError) this.diff(changesOf(event.structured));
      return;
    }
    this.runs.onEvent(event);
  }
}
