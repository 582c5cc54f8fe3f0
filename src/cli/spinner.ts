import type { LoopEvent } from "../loop/events.js";
import { formatDuration, type Palette, type WriteTarget } from "./render.js";

const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/**
 * A live status line under the renderer's output while tools run (TTY only): a spinner per
 * running tool with its elapsed time. Everything written through it clears the status line
 * first and redraws it after, so the renderer's lines stay intact.
 */
export class ToolSpinner implements WriteTarget {
  readonly isTTY = true;
  private readonly running = new Map<string, { name: string; started: number }>();
  private timer?: NodeJS.Timeout;
  private frame = 0;
  private drawn = false;

  constructor(
    private readonly out: WriteTarget,
    private readonly colors: Palette,
  ) {}

  write(text: string): void {
    this.clear();
    this.out.write(text);
    this.draw();
  }

  onEvent(event: LoopEvent): void {
    if (event.type === "tool-start") {
      this.running.set(event.toolCallId, { name: event.name, started: Date.now() });
      this.timer ??= setInterval(() => {
        this.frame = (this.frame + 1) % frames.length;
        this.clear();
        this.draw();
      }, 80);
    } else if (event.type === "tool-end") {
      this.running.delete(event.toolCallId);
    } else if (event.type === "run-end") {
      this.running.clear();
    }
    if (this.running.size === 0) this.stop();
  }

  /** Stops the animation and removes the status line. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.clear();
  }

  private clear(): void {
    if (this.drawn) this.out.write("\r\u001b[2K");
    this.drawn = false;
  }

  private draw(): void {
    if (this.running.size === 0) return;
    const now = Date.now();
    const parts = [...this.running.values()].map((tool) => `${this.colors.cyan(frames[this.frame])} ${tool.name} ${this.colors.dim(formatDuration(now - tool.started))}`);
    this.out.write(`  ${parts.join("  ")}`);
    this.drawn = true;
  }
}
