import { keepShape } from "./shapes.js";

/**
 * Runs `listener` once when `signal` aborts (at once if it already has). Returns a function
 * that removes the listener: long runs must not pile listeners onto one signal.
 */
export function onAbort(signal: AbortSignal | undefined, listener: () => void): () => void {
  if (!signal) return () => undefined;
  if (signal.aborted) {
    listener();
    return () => undefined;
  }
  signal.addEventListener("abort", listener, { once: true });
  return () => signal.removeEventListener("abort", listener);
}

// A controller, its signal and a listener on it, as every run and model call makes (see src/shapes.ts).
keepShape(new AbortController()).signal.addEventListener("abort", () => undefined, { once: true });

/** Waits `ms`, or less if the signal aborts first. Never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    // Declared first: with an already-aborted signal the listener runs synchronously.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const dispose = onAbort(signal, () => {
      clearTimeout(timer);
      resolve();
    });
    if (signal?.aborted) return;
    timer = setTimeout(() => {
      dispose();
      resolve();
    }, ms);
  });
}

/**
 * A signal that aborts after `ms` with a `TimeoutError`, as `AbortSignal.timeout` does, but held by
 * its timer: node's `AbortSignal.timeout` is only weakly held, and inside `AbortSignal.any` a
 * collection can drop it before it fires (a call to a silent peer that never timed out in a busy
 * process). The timer does not keep the process alive.
 */
export function timeoutSignal(ms: number): AbortSignal {
  const controller = new AbortController();
  setTimeout(() => controller.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")), ms).unref();
  return controller.signal;
}
