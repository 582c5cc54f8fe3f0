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
  };
}
