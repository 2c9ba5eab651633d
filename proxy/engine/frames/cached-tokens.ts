// The cached part of a streamed prompt as the engine reported it, for a stream that ends before
// its final usage frame (the client left, the engine failed midway) as much as for one that ends
// with it. Engines say what they had cached in different places:
// - vLLM: `usage.prompt_tokens_details.cached_tokens` in the final usage frame only (with
//   --enable-prompt-tokens-details); running usage (continuous_usage_stats) never carries it.
// - SGLang: the same field, in the final usage (with --enable-cache-report).
// - llama.cpp's server: `timings.cache_n` (prompt tokens reused from its slot's cache), on every
//   frame when the request asks `timings_per_token`, else on the last; newer builds also fill
//   `prompt_tokens_details.cached_tokens`.
// A count reported by any frame is kept (a later running usage without details does not erase
// it). Where a stream ended with no count, nothing is billed as cached: the cached rate is a
// discount the engine's report earns, so a client that hangs up before the final usage frame (the
// only one where vLLM and SGLang report it) pays the uncached rate for its prompt, as the price
// list says for input nobody reported cached — leaving just before the end buys nothing
// (docs/money.md "What is charged").
import type { TextUsage } from '../../usage.ts';

/** The cached prompt tokens one parsed engine frame reports; null when it reports none. */
export function cachedInFrame(frame: Record<string, unknown>): number | null {
  const usage = frame.usage as { prompt_tokens_details?: { cached_tokens?: unknown } | null } | null;
  const details = count(usage?.prompt_tokens_details?.cached_tokens);
  if (details !== null) return details;
  return count((frame.timings as { cache_n?: unknown } | null | undefined)?.cache_n);
}

/**
 * The usage a stream is billed: its cached tokens as the engine last reported them (at most its
 * input), or as its usage says when no frame reported a count (none, for running usage and for the
 * proxy's own count).
 */
export function withCachedPrompt(usage: TextUsage, cachedSeen: number | null): TextUsage {
  if (cachedSeen === null) return usage;
  return { ...usage, cachedTokens: Math.min(cachedSeen, usage.inputTokens) };
}

const CACHE_N_KEY = Buffer.from('"cache_n":');

/**
 * `timings.cache_n` read from the bytes of a frame's timings object (`value` to `end`; its own key:
 * no nested object has it), for a frame read without a parse (./chunks.ts, ./delta-frame.ts).
 */
export function cacheN(block: Buffer, value: number, end: number): number | null {
  if (block[value] !== 123) return null;
  const at = block.indexOf(CACHE_N_KEY, value);
  if (at === -1 || at >= end) return null;
  let n = 0;
  let i = at + CACHE_N_KEY.length;
  const from = i;
  for (; i < end && block[i]! >= 48 && block[i]! <= 57; i++) n = n * 10 + block[i]! - 48;
  const next = block[i];
  return i > from && (next === 44 || next === 125) && Number.isSafeInteger(n) ? n : null;
}

function count(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null;
}
