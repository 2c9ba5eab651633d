// Payment providers count money in a currency's minor unit (cents; yen for JPY, which has none);
// balances are nano-units. The conversion is exact or refused: a top-up of 10.005 USD cannot be
// paid, so it is never offered. Stripe's lists: https://docs.stripe.com/currencies#zero-decimal.
import { NANO_PER_UNIT } from '../money.ts';

/** Currencies Stripe counts in whole units: an amount in JPY is a number of yen. */
const ZERO_DECIMAL = new Set([
  'BIF',
  'CLP',
  'DJF',
  'GNF',
  'JPY',
  'KMF',
  'KRW',
  'MGA',
  'PYG',
  'RWF',
  'UGX',
  'VND',
  'VUV',
  'XAF',
  'XOF',
  'XPF',
]);
/** Three-decimal currencies: Stripe takes thousandths but wants the last digit 0 (so two decimals). */
const THREE_DECIMAL = new Set(['BHD', 'JOD', 'KWD', 'OMR', 'TND']);

export interface CurrencyUnits {
  /** Decimal places of the provider's integer amounts (cents: 2). */
  exponent: number;
  /** Decimal places a payable amount may have. */
  decimals: number;
}

export function currencyUnits(currency: string): CurrencyUnits {
  const c = currency.toUpperCase();
  if (ZERO_DECIMAL.has(c)) return { exponent: 0, decimals: 0 };
  if (THREE_DECIMAL.has(c)) return { exponent: 3, decimals: 2 };
  return { exponent: 2, decimals: 2 };
}

/** Whether `nano` is a payable amount in `currency` (no fraction of its smallest payable unit). */
export function isPayable(nano: number, currency: string): boolean {
  return BigInt(nano) % 10n ** BigInt(9 - currencyUnits(currency).decimals) === 0n;
}

/** nano-units → the provider's integer amount (12.5 USD → 1250; 500 JPY → 500). Exact or throws. */
export function nanoToMinorUnits(nano: number, currency: string): number {
  if (!isPayable(nano, currency)) {
    throw new RangeError(`${nano} nano-units of ${currency} is not a whole number of its payable unit`);
  }
  const { exponent } = currencyUnits(currency);
  return Number((BigInt(nano) * 10n ** BigInt(exponent)) / NANO_PER_UNIT);
}
