import { describe, expect, it } from 'vitest';
import { cachedInFrame, withCachedPrompt } from './cached-tokens.ts';

describe('cached prompt tokens of a stream', () => {
  it('are read from usage details (vLLM, SGLang) or llama.cpp timings.cache_n, else unknown', () => {
    expect(cachedInFrame({ usage: { prompt_tokens: 9, prompt_tokens_details: { cached_tokens: 8 } } })).toBe(
      8,
    );
    expect(cachedInFrame({ timings: { cache_n: 5, prompt_n: 4 } })).toBe(5);
    expect(cachedInFrame({ usage: { prompt_tokens: 9, completion_tokens: 3 } })).toBeNull();
    expect(cachedInFrame({ usage: null })).toBeNull();
    expect(cachedInFrame({ usage: { prompt_tokens_details: { cached_tokens: -1 } } })).toBeNull();
  });

  it('BILL-2 a reported count is kept (at most the input); a stream none reported for bills none cached', () => {
    const usage = { inputTokens: 641, cachedTokens: 0, outputTokens: 7 };
    expect(withCachedPrompt(usage, 320)).toEqual({ ...usage, cachedTokens: 320 });
    expect(withCachedPrompt(usage, 9_999)).toEqual({ ...usage, cachedTokens: 641 });
    // Cut before vLLM's final usage frame (the only one with cached_tokens): the uncached rate, as
    // for a stream that ended with [DONE] and reported nothing cached — hanging up buys no discount.
    expect(withCachedPrompt(usage, null)).toBe(usage);
    // A count the usage itself carried (a final usage frame read whole) stands.
    const reported = { ...usage, cachedTokens: 512 };
    expect(withCachedPrompt(reported, null)).toBe(reported);
  });
});
