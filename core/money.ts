// Money is integers of nano-units (1e-9) of the account currency. Never floating point.
// Prices arrive as decimal strings ("0.15" per 1M tokens) and are parsed exactly.

export const NANO_PER_UNIT = 1_000_000_000n;
/** Every amount a Lua script touches stays below 2^53 (Lua numbers are doubles). */
export const MAX_SAFE_NANO = Number.MAX_SAFE_INTEGER;

const DECIMAL = /^(0|[1-9][0-9]*)(?:\.([0-9]{1,9}))?$/;

/** "0.15" → 150_000_000 nano. Rejects negatives, exponents and more than 9 decimals. */
export function parseDecimalToNano(value: string): number {
  const m = DECIMAL.exec(value);
  if (!m) throw new RangeError(`'${value}' is not a non-negative decimal with at most 9 decimals`);
  const whole = BigInt(m[1]!);
  const frac = BigInt((m[2] ?? '').padEnd(9, '0'));
  const nano = whole * NANO_PER_UNIT + frac;
  if (nano > BigInt(MAX_SAFE_NANO)) throw new RangeError(`'${value}' is too large`);
  return Number(nano);
}

/** 150_000_000 → "0.15"; 1_000_000_000 → "1". Exact. */
export function formatNano(nano: number | bigint): string {
  const n = BigInt(nano);
  const neg = n < 0n;
  const abs = neg ? -n : n;
  const whole = abs / NANO_PER_UNIT;
  const frac = (abs % NANO_PER_UNIT).toString().padStart(9, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

/**
 * For people: at least two decimals ("5.00", "4.99"), more only where the amount has them
 * ("0.000123"), so a message never rounds money away.
 */
export function displayNano(nano: number | bigint): string {
  const s = formatNano(nano);
  const dot = s.indexOf('.');
  if (dot === -1) return `${s}.00`;
  return s.length - dot - 1 < 2 ? `${s}0` : s;
}

export function isDecimalString(value: string): boolean {
  return DECIMAL.test(value);
}
