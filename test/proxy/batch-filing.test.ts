// A batch is never left in `validating` with nobody to run it (docs/batches.md "How a batch runs"),
// on one real Redis and the simulator. The runners' list and the batch's record are in different
// slots, so they cannot be written in one step on Redis Cluster: the list entry is written first.
// - Redis refuses the list's write (a real NOPERM: an ACL that denies writes to that one key): the
//   creation fails, nothing is held, no record waits in `validating`; the runner goes on with
//   other batches.
// - A creation that died after filing the batch and holding its estimate (the state a replica
//   SIGKILLed there leaves): past the grace (100 runner polls, 3 s here) the runner gives the hold back and drops
//   the entry.
// - A batch that ended but stayed on the list: dropped from it, its record kept.
// Each ends with the ledger check. One Redis server (the ACL is one server's; `aof` asks for one).
import type { Redis } from 'ioredis';
import { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseMetering } from '../../core/billing/index.ts';
import { ACTIVE_KEY, Batches, batchMember } from '../../core/jobs/batches.ts';
import { batchLeaseId } from '../../proxy/billing/batch-money.ts';
import { batchEnded, createChatBatch, jsonlFile, uploadLines } from '../helpers/batches.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { until } from '../helpers/until.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ BATCH_POLL_MS: '30', BATCH_LOCK_MS: '2000' }, { redis: { aof: true } });
});
afterAll(async () => {
  await h?.stop();
});

/**
 * Key patterns matching every key but `key` (Redis globs have no "not"): at each position, any key
 * that differs there, and any key longer than it.
 */
function allKeysBut(key: string): string[] {
  const esc = (s: string) => s.replace(/[\\*?[\]^]/g, (c) => `\\${c}`);
  const out: string[] = [];
  for (let i = 0; i < key.length; i++) {
    out.push(`${esc(key.slice(0, i))}[^${esc(key[i]!)}]*`);
    if (i > 0) out.push(esc(key.slice(0, i))); // a key that is a shorter prefix
  }
  out.push(`${esc(key)}?*`);
  return out;
}

/**
 * The default user (every connection's) may read and write every key, but only read `key` (a
 * script's keys need both from one pattern, hence the patterns of every other key).
 */
async function refuseWritesTo(redis: Redis, key: string): Promise<void> {
  const others = allKeysBut(key).map((p) => `~${p}`);
  await redis.call('ACL', 'SETUSER', 'default', 'resetkeys', ...others, `%R~${key}`);
}

async function allowAll(redis: Redis): Promise<void> {
  await redis.call('ACL', 'SETUSER', 'default', 'resetkeys', '~*');
}

const lines = Array.from({ length: 3 }, (_, i) => ({
  custom_id: `l${i}`,
  body: { model: CHAT_MODEL, messages: [{ role: 'user', content: `line ${i}` }], max_tokens: 8 },
}));

describe('filing a batch for the runners', () => {
  it('BILL-5 Redis refusing the runners’ list: the creation fails, nothing is held, no batch waits in validating; the next batch runs', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const client = h.client(acct.secret);
    const file = await uploadLines(client, '/v1/chat/completions', lines);
    const redis = h.redis.client() as Redis;
    await refuseWritesTo(redis, ACTIVE_KEY);
    let err: unknown;
    try {
      // The ACL is real: the list's write is refused, every other key is written.
      await expect(redis.zadd(ACTIVE_KEY, 1, 'probe')).rejects.toThrow(/NOPERM/);
      await redis.set(`probe:${acct.accountId}`, '1');
      err = await client.batches
        .create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })
        .catch((e: unknown) => e);
    } finally {
      await allowAll(redis);
    }
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).status).toBeGreaterThanOrEqual(500);

    // A batch created afterwards runs to its end (the runner ticked many times meanwhile).
    const next = await createChatBatch(client, lines);
    expect((await batchEnded(client, next.id)).status).toBe('completed');
    // The refused creation left no batch that waits for a runner.
    const listed = [];
    for await (const b of client.batches.list()) listed.push(b);
    expect(listed.filter((b) => b.id !== next.id).map((b) => b.status)).toEqual(
      listed.filter((b) => b.id !== next.id).map(() => 'failed'),
    );
    expect((await h.settled(acct.accountId)).held).toBe(0);
    await expectLedgerClean(h.redis.client(), [acct.accountId]);
  });

  it('BILL-5 a creation that died after filing and holding: the runner gives the hold back past the grace and drops the entry', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const redis = h.redis.client();
    const batches = new Batches(redis);
    const id = 'batch_died_mid_creation';
    // What createBatch had written when its replica died: the list entry, then the hold (a lease
    // of the batch's, filed under its key), and no record.
    await redis.zadd(ACTIVE_KEY, Date.now(), batchMember(acct.accountId, id));
    const held = await new LeaseMetering(redis).extendLease({
      accountId: acct.accountId,
      leaseId: batchLeaseId(id),
      add: 1_000_000,
      min: 1_000_000,
      den: 1,
      ttlMs: 3_600_000,
      keyId: acct.keyId,
    });
    expect(held.grown).toBe(1_000_000);
    expect((await h.metering.balance(acct.accountId)).held).toBe(1_000_000);

    await until(
      async () => (await h.metering.balance(acct.accountId)).held === 0,
      'the hold given back',
      30_000,
    );
    await until(async () => !(await batches.active()).some((b) => b.id === id), 'the entry dropped', 30_000);
    expect(await batches.get(acct.accountId, id)).toBeNull();
    await expectLedgerClean(redis, [acct.accountId]);
  });

  it('a batch that ended but stayed on the list (its unfiling did not land) is dropped from the list and keeps its record', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const client = h.client(acct.secret);
    const done = await createChatBatch(client, lines);
    expect((await batchEnded(client, done.id)).status).toBe('completed');
    const redis = h.redis.client();
    const batches = new Batches(redis);
    // What a move to `completed` leaves when its ZREM is lost: the entry is still listed.
    await redis.zadd(ACTIVE_KEY, Date.now(), batchMember(acct.accountId, done.id));
    await until(
      async () => !(await batches.active()).some((b) => b.id === done.id),
      'the entry dropped',
      30_000,
    );
    const kept = await client.batches.retrieve(done.id);
    expect(kept.status).toBe('completed');
    expect(kept.request_counts).toEqual({ total: lines.length, completed: lines.length, failed: 0 });
    expect((await jsonlFile(client, kept.output_file_id)).map((l) => l.custom_id)).toEqual(
      lines.map((l) => l.custom_id),
    );
    expect((await h.settled(acct.accountId)).held).toBe(0);
    await expectLedgerClean(redis, [acct.accountId]);
  });
});
