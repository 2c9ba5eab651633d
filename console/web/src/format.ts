// How amounts, counts and dates read on the pages. Amounts come from the server as exact decimal
// strings; they are shown as sent (never through a float), grouped and padded to two decimals.

/**
 * "1234.5" → "1,234.50"; "0.000125" stays "0.000125" (prices per token are small). `places` pads
 * further, so amounts read side by side share one number of decimals (decimalsOf).
 */
export function amount(decimal: string, places = 2): string {
  const negative = decimal.startsWith('-');
  const [whole = '0', frac = ''] = (negative ? decimal.slice(1) : decimal).split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}${grouped}.${frac.padEnd(places, '0')}`;
}

export const money = (decimal: string, currency: string | null, places = 2) =>
  `${amount(decimal, places)}${currency ? ` ${currency}` : ''}`;

/** The decimals every amount of a page is shown with: the most any of them has, at least two (issue 37 item 7). */
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
