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

/** Whether `text` has more than `limit` lines, counted without splitting it. */
function moreLinesThan(text: string, limit: number): boolean {
  // n characters hold at most n line breaks, so at most n + 1 lines.
  if (!(text.length >= limit)) return false;
  let lines = 1;
  for (let index = text.indexOf("\n"); lines <= limit && index !== -1; index = text.indexOf("\n", index + 1)) lines++;
  return lines > limit;
}

/**
 * Shortens a tool's output before it reaches the model: characters first, then lines.
 * `head_tail` keeps the start and the end, `tail` keeps the end; a marker says what was removed and why.
 */
export function truncateOutput(output: string, toolName: string, options: TruncationOptions = {}): Truncated {
  const { maxChars, maxLines, mode } = { ...DEFAULT_TRUNCATION, ...options };
  // Most outputs are short: within both limits they are returned as they are, without splitting.
  if (!(output.length > maxChars) && !moreLinesThan(output, maxLines)) return { text: output, truncated: false };
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
