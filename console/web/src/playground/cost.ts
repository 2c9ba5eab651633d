// The cost of a Playground call is the response's `usage.cost` (the proxy's, ../../../../proxy/billing/
// call-cost.ts). Where a response carries none — a run stopped before the stream's usage frame —
// it is the change of the account's balance the call caused, read from
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

/**
 * The balance read beside a call (not before it: waiting would add a console round trip to the
 * time to first token). The balance moves only when the call settles, after its end, so a read
 * that completed before the end is the balance before the call; `before()` gives null for a read
 * that came back only after the end (it might already include the charge).
 */
export function balanceBeside(): { ended: () => void; before: () => Promise<bigint | null> } {
  let over = false;
  let early = false;
  const reading = balanceNow().then(
    (b) => {
      early = !over;
      return b;
    },
    () => null,
  );
  return {
    ended: () => {
      over = true;
    },
    before: async () => {
      const b = await reading;
      return early ? b : null;
    },
  };
}
