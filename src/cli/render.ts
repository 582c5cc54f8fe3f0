import type { LoopEvent } from "../loop/events.js";

export interface Palette {
  dim(text: string): string;
  bold(text: string): string;
  green(text: string): string;
  red(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

/** Colours only on a TTY, and never when NO_COLOR is set (https://no-color.org). */
export function palette(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Palette {
  const enabled = stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === "") && env.TERM !== "dumb";
  const wrap = (open: number, close: number) => (text: string) => (enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text);
  return { dim: wrap(2, 22), bold: wrap(1, 22), green: wrap(32, 39), red: wrap(31, 39), yellow: wrap(33, 39), cyan: wrap(36, 39) };
}

export function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

function preview(value: unknown, max = 80): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  const line = (text ?? "").replace(/\s+/g, " ");
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

export interface WriteTarget {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * Renders a run for people: each wave's tools with their duration and ok/error, then the answer
 * streamed as it arrives. Reads only loop events, so `run`, `chat` and nested agents share it.
 */
export class RunRenderer {
  private readonly colors: Palette;
  private atLineStart = true;
  private wave = 0;

  constructor(
    private readonly out: WriteTarget,
    options: { colors?: Palette; indent?: string } = {},
  ) {
    this.colors = options.colors ?? palette(out);
    this.indent = options.indent ?? "";
  }

  private readonly indent: string;

  private line(text: string): void {
    if (!this.atLineStart) this.out.write("\n");
    this.out.write(`${this.indent}${text}\n`);
    this.atLineStart = true;
  }

  onEvent(event: LoopEvent): void {
    const c = this.colors;
    switch (event.type) {
      case "progress":
        if (event.step !== this.wave) {
          this.wave = event.step;
          this.line(c.cyan(`● wave ${event.step}`));
        }
        break;
      case "tool-start":
        this.line(c.dim(`  … ${event.action === "delegate" ? "delegating to" : "running"} ${event.name} ${preview(event.arguments, 60)}`));
        break;
      case "tool-end": {
        const mark = event.isError ? c.red("✗") : c.green("✓");
        const detail = event.isError ? c.red(preview(event.output)) : c.dim(preview(event.output));
        this.line(`  ${mark} ${c.bold(event.name)} ${c.dim(formatDuration(event.durationMs))}  ${detail}`);
        break;
      }
      case "tool-progress":
        this.line(c.dim(`    ↳ ${event.name}: ${preview(event.data)}`));
        break;
      case "steering":
        this.line(c.yellow(`↪ steering: ${preview(event.content)}`));
        break;
      case "loop-warning":
        this.line(c.yellow(`⚠ loop detected: ${event.pattern.join(" → ")}`));
        break;
      case "nested":
        if (event.event.type === "tool-end" || event.event.type === "tool-start") {
          new RunRenderer(this.out, { colors: c, indent: `${this.indent}    ${c.dim(`[${event.agent}]`)} ` }).onEvent(event.event);
        }
        break;
      case "text-delta":
      case "commentary-delta": {
        if (this.atLineStart && this.wave > 0) this.out.write("\n");
        this.out.write(event.type === "commentary-delta" ? c.dim(event.delta) : event.delta);
        this.atLineStart = event.delta.endsWith("\n");
        break;
      }
      case "run-end":
        if (!this.atLineStart) this.out.write("\n");
        this.atLineStart = true;
        break;
      default:
        break;
    }
  }
}
