// Exact amounts for the Playground: the server's own conversions (core/money.ts, pure), decimal
// strings to integer nano-units and back, never a float — a balance change reads to the last digit
// the ledger charged.
import { formatNano, parseDecimalToNano } from '../../../../core/money.ts';

/** A non-negative decimal string (a balance, a price, a cost) in nano-units. */
export const toNano = (decimal: string): bigint => BigInt(parseDecimalToNano(decimal));

export const fromNano = (n: bigint): string => formatNano(n);
