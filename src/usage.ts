/** Token usage of one model call, or summed over a run. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  reasoningTokens?: number;
  /** Input tokens read from the provider's prompt cache (included in `inputTokens`). */
  cachedInputTokens?: number;
  /** Input tokens written to the provider's prompt cache (Anthropic `cache_creation_input_tokens`; included in `inputTokens`). */
  cacheWriteInputTokens?: number;
  /**
   * What the tokens cost, in US dollars, from the price table (built-in provider adapters), or
   * `"unknown"` for a model the table does not know (never 0). Summed over calls; a sum with an
   * unknown part is `"unknown"`. Absent for models that are not priced (the scripted model).
   */
  cost?: number | "unknown";
}

export function emptyUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, totalTokens: 0, reasoningTokens: 0, cachedInputTokens: 0 };
}

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
    reasoningTokens: (a.reasoningTokens ?? 0) + (b.reasoningTokens ?? 0),
    cachedInputTokens: (a.cachedInputTokens ?? 0) + (b.cachedInputTokens ?? 0),
    ...(a.cacheWriteInputTokens || b.cacheWriteInputTokens ? { cacheWriteInputTokens: (a.cacheWriteInputTokens ?? 0) + (b.cacheWriteInputTokens ?? 0) } : {}),
    ...(a.cost !== undefined || b.cost !== undefined ? { cost: addCost(a.cost, b.cost) } : {}),
  };
}

/** Two costs summed: `"unknown"` when either is. */
export function addCost(a: Usage["cost"], b: Usage["cost"]): number | "unknown" {
  if (a === "unknown" || b === "unknown") return "unknown";
  return (a ?? 0) + (b ?? 0);
}

/**
 * A cost for people: `$1.50` (cents from a cent up), `$0.0012` (2 significant digits below a cent,
 * always in plain decimals: `$0.00000012`, never `1.2e-7`), or `cost unknown`.
 */
export function formatCost(cost: number | "unknown"): string {
  if (cost === "unknown") return "cost unknown";
  if (cost === 0) return "$0";
  const rounded = cost >= 0.01 ? cost : Number(cost.toPrecision(2));
  if (rounded >= 0.01) return `$${rounded.toFixed(2)}`;
  return `$${rounded.toFixed(Math.min(20, 1 - Math.floor(Math.log10(rounded))))}`;
}
