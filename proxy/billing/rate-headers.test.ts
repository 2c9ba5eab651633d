// The rate-limit headers in each vendor's names and meanings (issue 34), table-driven.
import { describe, expect, it } from 'vitest';
import { duration, rateLimitHeaders, retryAfterMsHeader } from './rate-headers.ts';

const AT = Date.UTC(2026, 0, 1, 0, 0, 0);
const windows = {
  at: AT,
  requests: { limit: 60, remaining: 59, resetMs: 1000 },
  inputTokens: { limit: 1000, remaining: 900, resetMs: 6000 },
  outputTokens: { limit: 100, remaining: 10, resetMs: 54_000 },
};

describe('rate-limit headers', () => {
  it('chat surface: OpenAI names, reset as a duration, tokens the window nearer its limit', () => {
    expect(rateLimitHeaders('openai', windows)).toEqual({
      'x-ratelimit-limit-requests': '60',
      'x-ratelimit-remaining-requests': '59',
      'x-ratelimit-reset-requests': '1s',
      'x-ratelimit-limit-tokens': '100',
      'x-ratelimit-remaining-tokens': '10',
      'x-ratelimit-reset-tokens': '54s',
    });
  });

  it('Messages surface: Anthropic names, reset as an RFC 3339 time', () => {
    expect(rateLimitHeaders('messages', windows)).toEqual({
      'anthropic-ratelimit-requests-limit': '60',
      'anthropic-ratelimit-requests-remaining': '59',
      'anthropic-ratelimit-requests-reset': '2026-01-01T00:00:01.000Z',
      'anthropic-ratelimit-input-tokens-limit': '1000',
      'anthropic-ratelimit-input-tokens-remaining': '900',
      'anthropic-ratelimit-input-tokens-reset': '2026-01-01T00:00:06.000Z',
      'anthropic-ratelimit-output-tokens-limit': '100',
      'anthropic-ratelimit-output-tokens-remaining': '10',
      'anthropic-ratelimit-output-tokens-reset': '2026-01-01T00:00:54.000Z',
    });
  });

  it('an unset limit has no header', () => {
    const only = { at: AT, requests: null, inputTokens: null, outputTokens: windows.outputTokens };
    expect(Object.keys(rateLimitHeaders('openai', only))).toEqual([
      'x-ratelimit-limit-tokens',
      'x-ratelimit-remaining-tokens',
      'x-ratelimit-reset-tokens',
    ]);
    expect(rateLimitHeaders('messages', { ...only, outputTokens: null })).toEqual({});
  });

  it.each([
    [0, '0ms'],
    [20, '20ms'],
    [1500, '1.5s'],
    [360_000, '6m0s'],
    [61_250, '1m1.25s'],
  ])('duration(%i) is %s', (ms, text) => {
    expect(duration(ms)).toBe(text);
  });

  it('a refusal says the exact wait in ms', () => {
    expect(retryAfterMsHeader(1234.2)).toEqual({ 'retry-after-ms': '1235' });
  });
});
