import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { Metering } from '../billing/metering.ts';
import type { UsageRecord } from '../billing/script-args.ts';
import { newId } from '../ids.ts';
import type { Redis } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';
import { recomputeBalanceFromStream, usageRecords, usageReport } from './usage.ts';

const HOUR = 3_600_000;
const T0 = Date.UTC(2025, 0, 15, 10, 0, 0);

describe('usage', () => {
  let server: TestRedis;
  let redis: Redis;
  let clock = T0;
  let m: Metering;

  beforeAll(async () => {
    server = await startRedis();
    redis = server.client();
    m = new Metering(redis, { now: () => clock });
  });
  afterAll(async () => server.stop());

  async function call(accountId: string, holdId: string, cost: number, usage: UsageRecord) {
    const r = await m.reserve({ accountId, holdId, min: cost, max: cost, ttlMs: 60_000 });
    expect(r.ok).toBe(true);
    return m.settle({ accountId, holdId, cost, usage });
  }

  /** Two hours of traffic from two keys on two models, a video refund and a top-up. */
  async function history(): Promise<string> {
    const a = newId('acct');
    clock = T0 + 5 * 60_000;
    await m.topUp({ accountId: a, topUpId: 't1', amount: 1_000_000, note: 'card ••42' });
    const chat = (keyId: string, model = 'Org/Chat-1'): UsageRecord => ({
      keyId,
      model,
      kind: 'chat',
      inputTokens: 1000,
      cachedTokens: 250,
      outputTokens: 80,
      requestId: `req_${keyId}`,
    });
    await call(a, 'h1', 100, chat('key_a'));
    await call(a, 'h2', 100, chat('key_a'));
    await call(a, 'h3', 300, chat('key_b', 'Org/Other|Model'));
    await m.charge({
      accountId: a,
      chargeId: 'vid1',
      cost: 5_000,
      usage: { keyId: 'key_b', model: 'vid', kind: 'video', videoSeconds: 2.5 },
    });
    clock = T0 + HOUR + 1;
    await call(a, 'h4', 40, { keyId: 'key_a', model: 'emb', kind: 'embedding', inputTokens: 7 });
    await m.charge({
      accountId: a,
      chargeId: 'img1',
      cost: 600,
      usage: { keyId: 'key_a', model: 'img', kind: 'image', images: 3 },
    });
    await m.refund({
      accountId: a,
      refundId: 'vid1',
      of: 'charge:vid1',
      amount: 5_000,
      usage: { keyId: 'key_b', model: 'vid', kind: 'video', videoSeconds: 2.5 },
    });
    clock = T0;
    return a;
  }

  it('KEY-10 usageReport gives one row per hour, key and model from the rollups', async () => {
    const a = await history();
    const rows = await usageReport(redis, { accountId: a, fromMs: T0, toMs: T0 + 2 * HOUR });
    const hour0 = new Date(T0).toISOString();
    const hour1 = new Date(T0 + HOUR).toISOString();
    const zero = {
      images: 0,
      videoSeconds: 0,
      cachedTokens: 0,
      inputTokens: 0,
      outputTokens: 0,
      refunded: 0,
    };
    expect(rows).toEqual([
      {
        ...zero,
        hour: hour0,
        hourStartMs: T0,
        keyId: 'key_a',
        model: 'Org/Chat-1',
        requests: 2,
        inputTokens: 2000,
        cachedTokens: 500,
        outputTokens: 160,
        cost: 200,
      },
      {
        ...zero,
        hour: hour0,
        hourStartMs: T0,
        keyId: 'key_b',
        model: 'Org/Other|Model',
        requests: 1,
        inputTokens: 1000,
        cachedTokens: 250,
        outputTokens: 80,
        cost: 300,
      },
      {
        ...zero,
        hour: hour0,
        hourStartMs: T0,
        keyId: 'key_b',
        model: 'vid',
        requests: 1,
        videoSeconds: 2.5,
        cost: 5000,
      },
      {
        ...zero,
        hour: hour1,
        hourStartMs: T0 + HOUR,
        keyId: 'key_a',
        model: 'emb',
        requests: 1,
        inputTokens: 7,
        cost: 40,
      },
      {
        ...zero,
        hour: hour1,
        hourStartMs: T0 + HOUR,
        keyId: 'key_a',
        model: 'img',
        requests: 1,
        images: 3,
        cost: 600,
      },
      // The refund lands in the hour it happened, as a negative cost.
      {
        ...zero,
        hour: hour1,
        hourStartMs: T0 + HOUR,
        keyId: 'key_b',
        model: 'vid',
        requests: 0,
        cost: -5000,
        refunded: 5000,
      },
    ]);
  });

  it('KEY-10 usageReport filters by key and by hour range', async () => {
    const a = await history();
    const keyA = await usageReport(redis, { accountId: a, keyId: 'key_a', fromMs: 0, toMs: T0 + 10 * HOUR });
    expect(keyA.map((r) => [r.model, r.requests, r.cost])).toEqual([
      ['Org/Chat-1', 2, 200],
      ['emb', 1, 40],
      ['img', 1, 600],
    ]);
    // A range that starts inside an hour includes that hour; the end is exclusive.
    const second = await usageReport(redis, {
      accountId: a,
      fromMs: T0 + HOUR + 30 * 60_000,
      toMs: T0 + 3 * HOUR,
    });
    expect(second.map((r) => r.model)).toEqual(['emb', 'img', 'vid']);
    expect(await usageReport(redis, { accountId: a, fromMs: T0, toMs: T0 + HOUR })).toHaveLength(3);
    expect(await usageReport(redis, { accountId: a, fromMs: T0 + 5 * HOUR, toMs: T0 + 6 * HOUR })).toEqual(
      [],
    );
  });

  it('KEY-10 per-key totals from the report equal the charges in the stream', async () => {
    const a = await history();
    const entries = await usageRecords(redis, a, { count: 1_000 });
    const rows = await usageReport(redis, { accountId: a, fromMs: 0, toMs: T0 + 10 * HOUR });
    for (const keyId of ['key_a', 'key_b']) {
      const fromStream = entries
        .filter((e) => e.keyId === keyId)
        .reduce((sum, e) => sum + (e.type === 'charge' ? e.amount : -e.amount), 0);
      const fromRollups = rows.filter((r) => r.keyId === keyId).reduce((sum, r) => sum + r.cost, 0);
      expect(fromRollups).toBe(fromStream);
    }
  });

  it('usageRecords reads the stream newest first, filtered by key', async () => {
    const a = await history();
    const all = await usageRecords(redis, a);
    expect(all.map((e) => e.opId)).toEqual([
      'refund:vid1',
      'charge:img1',
      'settle:h4',
      'charge:vid1',
      'settle:h3',
      'settle:h2',
      'settle:h1',
      'topup:t1',
    ]);
    expect(all.at(-1)).toMatchObject({
      type: 'topup',
      amount: 1_000_000,
      balance: 1_000_000,
      note: 'card ••42',
    });
    expect(all.find((e) => e.opId === 'settle:h1')).toMatchObject({
      type: 'charge',
      atMs: T0 + 5 * 60_000,
      amount: 100,
      cost: 100,
      balance: 999_900,
      keyId: 'key_a',
      model: 'Org/Chat-1',
      kind: 'chat',
      inputTokens: 1000,
      cachedTokens: 250,
      outputTokens: 80,
      images: null,
      requestId: 'req_key_a',
    });
    const keyB = await usageRecords(redis, a, { keyId: 'key_b', count: 2 });
    expect(keyB.map((e) => [e.type, e.opId, e.amount])).toEqual([
      ['refund', 'refund:vid1', 5_000],
      ['charge', 'charge:vid1', 5_000],
    ]);
  });

  it('BILL-5 recomputeBalanceFromStream equals the balance: top-ups − charges + refunds', async () => {
    const a = await history();
    const balance = Number(await redis.hget(accountKeys(a).account, 'balance'));
    expect(balance).toBe(1_000_000 - 100 - 100 - 300 - 5_000 - 40 - 600 + 5_000);
    expect(await recomputeBalanceFromStream(redis, a)).toBe(balance);
  });

  it('recomputeBalanceFromStream and usageRecords page through long streams', async () => {
    const a = newId('acct');
    await m.topUp({ accountId: a, topUpId: 't', amount: 10_000 });
    for (let i = 0; i < 1_205; i += 1) {
      await m.charge({
        accountId: a,
        chargeId: `c${i}`,
        cost: 3,
        usage: { keyId: `k${i % 2}`, model: 'x', kind: 'image', images: 1 },
      });
      if (i % 100 === 0)
        await m.refund({
          accountId: a,
          refundId: `r${i}`,
          of: `charge:c${i}`,
          amount: 1,
          usage: { keyId: 'k0', model: 'x', kind: 'image' },
        });
    }
    const expected = 10_000 - 1_205 * 3 + 13;
    expect(await recomputeBalanceFromStream(redis, a)).toBe(expected);
    expect(Number(await redis.hget(accountKeys(a).account, 'balance'))).toBe(expected);
    expect(await usageRecords(redis, a, { count: 5_000 })).toHaveLength(1 + 1_205 + 13);
    expect(await usageRecords(redis, a, { keyId: 'k1', count: 5_000 })).toHaveLength(602);
  });
});
