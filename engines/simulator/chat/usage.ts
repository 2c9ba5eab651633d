// The usage object the simulator reports, as vLLM does (prompt tokens with the cached part).
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  /** null as vLLM sends it; the reasoning tokens when the simulator is told to report them. */
  completion_tokens_details: { reasoning_tokens: number } | null;
}

export function usageOf(
  promptTokens: number,
  cachedTokens: number,
  completionTokens: number,
  reasoningTokens: number | null = null,
): ChatUsage {
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: cachedTokens },
    completion_tokens_details: reasoningTokens === null ? null : { reasoning_tokens: reasoningTokens },
  };
}
