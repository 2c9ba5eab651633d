// Exact amounts for the Playground: decimal strings to integer nano-units and back (never a float),
// so a balance change reads to the last digit the ledger charged.
const NANO = 1_000_000_000n;

export function toNano(decimal: string): bigint {
  const negative = decimal.startsWith('-');
  const [whole = '0', frac = ''] = (negative ? decimal.slice(1) : decimal).split('.');
  const n = BigInt(whole) * NANO + BigInt((frac + '000000000').slice(0, 9));
  return negative ? -n : n;
}

export function fromNano(n: bigint): string {
  const negative = n < 0n;
  const abs = negative ? -n : n;
  const frac = (abs % NANO).toString().padStart(9, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${abs / NANO}${frac ? `.${frac}` : ''}`;
}
