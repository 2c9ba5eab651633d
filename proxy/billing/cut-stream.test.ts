import { describe, expect, it } from 'vitest';
import { cachedInFrame, withCachedPrompt } from './cut-stream.ts';

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

  it('BILL-2 a reported count is kept (at most the input); a cut stream without one bills all but the last token as cached', () => {
    const usage = { inputTokens: 641, cachedTokens: 0, outputTokens: 7 };
    expect(withCachedPrompt(usage, 320, true)).toEqual({ ...usage, cachedTokens: 320 });
    expect(withCachedPrompt(usage, 9_999, false)).toEqual({ ...usage, cachedTokens: 641 });
    expect(withCachedPrompt(usage, null, true)).toEqual({ ...usage, cachedTokens: 640 });
    // A stream that ended with [DONE] said all it had to say: nothing cached is nothing cached.
    expect(withCachedPrompt(usage, null, false)).toBe(usage);
    expect(
      withCachedPrompt({ inputTokens: 0, cachedTokens: 0, outputTokens: 0 }, null, true).cachedTokens,
    ).toBe(0);
  });
});
