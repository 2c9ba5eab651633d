// The sweeper's expiry index, filed again from the holds themselves. Every hold and lease is filed
// in its account's expiry index (globalKeys.holdsDue) before it is made, so the sweeper can find it
// if its proxy dies. On Redis Cluster the index and the account can sit on different primaries, and
// a failover can lose the index's entry (replication is asynchronous) while the hold survives: its
// proxy's next renewal files it again, but a proxy that dies first leaves a hold nothing would ever
// void — money held for nothing. This pass reads every account's holds (their expiry zset, the
// truth) and files each one no index names, at its expiry, so the sweeper judges it as any other.

import type { Redis } from '../redis/client.ts';
import { accountKeys, dueMember, globalKeys } from '../redis/keyspace.ts';

/** A hold filed again: it was in its account's holds but in no expiry index. */
export interface RefiledHold {
  accountId: string;
  holdId: string;
  expiresAt: number;
}

/**
 * One pass over every account (SSCAN of the accounts set, `batch` at a time, their reads in
 * parallel): returns the holds it filed again. A hold settled between the read and the write leaves
 * a stale entry, which the sweeper drops when it is due (it finds no hold), as it drops any other.
 */
export async function resyncHoldIndexes(redis: Redis, opts: { batch?: number } = {}): Promise<RefiledHold[]> {
  const batch = opts.batch ?? 100;
  const refiled: RefiledHold[] = [];
  let cursor = '0';
  do {
    const [next, ids] = await redis.sscan(globalKeys.accounts, cursor, 'COUNT', batch);
    cursor = next;
    for (const found of await Promise.all(ids.map((id) => resyncAccount(redis, id)))) refiled.push(...found);
  } while (cursor !== '0');
  return refiled;
}

async function resyncAccount(redis: Redis, accountId: string): Promise<RefiledHold[]> {
  const flat = await redis.zrange(accountKeys(accountId).holdExpiry, 0, -1, 'WITHSCORES');
  if (flat.length === 0) return [];
  const holds: { holdId: string; expiresAt: number }[] = [];
  for (let i = 0; i < flat.length; i += 2) holds.push({ holdId: flat[i]!, expiresAt: Number(flat[i + 1]) });
  const unfiled = await unindexedHolds(
    redis,
    accountId,
    holds.map((h) => h.holdId),
  );
  const missing = holds.filter((_, i) => unfiled[i]);
  if (missing.length === 0) return [];
  // NX: an entry filed meanwhile (a renewal) keeps its own, newer, time.
  const own = globalKeys.holdsDue(accountId);
  await redis.zadd(own, 'NX', ...missing.flatMap((h) => [h.expiresAt, dueMember(accountId, h.holdId)]));
  return missing.map((h) => ({ accountId, ...h }));
}

/**
 * For each of an account's holds, whether no expiry index names it: neither its own block's index
 * nor (filed by a release before those) the one index there was. The ledger check reports these;
 * the resync files them again.
 */
export async function unindexedHolds(redis: Redis, accountId: string, holdIds: string[]): Promise<boolean[]> {
  if (holdIds.length === 0) return [];
  const members = holdIds.map((id) => dueMember(accountId, id));
  const [inOwn, inBefore] = await Promise.all(
    [globalKeys.holdsDue(accountId), globalKeys.holdsDueAll().at(-1)!].map((k) =>
      redis.zmscore(k, ...members),
    ),
  );
  return holdIds.map((_, i) => inOwn![i] === null && inBefore![i] === null);
}
