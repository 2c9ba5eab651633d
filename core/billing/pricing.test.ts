import { describe, expect, it } from 'vitest';
import type { TokenPrice } from '../catalogue/entry.ts';
import { MAX_SAFE_NANO } from '../money.ts';
import { imageCost, maxTokensCovered, textCost, textHold, videoCost } from './pricing.ts';

// 0.15 / 0.075 / 0.60 per 1M tokens = 150 / 75 / 600 nano per token.
const gpt: TokenPrice = { input: '0.15', cachedInput: '0.075', output: '0.60' };
const embed: TokenPrice = { input: '0.02' };

describe('textCost', () => {
  it.each([
    ['BILL-1 input per 1M tokens', gpt, 1_000_000, 0, 0, 150_000_000],
    ['BILL-1 output per 1M tokens', gpt, 0, 0, 1_000_000, 600_000_000],
    ['BILL-1 separate input, cached and output rates', gpt, 1000, 400, 500, 600 * 150 + 400 * 75 + 500 * 600],
    ['BILL-2 fully cached input costs the cached rate only', gpt, 1_000_000, 1_000_000, 0, 75_000_000],
    ['BILL-2 cached beyond input is clamped, never an extra charge', gpt, 100, 200, 0, 100 * 75],
    ['cached price defaults to the input price', { input: '2' }, 1000, 500, 0, 2_000_000],
    ['output price defaults to 0 (embeddings)', embed, 1000, 0, 1_000_000, 20_000],
    ['nothing used costs nothing', gpt, 0, 0, 0, 0],
    ['a fraction of a nano rounds up', { input: '0.000001' }, 1, 0, 0, 1],
    ['exact nanos do not round', { input: '0.000001' }, 1000, 0, 0, 1],
    ['rounds once at the end, not per term', { input: '0.0000005', output: '0.0000005' }, 1, 0, 1, 1],
  ])('%s', (_name, price, inputTokens, cachedTokens, outputTokens, expected) => {
    expect(textCost(price, { inputTokens, cachedTokens, outputTokens })).toBe(expected);
  });

  it('BILL-2 cached tokens lower the cost of input tokens, they are not added to it', () => {
    const uncached = textCost(gpt, { inputTokens: 10_000, cachedTokens: 0, outputTokens: 0 });
    const half = textCost(gpt, { inputTokens: 10_000, cachedTokens: 5_000, outputTokens: 0 });
    expect(half).toBe(uncached - 5_000 * (150 - 75));
    expect(half).toBeLessThan(uncached);
  });

  it('refuses results at or past 2^53 and bad token counts', () => {
    expect(() =>
      textCost({ input: '1000' }, { inputTokens: 1e10, cachedTokens: 0, outputTokens: 0 }),
    ).toThrow(RangeError);
    expect(() => textCost(gpt, { inputTokens: -1, cachedTokens: 0, outputTokens: 0 })).toThrow(RangeError);
    expect(() => textCost(gpt, { inputTokens: 1.5, cachedTokens: 0, outputTokens: 0 })).toThrow(RangeError);
  });
});

describe('imageCost and videoCost', () => {
  it.each([
    ['BILL-3 per generation × n', 3, 120_000_000],
    ['no generation, no cost', 0, 0],
  ])('%s', (_name, n, expected) => {
    expect(imageCost({ perImage: '0.04' }, n)).toBe(expected);
  });

  it.each([
    ['BILL-4 per second × seconds', '0.1', 5, 500_000_000],
    ['fractional seconds bill to the millisecond', '0.1', 2.5, 250_000_000],
    ['a fraction of a nano rounds up', '0.000000001', 0.5, 1],
    ['zero seconds', '0.1', 0, 0],
  ])('%s', (_name, perSecond, seconds, expected) => {
    expect(videoCost({ perSecond }, seconds)).toBe(expected);
  });

  it('refuses negative lengths and counts', () => {
    expect(() => videoCost({ perSecond: '1' }, -1)).toThrow(RangeError);
    expect(() => imageCost({ perImage: '1' }, -1)).toThrow(RangeError);
  });
});

describe('textHold and maxTokensCovered', () => {
  it.each([
    ['prompt bytes as input tokens, plus max output', gpt, 1000, 500, 150_000, 450_000],
    ['no output asked', gpt, 1000, 0, 150_000, 150_000],
    ['embeddings hold input only', embed, 1000, 4096, 20_000, 20_000],
    [
      'prices the prompt at the dearer of input and cached',
      { input: '1', cachedInput: '2' },
      10,
      0,
      20_000,
      20_000,
    ],
  ])('%s', (_name, price, promptTokens, maxOutputTokens, min, max) => {
    expect(textHold(price, { promptTokens, maxOutputTokens })).toEqual({ min, max });
  });

  it('the hold bounds every cost within it', () => {
    const prices: TokenPrice[] = [
      gpt,
      embed,
      { input: '0.0000007', output: '3.3' },
      { input: '1', cachedInput: '2' },
    ];
    for (const price of prices) {
      for (const promptTokens of [0, 1, 7, 999, 12_345]) {
        for (const maxOutputTokens of [0, 1, 13, 4096]) {
          const { max } = textHold(price, { promptTokens, maxOutputTokens });
          for (const cachedTokens of [0, Math.floor(promptTokens / 3), promptTokens]) {
            const cost = textCost(price, {
              inputTokens: promptTokens,
              cachedTokens,
              outputTokens: maxOutputTokens,
            });
            expect(cost).toBeLessThanOrEqual(max);
          }
        }
      }
    }
  });

  it.each([
    ['exactly covered', 450_000, 1000, 500],
    ['one nano short loses a token', 449_999, 1000, 499],
    ['input bound not covered', 100_000, 1000, 0],
    ['input bound only', 150_000, 1000, 0],
  ])('%s', (_name, held, promptTokens, expected) => {
    expect(maxTokensCovered(gpt, { held, promptTokens })).toBe(expected);
  });

  it('covered tokens fit in the hold and one more would not', () => {
    for (const held of [150_000, 150_001, 151_234, 9_999_999]) {
      const n = maxTokensCovered(gpt, { held, promptTokens: 1000 });
      expect(textHold(gpt, { promptTokens: 1000, maxOutputTokens: n }).max).toBeLessThanOrEqual(held);
      expect(textHold(gpt, { promptTokens: 1000, maxOutputTokens: n + 1 }).max).toBeGreaterThan(held);
    }
  });

  it('free output is not bounded by money', () => {
    expect(maxTokensCovered(embed, { held: 20_000, promptTokens: 1000 })).toBe(MAX_SAFE_NANO);
  });
});
