import { describe, expect, it } from 'vitest';
import { amount, decimalsOf, money } from './format.ts';

describe('amounts on a page share one number of decimals (issue 37 item 7)', () => {
  it('is the most any amount has, at least two', () => {
    expect(decimalsOf(['20', '19.9974321', undefined, '0.5'])).toBe(7);
    expect(decimalsOf(['20', '3.5'])).toBe(2);
    expect(decimalsOf([])).toBe(2);
  });
  it('pads each amount to it, exactly as sent (grouped, never rounded)', () => {
    expect(money('20', 'USD', 7)).toBe('20.0000000 USD');
    expect(money('19.9974321', 'USD', 7)).toBe('19.9974321 USD');
    expect(amount('-1234.5', 4)).toBe('-1,234.5000');
    expect(amount('0.000125')).toBe('0.000125');
  });
});
