// The reconciler: a top-up is committed in the journal before Redis credits it, so after a Redis
// failover that lost the credit (replication is asynchronous) the journal still has it. Each pass
// finds the top-ups committed within the window whose exactly-once record (`done`, kept 35 days)
// Redis does not have, and credits them again under the same id: the balance comes back by itself.
// The window stays below the record's ttl, so a top-up is never credited twice because Redis
// forgot it had one.

import type { Metering } from '../billing/index.ts';
import type { Redis } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';
import type { Journal } from './journal.ts';

export interface Restored {
  accountId: string;
  topUpId: string;
  amount: number;
}

export async function reconcileTopUps(
  d: { redis: Redis; journal: Journal; metering: Metering },
  opts: { windowMs: number },
): Promise<Restored[]> {
  const r = await d.journal.pool.query<{
    account_id: string;
    id: string;
    amount: string;
    note: string | null;
  }>(
    `select account_id, id, amount, note from transfers
     where kind = 'topup' and committed_at > now() - make_interval(secs => $1::bigint / 1000.0)
     order by committed_at`,
    [opts.windowMs],
  );
  if (r.rows.length === 0) return [];
  // One EXISTS per top-up, sent together (not a pipeline: on Redis Cluster accounts differ in slot).
  const have = await Promise.all(r.rows.map((t) => d.redis.exists(accountKeys(t.account_id).done(t.id))));
  const restored: Restored[] = [];
  for (const [i, t] of r.rows.entries()) {
    if (have[i] === 1) continue;
    const topUpId = t.id.slice('topup:'.length);
    const res = await d.metering.topUp({
      accountId: t.account_id,
      topUpId,
      amount: Number(t.amount),
      note: t.note ?? undefined,
    });
    if (!res.duplicate) restored.push({ accountId: t.account_id, topUpId, amount: Number(t.amount) });
  }
  return restored;
}
