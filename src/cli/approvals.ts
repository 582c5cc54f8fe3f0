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
 * Answers the approval request in `event` (a sub-agent's too), if it is one: `all` approves, `none`
 * rejects, `ask` puts the question and approves only on y/yes (no answer, or the end of input, rejects).
 */
export async function answerApproval(run: Run, event: LoopEvent, mode: ApproveMode, ask: (question: string) => Promise<string | undefined>): Promise<void> {
  const request = approvalRequestOf(event);
  if (!request || !run.pendingApprovals.includes(request.toolCallId)) return;
  if (mode === "all") return run.approve(request.toolCallId);
  if (mode === "none") return run.reject(request.toolCallId, "rejected by --approve none");
  const answer = (await ask(approvalQuestion(request)))?.trim().toLowerCase();
  if (answer === "y" || answer === "yes") run.approve(request.toolCallId);
  else run.reject(request.toolCallId, answer === undefined ? "no answer (end of input)" : "declined by the user");
}

/** Reads answers from stdin, opened on the first question only (a run without approvals never touches stdin). */
export class StdinQuestions {
  private lines?: Interface;
  private iterator?: AsyncIterator<string>;

  constructor(
    private readonly input: NodeJS.ReadableStream,
    private readonly output: NodeJS.WritableStream,
  ) {}

  ask = async (question: string): Promise<string | undefined> => {
    this.output.write(question);
    if (!this.iterator) {
      this.lines = createInterface({ input: this.input, terminal: false });
      this.iterator = this.lines[Symbol.asyncIterator]();
    }
    const next = await this.iterator.next();
    return next.done ? undefined : next.value;
  };

  close(): void {
    this.lines?.close();
  }
}
