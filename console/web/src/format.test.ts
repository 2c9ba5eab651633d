import { describe, expect, it } from 'vitest';
import { amount, currencyPlaces, decimalsOf, exactMoney, money, rounded } from './format.ts';

describe('amounts in a table share one number of decimals (issue 37 item 7)', () => {
  it('is the most any amount has, at least two', () => {
    expect(decimalsOf(['20', '19.9974321', undefined, '0.5'])).toBe(7);
    expect(decimalsOf(['20', '3.5'])).toBe(2);
    expect(decimalsOf([])).toBe(2);
  });
  it('pads each per-call cost to it, exactly as sent (grouped, never rounded)', () => {
    expect(exactMoney('20', 'USD', 7)).toBe('20.0000000 USD');
    expect(exactMoney('19.9974321', 'USD', 7)).toBe('19.9974321 USD');
    expect(exactMoney('0.0002034', 'USD')).toBe('0.0002034 USD');
    expect(amount('-1234.5', 4)).toBe('-1,234.5000');
    expect(amount('0.000125')).toBe('0.000125');
    expect(amount('1000', 0)).toBe('1,000');
  });
});

describe("the account's money in one format: the currency's two decimals (issue 48 item 8)", () => {
  it('rounds half away from zero, exactly, on the digits', () => {
    expect(rounded('99.9998766', 2)).toBe('100.00');
    expect(rounded('19.9974321', 2)).toBe('20.00');
    expect(rounded('0.004', 2)).toBe('0.00');
    expect(rounded('0.005', 2)).toBe('0.01');
    expect(rounded('-1.005', 2)).toBe('-1.01');
    expect(rounded('-0.001', 2)).toBe('0.00');
    expect(rounded('7', 2)).toBe('7.00');
    expect(rounded('1234.5', 0)).toBe('1235');
    expect(rounded('123456789012345.999999999', 2)).toBe('123456789012346.00');
  });
  it("balances, top-ups and limits read with the currency's minor unit, grouped", () => {
    expect(money('99.9998766', 'USD')).toBe('100.00 USD');
    expect(money('1234567.5', 'EUR')).toBe('1,234,567.50 EUR');
    expect(money('1500.4', 'JPY')).toBe('1,500 JPY');
    expect(money('5', null)).toBe('5.00');
    expect(currencyPlaces('USD')).toBe(2);
    expect(currencyPlaces('JPY')).toBe(0);
  });
});
