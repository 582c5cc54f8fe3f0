/** The page's place, in the URL's hash (`#/runs/<session>/<run>`): bookmarkable, no server routes needed. */
import { useEffect, useState } from "react";

export function parseHash(hash: string): string[] {
  return hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter(Boolean)
    .map((part) => decodeURIComponent(part));
}

export function href(...parts: string[]): string {
  return `#/${parts.map((part) => encodeURIComponent(part)).join("/")}`;
}

export function useRoute(): string[] {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseHash(location.hash));
    addEventListener("hashchange", update);
    return () => removeEventListener("hashchange", update);
  }, []);
  return route;
}

/** Calls `fn` now and every `ms` while mounted (and while `enabled`). */
export function usePoll(fn: () => void | Promise<void>, ms: number, deps: unknown[], enabled = true): void {
  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names what restarts the poll
  useEffect(() => {
    if (!enabled) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        await fn();
      } finally {
        if (!stopped) timer = setTimeout(tick, ms);
      }
    };
    void tick();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [...deps, enabled]);
}
