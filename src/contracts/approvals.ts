/**
 * What a run's approvals look like to a tool: the `needsApproval` check's context, and the scope a
 * delegating tool hands to its sub-agent's run (one broker for the whole tree). Below both
 * src/tools and src/loop; src/loop/approvals.ts (the controlled wave) re-exports these.
 */
import { onAbort } from "../abort.js";
import type { ApprovalDecision } from "./checkpoint.js";

export type ApprovalMode = "wait" | "interrupt";

/** What a call's `needsApproval` function gets besides the arguments. */
export interface ApprovalContext {
  toolCallId: string;
  toolName: string;
  runId: string;
  agentPath: readonly string[];
  inputs: Record<string, unknown>;
}

/**
 * Pending approvals of a run and its sub-agents (one broker for the whole tree, so a sub-agent's
 * request is answered through the top-level `run.approve`).
 */
export class ApprovalBroker {
  private readonly waiting = new Map<string, { toolName: string; resolve: (decision: ApprovalDecision) => void }>();

  /** The ids of the calls waiting for a decision now. */
  get pending(): string[] {
    return [...this.waiting.keys()];
  }

  /** Waits for the decision on `callId`: undefined when the run aborted first; a timeout rejects. */
  wait(callId: string, toolName: string, signal: AbortSignal, timeoutMs: number | undefined): Promise<ApprovalDecision | undefined> {
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = (decision: ApprovalDecision | undefined) => {
        if (!this.waiting.has(callId)) return;
        this.waiting.delete(callId);
        clearTimeout(timer);
        unlink();
        resolve(decision);
      };
      this.waiting.set(callId, { toolName, resolve: done });
      const unlink = onAbort(signal, () => done(undefined));
      if (timeoutMs !== undefined) timer = setTimeout(() => done({ approve: false, reason: `approval timed out after ${timeoutMs} ms` }), timeoutMs);
    });
  }

  /** Answers a pending request; throws when no call with this id waits. */
  decide(callId: string, decision: ApprovalDecision): void {
    const entry = this.waiting.get(callId);
    if (!entry) {
      const open = this.pending;
      throw new Error(`no approval is pending for tool call "${callId}" (pending: ${open.length ? open.join(", ") : "none"})`);
    }
    entry.resolve(decision);
  }
}

/** How a run handles approvals; handed to sub-agents through their tool context. */
export interface ApprovalScope {
  broker: ApprovalBroker;
  mode: ApprovalMode;
  timeoutMs?: number;
}
