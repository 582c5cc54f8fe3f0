// Approvals in the terminal: `Allow <tool>(<args>)? [y/N]` for each call that needs one.
import { createInterface, type Interface } from "node:readline";
import { approvalRequestOf } from "../loop/approvals.js";
import type { LoopEvent } from "../loop/events.js";
import type { Run } from "../loop/run.js";

export type ApproveMode = "all" | "none" | "ask";
export const APPROVE_MODES: readonly ApproveMode[] = ["all", "none", "ask"];

/** The question for one call: `Allow write_file({"path":"a.txt"})? [y/N] `. */
export function approvalQuestion(request: { name: string; arguments: unknown }): string {
  return `Allow ${request.name}(${JSON.stringify(request.arguments)})? [y/N] `;
}

/**
 * Puts a question and reads the answer: the line, undefined at the end of input, or null when
 * `signal` aborted first (Ctrl-C at the question: the run is being aborted, nothing to answer).
 */
export type Ask = (question: string, signal?: AbortSignal) => Promise<string | undefined | null>;

/**
 * Answers the approval request in `event` (a sub-agent's too), if it is one: `all` approves, `none`
 * rejects, `ask` puts the question and approves only on y/yes (no answer, or the end of input,
 * rejects). When `signal` aborts while the question waits (Ctrl-C), it returns without an answer:
 * the aborted run ends by itself.
 */
export async function answerApproval(run: Run, event: LoopEvent, mode: ApproveMode, ask: Ask, signal?: AbortSignal): Promise<void> {
  const request = approvalRequestOf(event);
  if (!request || !run.pendingApprovals.includes(request.toolCallId)) return;
  if (mode === "all") return run.approve(request.toolCallId);
  if (mode === "none") return run.reject(request.toolCallId, "rejected by --approve none");
  const line = await ask(approvalQuestion(request), signal);
  if (line === null || !run.pendingApprovals.includes(request.toolCallId)) return;
  const answer = line?.trim().toLowerCase();
  if (answer === "y" || answer === "yes") run.approve(request.toolCallId);
  else run.reject(request.toolCallId, answer === undefined ? "no answer (end of input)" : "declined by the user");
}

/**
 * An input's lines, one read at a time. A read given up (`signal` aborted: Ctrl-C at a question)
 * leaves its line to the next read, so the line typed after it is not lost to the aborted question.
 * Also an AsyncIterator, for readers that take one (the elicitation's form).
 */
export class LineReader implements AsyncIterator<string> {
  private waiting?: Promise<IteratorResult<string>>;

  constructor(private readonly lines: AsyncIterator<string>) {}

  /** The next line; undefined at the end of input; null when `signal` aborted first. */
  async read(signal?: AbortSignal): Promise<string | undefined | null> {
    if (signal?.aborted) return null;
    this.waiting ??= this.lines.next();
    let onAbort = () => {};
    const aborted = new Promise<null>((resolve) => {
      onAbort = () => resolve(null);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const result = await (signal ? Promise.race([this.waiting, aborted]) : this.waiting);
      if (result === null) return null;
      this.waiting = undefined;
      return result.done ? undefined : result.value;
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  async next(): Promise<IteratorResult<string>> {
    const line = await this.read();
    return typeof line === "string" ? { done: false, value: line } : { done: true, value: undefined };
  }
}

/** Reads answers from stdin, opened on the first question only (a run without approvals never touches stdin). */
export class StdinQuestions {
  private lines?: Interface;
  private reader?: LineReader;

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly output: NodeJS.WritableStream,
  ) {}

  ask: Ask = async (question, signal) => {
    this.output.write(question);
    if (!this.reader) {
      this.lines = createInterface({ input: this.input, terminal: false });
      this.reader = new LineReader(this.lines[Symbol.asyncIterator]());
    }
    const answer = await this.reader.read(signal);
    if (answer === null) this.output.write("\n"); // the question's line ends; the abort is said below it
    return answer;
  };

  close(): void {
    this.lines?.close();
  }
}
