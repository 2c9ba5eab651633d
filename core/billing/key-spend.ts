// Per-key monthly spend, for the keys' spend limits (DESIGN "Money"). The metering scripts keep it
// in the account's keySpend hash (core/keyspace.ts) in the same step as the balance: every charge
// adds to its key's `spent:<keyId>:<YYYYMM>`, every refund takes off, and a reserve for a key with
// a limit holds no more than the key may still spend. This module names the months and reads the
// figures back (the console's keys table, the ledger check).

import { accountKeys } from '../keyspace.ts';
import type { Redis } from '../redis-client.ts';

/** What a key with a spend limit stands at this month (nano). */
export interface KeySpend {
  /** The key's monthly spend limit. */
  limit: number;
  /** Net charged by the key this UTC month. */
  spent: number;
  /** Held by the key's calls still running. */
  held: number;
}

/**
 * The UTC calendar month of `ms` as `YYYYMM`: the scripts' month field. Computed here and passed to
 * the scripts with the report clock (the clock of the rollups) so a key's month spend is exactly its
 * rollups' net cost over that month.
 */
export function spendMonth(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The keySpend field of a key's spend in one month. */
export const spentField = (keyId: string, month: string) => `spent:${keyId}:${month}`;

/** Each key's net spend in the UTC month of `nowMs` (nano; 0 for a key that spent nothing). */
export async function keyMonthSpend(
  redis: Redis,
  accountId: string,
  keyIds: readonly string[],
  nowMs: number = Date.now(),
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (keyIds.length === 0) return out;
  const month = spendMonth(nowMs);
  const values = await redis.hmget(
    accountKeys(accountId).keySpend,
    ...keyIds.map((id) => spentField(id, month)),
  );
  keyIds.forEach((id, i) => {
    out.set(id, Number(values[i] ?? 0));
  });
  return out;
}
