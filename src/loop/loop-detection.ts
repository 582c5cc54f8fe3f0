import { createHash } from "node:crypto";

/** Stable JSON: object keys sorted, so `{a,b}` and `{b,a}` hash the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.keys(value as object)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export function callSignature(name: string, args: unknown): string {
  const hash = createHash("sha256").update(canonical(args)).digest("hex").slice(0, 12);
  return `${name}#${hash}`;
}

/**
 * Finds a repeating pattern of length 1, 2 or 3 that fills the last `window` calls. The check
 * is `s[i] === s[i - period]` over the whole window, so a 3-call cycle is caught in a window
 * of 10 even though 10 is not a multiple of 3. Returns the repeating unit, or undefined.
 */
export function detectLoop(signatures: readonly string[], window = 10): string[] | undefined {
  if (signatures.length < window) return undefined;
  const recent = signatures.slice(-window);
  for (const period of [1, 2, 3]) {
    if (window < period * 2) continue;
    let repeating = true;
    for (let index = period; index < recent.length && repeating; index++) repeating = recent[index] === recent[index - period];
    if (repeating) return recent.slice(0, period);
  }
  return undefined;
}
