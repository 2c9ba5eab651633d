// The batch price of a text or embedding model (docs/batches.md "Pricing"): each of its per-token
// rates less the Model's `batchDiscountPercent` (none set: the interactive price). Each rate is
// rounded down to the nano per 1M tokens — at most one nano-unit per million tokens, in the
// customer's favour — so the batch price is again exact decimal strings that every price function
// reads as it reads the catalogue's.
import type { TokenPrice } from '../catalogue/entry.ts';
import { formatNano, parseDecimalToNano } from '../money.ts';

function discounted(rate: string, percent: number): string {
  return formatNano((BigInt(parseDecimalToNano(rate)) * BigInt(100 - percent)) / 100n);
}

export function batchTokenPrice(price: TokenPrice, discountPercent: number | undefined): TokenPrice {
  const d = discountPercent ?? 0;
  if (!Number.isInteger(d) || d < 0 || d > 100) throw new RangeError(`batch discount ${d}% is not 0..100`);
  if (d === 0) return price;
  const out: TokenPrice = { input: discounted(price.input, d) };
  if (price.cachedInput !== undefined) out.cachedInput = discounted(price.cachedInput, d);
  if (price.output !== undefined) out.output = discounted(price.output, d);
  return out;
}
