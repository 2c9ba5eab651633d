import { describe, expect, it } from 'vitest';
import { FieldError, optionalAmount, requiredAmount } from './amount-input.ts';

describe('an amount field says what is wrong in its own words (issue 48 item 10)', () => {
  it('takes a plain decimal, trimmed; blank is none where none is allowed', () => {
    expect(requiredAmount('Amount', ' 25 ')).toBe('25');
    expect(optionalAmount('Budget', '7.50')).toBe('7.50');
    expect(optionalAmount('Budget', '  ')).toBeNull();
  });
  it('refuses anything else, naming the field as the form labels it', () => {
    for (const bad of ['abc', '5,00', '-1', '1e3', '.5', '1.0000000001'])
      expect(() => optionalAmount('Spend limit', bad)).toThrow(
        new FieldError('Spend limit: write an amount like 25 or 7.50, or leave it blank for none.'),
      );
    expect(() => requiredAmount('Amount', '')).toThrow('Amount: write an amount like 25 or 7.50.');
  });
});
