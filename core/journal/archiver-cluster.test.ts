// The archiver on a fresh Redis Cluster (issue 38): every account's first write makes its stream,
// and the first pass creates the archiver's consumer group on the node that holds each stream.
// XGROUP CREATE has no key position in the client's command table, so with auto-pipelining (as the
// proxy connects) it went to the node of the word CREATE's slot and came back MOVED ("journal archive failed | MOVED … [xgroup]") before any
// fault. Accounts on every primary, several passes of fresh accounts: each pass archives all of
// them, and no pass fails. Always on a real cluster (this file starts its own).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { journalForFile } from '../../test/helpers/postgres.ts';
import { startRedisCluster, type TestRedisCluster } from '../../test/helpers/redis-cluster.ts';
import { Accounts } from '../accounts/accounts.ts';
import { Metering } from '../billing/index.ts';
import { newId } from '../ids.ts';
import { connectRedis, type Redis } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';
import { Archiver } from './archiver.ts';

const j = journalForFile();
let cluster: TestRedisCluster;
let redis: Redis;
beforeAll(async () => {
  cluster = await startRedisCluster();
  // As the proxy connects (proxy/main.ts): auto-pipelining groups commands by the slot of their
  // first argument, which for XGROUP is the word CREATE.
  redis = connectRedis(cluster.url, { maxRetriesPerRequest: 2, enableAutoPipelining: true });
});
afterAll(async () => {
  redis?.disconnect();
  await cluster?.stop();
});

/** New accounts, at least `perPrimary` on each primary, each with its first call settled. */
async function firstWrites(perPrimary: number): Promise<string[]> {
  const metering = new Metering(redis, { beforeTopUp: (t) => j.journal.commitTopUp(t) });
  const byPrimary = new Map<number, string[]>();
  const all: string[] = [];
  while (byPrimary.size < 3 || [...byPrimary.values()].some((ids) => ids.length < perPrimary)) {
    const { id } = await new Accounts(redis).create({ name: 'Shard', country: 'US' });
    const primary = await cluster.primaryOf(accountKeys(id).usage);
    if ((byPrimary.get(primary)?.length ?? 0) >= perPrimary) continue;
    byPrimary.set(primary, [...(byPrimary.get(primary) ?? []), id]);
    await metering.topUp({ accountId: id, topUpId: newId('topup'), amount: 1_000_000 });
    const holdId = newId('req');
    await metering.reserve({ accountId: id, holdId, min: 1, max: 1_000, ttlMs: 60_000 });
    await metering.settle({
      accountId: id,
      holdId,
      cost: 7,
      usage: {
        keyId: 'key_1',
        model: 'Org/Chat-1',
        kind: 'chat',
        inputTokens: 1,
        outputTokens: 1,
        requestId: holdId,
      },
    });
    all.push(id);
  }
  return all;
}

describe('the archiver on a Redis Cluster', () => {
  it('BILL-5 creates each stream group on the stream node from the first write: no pass fails', async () => {
    const archiver = new Archiver(redis, j.journal);
    for (let round = 0; round < 3; round++) {
      const accounts = await firstWrites(2);
      // One pass archives every new stream: its group made where the stream lives.
      await archiver.pass();
      for (const id of accounts) {
        const charges = (await j.journal.archivedAfter(id, '0-0')).filter((r) => r.kind === 'charge');
        expect(
          charges.map((r) => r.amount),
          id,
        ).toEqual([7]);
        const groups = (await redis.xinfo('GROUPS', accountKeys(id).usage)) as unknown[][];
        expect(groups.map((g) => g[1])).toEqual(['archiver']);
      }
    }
  }, 120_000);
});
