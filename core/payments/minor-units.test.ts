import { describe, expect, it } from 'vitest';
import { currencyUnits, isPayable, nanoToMinorUnits } from './minor-units.ts';

describe("nano-units to a payment provider's minor units", () => {
  it.each([
    ['USD', 25_000_000_000, 2500],
    ['USD', 12_340_000_000, 1234],
    ['EUR', 10_000_000, 1],
    ['JPY', 500_000_000_000, 500],
    ['KRW', 10_000_000_000_000, 10_000],
    ['KWD', 1_230_000_000, 1230], // three decimals at Stripe, the last one 0
    ['usd', 1_000_000_000, 100],
  ])('%s %d nano → %d', (currency, nano, minor) => {
    expect(nanoToMinorUnits(nano, currency)).toBe(minor);
  });

  it.each([
    ['USD', 10_005_000_000], // 10.005: no half cents
    ['USD', 1],
    ['JPY', 500_500_000_000], // 500.5 yen
    ['KWD', 1_235_000_000], // 1.235: Stripe wants thousandths ending in 0
  ])('refuses %s %d nano, which cannot be paid exactly', (currency, nano) => {
    expect(isPayable(nano, currency)).toBe(false);
    expect(() => nanoToMinorUnits(nano, currency)).toThrow(RangeError);
  });

  it('says how many decimals an amount may have', () => {
    expect(currencyUnits('JPY').decimals).toBe(0);
    expect(currencyUnits('GBP')).toEqual({ exponent: 2, decimals: 2 });
    expect(currencyUnits('BHD')).toEqual({ exponent: 3, decimals: 2 });
  });
});
