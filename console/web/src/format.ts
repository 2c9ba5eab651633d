// How amounts, counts and dates read on the pages. Amounts come from the server as exact decimal
// strings; they are shown as sent (never through a float), grouped and padded to two decimals.

/** "1234.5" → "1,234.50"; "0.000125" stays "0.000125" (prices per token are small). */
export function amount(decimal: string): string {
  const negative = decimal.startsWith('-');
  const [whole = '0', frac = ''] = (negative ? decimal.slice(1) : decimal).split('.');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}${grouped}.${frac.padEnd(2, '0')}`;
}

export const money = (decimal: string, currency: string | null) =>
  `${amount(decimal)}${currency ? ` ${currency}` : ''}`;

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
