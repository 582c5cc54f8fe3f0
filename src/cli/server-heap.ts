import { setFlagsFromString } from "node:v8";

/**
 * How far V8 lets the old generation grow past what the last full collection kept before it
 * collects again, for `agentloop serve`. V8's own factor goes up to 4× on a small heap: a server's
 * run state lives about as long as a stream (hundreds of ms), outlives two young collections, is
 * promoted and dies there, so under 200 concurrent streams the old space filled with ~50 MB of
 * garbage before it was collected (162 MB RSS at the peak; 126 MB with 50 %, bench scenario 5,
 * with no visible change in CPU per request or latency).
 */
export const SERVER_HEAP_GROWING_PERCENT = 50;

/**
 * The V8 flag `agentloop serve` sets on its own process, or undefined when the user chose one
 * (`--heap-growing-percent` in the node options or `NODE_OPTIONS`; `=0` restores V8's default).
 */
export function serverHeapFlag(execArgv: readonly string[], nodeOptions = ""): string | undefined {
  const chosen = [...execArgv, ...nodeOptions.split(/\s+/)].some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg));
  return chosen ? undefined : `--heap-growing-percent=${SERVER_HEAP_GROWING_PERCENT}`;
}

/**
 * Sets `serverHeapFlag` on this process: a process-wide V8 setting, so only the CLI, which owns
 * its process, calls it (`startAgentServer` in someone else's program does not). V8 reads the
 * factor each time it sets the next limit, so setting it after start-up takes effect.
 */
export function tuneServerHeap(): void {
  const flag = serverHeapFlag(process.execArgv, process.env.NODE_OPTIONS);
  if (flag) setFlagsFromString(flag);
}
