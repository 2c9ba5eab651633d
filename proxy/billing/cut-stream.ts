// The cached part of a streamed prompt, for a stream that ends before its final usage frame (the
// client left, the engine failed midway). Engines say what they had cached in different places:
// - vLLM: `usage.prompt_tokens_details.cached_tokens` in the final usage frame only (with
//   --enable-prompt-tokens-details); running usage (continuous_usage_stats) never carries it.
// - SGLang: the same field, in the final usage (with --enable-cache-report).
// - llama.cpp's server: `timings.cache_n` (prompt tokens reused from its slot's cache), on every
//   frame when the request asks `timings_per_token`, else on the last; newer builds also fill
//   `prompt_tokens_details.cached_tokens`.
// A count reported by any frame is kept (a later running usage without details does not erase it).
// Where a cut stream had no count, the engine cannot tell, so the rule is the one that never
// charges more than the price list (docs/money.md "What is charged"): every engine computes at
// least the prompt's last token (its logits give the first output token; each of the three
// recomputes it even on a full hit), so at most all but one prompt token can have come from the
// cache — billed so.
import type { TextUsage } from './text-quote.ts';

/** The cached prompt tokens one engine frame reports; null when it reports none. */
export function cachedInFrame(frame: Record<string, unknown>): number | null {
  const usage = frame.usage as { prompt_tokens_details?: { cached_tokens?: unknown } | null } | null;
  const details = count(usage?.prompt_tokens_details?.cached_tokens);
  if (details !== null) return details;
  return count((frame.timings as { cache_n?: unknown } | null | undefined)?.cache_n);
}

/**
 * The usage a stream is billed: its cached tokens as the engine last reported them, or, for a
 * stream cut before any frame said, the most the engine could have had cached.
 */
export function withCachedPrompt(usage: TextUsage, cachedSeen: number | null, cut: boolean): TextUsage {
  if (cachedSeen !== null) return { ...usage, cachedTokens: Math.min(cachedSeen, usage.inputTokens) };
  if (!cut) return usage;
  return { ...usage, cachedTokens: Math.max(0, usage.inputTokens - 1) };
}

function count(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
}
