// The cost of a Playground call when the response does not carry `usage.cost` (issue 19 item 1 is
// the proxy's, landing separately): the change of the account's balance the call caused, read from
// the ledger before the call and again until its settlement has landed (settlements are queued, so
// the balance moves a moment after the reply ends). Exact, in nano-units; another call of the same
// account settling meanwhile would be counted too, so the label says where the number comes from.
import { api } from '../api.ts';
import type { Cost } from './Metrics.tsx';
import { fromNano, toNano } from './money.ts';

export async function balanceNow(): Promise<bigint> {
  return toNano((await api.balance()).balance);
}

/** The settled change since `before` (0 if nothing was charged within the wait). */
export async function balanceChange(before: bigint, waitMs = 15_000): Promise<Cost> {
  const deadline = Date.now() + waitMs;
  let after = await balanceNow();
  while (after === before && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    after = await balanceNow();
  }
  // A short pause and one more read: a second settlement (a stream's tail) may land just after.
  await new Promise((r) => setTimeout(r, 300));
  after = await balanceNow();
  return { amount: fromNano(before - after), source: 'balance' };
}

/** `usage.cost` when the response carried it; else the balance change. */
export async function costOf(usageCost: string | null, before: bigint): Promise<Cost> {
  if (usageCost !== null) return { amount: usageCost, source: 'usage' };
  return balanceChange(before);
}
