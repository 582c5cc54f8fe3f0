import type { TruncationOptions } from "../tools/tool.js";

export const DEFAULT_TRUNCATION: Required<TruncationOptions> = { maxChars: 20_000, maxLines: 1_000, mode: "head_tail" };

export interface Truncated {
  text: string;
  truncated: boolean;
}

function cut(kept: string[], removed: number, unit: string, limit: number, mode: "head_tail" | "tail", toolName: string, join: string) {
  const marker = `[agentloop: ${removed} ${unit} removed from the output of "${toolName}" (limit ${limit} ${unit}, mode ${mode}); the full output is in the tool-end event]`;
  return mode === "tail" ? `${marker}${join}${kept[0]}` : `${kept[0]}${join}${marker}${join}${kept[1]}`;
}

/**
 * Shortens a tool's output before it reaches the model: characters first, then lines.
 * `head_tail` keeps the start and the end, `tail` keeps the end; a marker says what was removed and why.
 */
export function truncateOutput(output: string, toolName: string, options: TruncationOptions = {}): Truncated {
  const { maxChars, maxLines, mode } = { ...DEFAULT_TRUNCATION, ...options };
  let text = output;
  let truncated = false;
  if (text.length > maxChars) {
    const removed = text.length - maxChars;
    const kept = mode === "tail" ? [text.slice(-maxChars)] : [text.slice(0, Math.ceil(maxChars / 2)), text.slice(text.length - Math.floor(maxChars / 2))];
    text = cut(kept, removed, "characters", maxChars, mode, toolName, "\n\n");
    truncated = true;
  }
  const lines = text.split("\n");
  if (lines.length > maxLines) {
    const removed = lines.length - maxLines;
    const kept =
      mode === "tail"
        ? [lines.slice(-maxLines).join("\n")]
        : [lines.slice(0, Math.ceil(maxLines / 2)).join("\n"), lines.slice(lines.length - Math.floor(maxLines / 2)).join("\n")];
    text = cut(kept, removed, "lines", maxLines, mode, toolName, "\n");
    truncated = true;
  }
  return { text, truncated };
}
