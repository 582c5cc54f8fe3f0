/** Stable JSON: object keys sorted, so `{a,b}` and `{b,a}` give the same text. */
function canonical(value: unknown): string {
  if (typeof value !== "object" || value === null) return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let text = "[";
    for (let index = 0; index < value.length; index++) text += (index ? "," : "") + canonical(value[index]);
    return `${text}]`;
  }
  const keys = Object.keys(value);
  // Keys arrive in the model's order; sort only when they are not sorted already (most calls).
  for (let index = 1; index < keys.length; index++) {
    if (keys[index - 1] > keys[index]) {
      keys.sort();
      break;
    }
  }
  let text = "{";
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index];
    text += `${index ? "," : ""}${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`;
  }
  return `${text}}`;
}

/**
 * What identifies a call for loop detection: the tool name and its canonical arguments, compared
 * as text (exact, no hash: two different calls can never look the same). The separator is a NUL,
 * which canonical JSON never contains raw, so {@link signatureName} finds the name again.
 */
export function callSignature(name: string, args: unknown): string {
  return `${name}\u0000${canonical(args)}`;
}

/** The tool name of a signature made by {@link callSignature}. */
export function signatureName(signature: string): string {
  const end = signature.lastIndexOf("\u0000");
  return end === -1 ? signature : signature.slice(0, end);
}

/**
 * Finds a repeating pattern of length 1, 2 or 3 that fills the last `window` calls. The check
 * is `s[i] === s[i - period]` over the whole window, so a 3-call cycle is caught in a window
 * of 10 even though 10 is not a multiple of 3. Returns the repeating unit, or undefined.
 */
export function detectLoop(signatures: readonly string[], window = 10): string[] | undefined {
  if (signatures.length < window) return undefined;
  const start = signatures.length - window;
  for (const period of [1, 2, 3]) {
    if (window < period * 2) continue;
    let repeating = true;
    for (let index = start + period; index < signatures.length && repeating; index++) repeating = signatures[index] === signatures[index - period];
    if (repeating) return signatures.slice(start, start + period);
  }
  return undefined;
}
