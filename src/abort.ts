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
