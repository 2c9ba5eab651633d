// How amounts, counts and dates read on the pages. Amounts come from the server as exact decimal
// strings and are never put through a float: the account's money (balances, top-ups, limits, the
// ledger) rounded to the currency's two decimals, per-call costs and prices as sent.

/**
 * "1234.5" → "1,234.50"; "0.000125" stays "0.000125" (prices per token are small). `places` pads
 * further, so amounts read side by side share one number of decimals (decimalsOf).
 */
export function amount(decimal: string, places = 2): string {
  const negative = decimal.startsWith('-');
  const [whole = '0', frac = ''] = (negative ? decimal.slice(1) : decimal).split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const decimals = frac.padEnd(places, '0');
  return `${negative ? '-' : ''}${grouped}${decimals ? `.${decimals}` : ''}`;
}

/**
 * A decimal string rounded half away from zero to `places` decimals, exactly (integer arithmetic on
 * its digits, never a float): "99.9998766" → "100.00", "0.004" → "0.00", "-1.005" → "-1.01".
 */
export function rounded(decimal: string, places: number): string {
  const negative = decimal.startsWith('-');
  const [whole = '0', frac = ''] = (negative ? decimal.slice(1) : decimal).split('.');
  const scaled =
    BigInt(whole + frac.padEnd(places, '0').slice(0, places)) + (Number(frac[places] ?? '0') >= 5 ? 1n : 0n);
  const digits = scaled.toString().padStart(places + 1, '0');
  const int = digits.slice(0, digits.length - places);
  const out = places === 0 ? int : `${int}.${digits.slice(-places)}`;
  return negative && scaled !== 0n ? `-${out}` : out;
}

/** The decimals a currency's amounts are written with (its minor unit: 2 for USD and EUR, 0 for JPY). */
export function currencyPlaces(currency: string | null): number {
  if (!currency) return 2;
  try {
    return (
      new Intl.NumberFormat('en-US', { style: 'currency', currency }).resolvedOptions()
        .maximumFractionDigits ?? 2
    );
  } catch {
    return 2;
  }
}

/**
 * An amount of the account's money — a balance, a top-up, a limit, a spend against it, a ledger
 * line — in the one format every page uses (issue 48 item 8): the currency's two decimals (its
 * minor unit), rounded. Per-call costs and prices use exactMoney.
 */
export const money = (decimal: string, currency: string | null) => {
  const places = currencyPlaces(currency);
  return `${amount(rounded(decimal, places), places)}${currency ? ` ${currency}` : ''}`;
};

/** A per-call cost or a price, every digit as the server sent it (at least `places` decimals). */
export const exactMoney = (decimal: string, currency: string | null, places = 2) =>
  `${amount(decimal, places)}${currency ? ` ${currency}` : ''}`;

/** The decimals every amount of a table is shown with: the most any of them has, at least two (issue 37 item 7). */
export const decimalsOf = (decimals: (string | undefined)[]) =>
  Math.max(2, ...decimals.map((d) => (d?.split('.')[1] ?? '').length));

export const count = (n: number) => n.toLocaleString('en-US');

export const date = (iso: string) =>
  new Date(iso).toLocaleDateString('en-US', { year: 'numeric', month: 'short', day: 'numeric' });

export const dateTime = (iso: string) =>
  new Date(iso).toLocaleString('en-US', {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });

const regionNames =
  typeof Intl.DisplayNames === 'function' ? new Intl.DisplayNames(['en'], { type: 'region' }) : null;
export const countryName = (code: string) => regionNames?.of(code) ?? code;

/** YYYY-MM-DD of a time, in UTC (the usage days are UTC days). */
export const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
