import { timeoutSignal } from "../abort.js";
import { messageWithCause } from "../errors.js";
import type { ToolResultValue } from "../tools/tool.js";

/**
 * The contract with tracing: when `context.services.traceHeaders` is a function, it returns the
 * W3C trace context headers (`traceparent`, `tracestate`) of the current tool call, and every
 * remote delegation (A2A, KAOS-style HTTP) sends them with its requests.
 */
export type TraceHeadersService = () => Record<string, string> | undefined;

/** The trace headers to send from a tool call, or `{}`. Never throws. */
export function traceHeadersOf(services: Record<string, unknown> | undefined): Record<string, string> {
  const provider = services?.traceHeaders;
  if (typeof provider !== "function") return {};
  try {
    const headers = (provider as TraceHeadersService)();
    if (!headers || typeof headers !== "object") return {};
    const result: Record<string, string> = {};
    for (const [key, value] of Object.entries(headers)) if (typeof value === "string") result[key] = value;
    return result;
  } catch {
    return {};
  }
}

/** The tool result of a remote delegation that did not work: `[Delegation failed: <reason>]`. */
export function delegationFailed(reason: string): ToolResultValue {
  return { content: `[Delegation failed: ${reason}]`, isError: true };
}

export function reasonOf(error: unknown, signal?: AbortSignal): string {
  if (signal?.aborted) {
    const reason = signal.reason;
    return `aborted${reason instanceof Error && reason.message ? ` (${reason.message})` : typeof reason === "string" ? ` (${reason})` : ""}`;
  }
  return messageWithCause(error);
}

/** The signal of one remote call: the run's, and a timer when `timeoutMs` is set. */
export function remoteCallSignal(runSignal: AbortSignal, timeoutMs: number | undefined): AbortSignal {
  return timeoutMs ? AbortSignal.any([runSignal, timeoutSignal(timeoutMs)]) : runSignal;
}

/**
 * The result of a remote call that threw: a timeout (the call's signal fired, the run's did not)
 * names the peer and the limit; anything else gives its reason.
 */
export function remoteCallFailed(error: unknown, runSignal: AbortSignal, callSignal: AbortSignal, peer: string, timeoutMs: number | undefined): ToolResultValue {
  if (!runSignal.aborted && callSignal.aborted) return delegationFailed(`no answer from ${peer} within ${timeoutMs} ms`);
  return delegationFailed(reasonOf(error, runSignal));
}
