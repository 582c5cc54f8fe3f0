/** What a redacted value is replaced with. */
export const REDACTED = "[REDACTED]";

/**
 * Keys whose values are secrets. `token` matches as a word part (`token`, `access_token`,
 * `x-auth-token`) but not the plural counters of the GenAI conventions (`input_tokens`).
 */
const sensitiveKey = /api[_-]?key|apikey|password|passwd|secret|authorization|credential|cookie|(?:^|[^a-z])token(?!s)|^token|bearer/i;

export function isSensitiveKey(key: string): boolean {
  return sensitiveKey.test(key);
}

/** A deep copy of `value` in which every property with a sensitive key has its value replaced. */
export function redactSensitive(value: unknown, depth = 0): unknown {
  if (depth > 20) return REDACTED;
  if (Array.isArray(value)) return value.map((item) => redactSensitive(item, depth + 1));
  if (typeof value === "object" && value !== null) {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) copy[key] = isSensitiveKey(key) ? REDACTED : redactSensitive(item, depth + 1);
    return copy;
  }
  return value;
}

/** `"api_key": "sk-..."`, `password=hunter2`, `Authorization: Bearer x` in free text. */
const sensitiveAssignment =
  /((?:"|')?[\w.-]*(?:api[_-]?key|apikey|password|passwd|secret|authorization|credential|token)[\w.-]*(?:"|')?\s*[:=]\s*)("(?:[^"\\]|\\.)*"|'[^']*'|(?:bearer\s+)?[^\s,;}&]+)/gi;

/**
 * Redacts a JSON text by key (parsed and re-serialized); text that is not JSON has `key: value`
 * and `key=value` assignments of sensitive keys blanked.
 */
export function redactText(text: string): string {
  try {
    return JSON.stringify(redactSensitive(JSON.parse(text)));
  } catch {
    return text.replace(sensitiveAssignment, (_match, prefix: string) => `${prefix}${REDACTED}`);
  }
}
