import { describe, expect, it } from 'vitest';
import { PrefixCache } from './prefix-cache.ts';
import { applyStop, generateTokens } from './text-generator.ts';
import { countTokens, tokenize } from './tokenizer.ts';

describe('tokenizer', () => {
  it.each([
    ['', 0],
    ['   ', 0],
    ['hello', 2],
    ['hi there', 3],
    ['日本語のテキスト', 2],
    ['🙂🙂🙂🙂🙂', 2],
  ])('%j → %i tokens, never more than its UTF-8 bytes', (text, n) => {
    expect(countTokens(text)).toBe(n);
    expect(tokenize(text)).toHaveLength(n);
    expect(n).toBeLessThanOrEqual(Buffer.byteLength(text));
  });

  it('keeps every character except trailing whitespace', () => {
    const text = ' a  long\tsentence, with  spaces\n';
    expect(tokenize(text).join('')).toBe(text.trimEnd());
  });
});

describe('text generator', () => {
  const limits = { maxTokens: 1000, minTokens: 0, ignoreEos: false };
  it('is deterministic and each output token is one tokenizer token', () => {
    const a = generateTokens('prompt', 0, limits);
    expect(generateTokens('prompt', 0, limits)).toEqual(a);
    expect(generateTokens('prompt', 1, limits)).not.toEqual(a);
    expect(countTokens(a.tokens.join(''))).toBe(a.tokens.length);
    expect(a.tokens.length).toBeGreaterThanOrEqual(16);
  });

  it('ignore_eos runs to max_tokens; stop cuts before the stop string', () => {
    expect(generateTokens('p', 0, { maxTokens: 200, minTokens: 0, ignoreEos: true }).tokens).toHaveLength(
      200,
    );
    const { tokens, stopped } = applyStop(['Ab', ' cd', ' ef'], [' e']);
    expect(stopped).toBe(true);
    expect(tokens.join('')).toBe('Ab cd');
  });
});

describe('prefix cache', () => {
  const tokens = (n: number, tag = 'x') => Array.from({ length: n }, (_, i) => `${tag}${i}`);
  it('counts leading cached blocks, never the whole prompt, per model', () => {
    const cache = new PrefixCache(() => ({ blockSize: 16, capacityBlocks: 100 }));
    expect(cache.lookupAndInsert('m', tokens(40)).cached).toBe(0);
    expect(cache.lookupAndInsert('m', tokens(40)).cached).toBe(32);
    expect(cache.lookupAndInsert('m', tokens(70)).cached).toBe(32);
    expect(cache.lookupAndInsert('m', tokens(70)).cached).toBe(64);
    expect(cache.lookupAndInsert('m', tokens(32)).cached).toBe(16); // last token is always recomputed
    expect(cache.lookupAndInsert('other', tokens(40)).cached).toBe(0);
    expect(cache.lookupAndInsert('m', [...tokens(16, 'y'), ...tokens(24)]).cached).toBe(0);
  });

  it("says how many prompt tokens a request added to the cache (vLLM's created_cache_tokens)", () => {
    const cache = new PrefixCache(() => ({ blockSize: 16, capacityBlocks: 100 }));
    expect(cache.lookupAndInsert('m', tokens(40))).toEqual({ cached: 0, created: 32 });
    expect(cache.lookupAndInsert('m', tokens(40))).toEqual({ cached: 32, created: 0 });
    expect(cache.lookupAndInsert('m', tokens(70))).toEqual({ cached: 32, created: 32 });
  });

  it('evicts least recently used blocks past capacity', () => {
    const cache = new PrefixCache(() => ({ blockSize: 4, capacityBlocks: 2 }));
    cache.lookupAndInsert('m', tokens(9, 'a'));
    cache.lookupAndInsert('m', tokens(9, 'b'));
    expect(cache.lookupAndInsert('m', tokens(9, 'a')).cached).toBe(0);
  });
});
