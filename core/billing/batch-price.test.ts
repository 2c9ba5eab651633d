import { describe, expect, it } from 'vitest';
import { batchTokenPrice } from './batch-price.ts';

describe('batchTokenPrice', () => {
  it.each([
    [{ input: '1', output: '2' }, 50, { input: '0.5', output: '1' }],
    [
      { input: '0.15', cachedInput: '0.075', output: '0.6' },
      50,
      { input: '0.075', cachedInput: '0.0375', output: '0.3' },
    ],
    // A ninth-decimal rate halves to half a nano: rounded down, in the customer's favour.
    [{ input: '0.000000001' }, 50, { input: '0' }],
    [{ input: '3', output: '4' }, 25, { input: '2.25', output: '3' }],
    [{ input: '3' }, 100, { input: '0' }],
  ])('BILL-1 %j less %i%% is %j', (price, d, want) => {
    expect(batchTokenPrice(price, d)).toEqual(want);
  });

  it('BILL-1 no discount set is the interactive price; a discount out of range is refused', () => {
    const p = { input: '1' };
    expect(batchTokenPrice(p, undefined)).toBe(p);
    expect(() => batchTokenPrice(p, 101)).toThrow(RangeError);
    expect(() => batchTokenPrice(p, 2.5)).toThrow(RangeError);
  });
});
