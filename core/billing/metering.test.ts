import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { ApiError } from '../errors.ts';
import { newId } from '../ids.ts';
import { MAX_SAFE_NANO } from '../money.ts';
import { type Redis, scanKeys } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';
import { recomputeBalanceFromStream, usageRecords, usageReport } from '../usage/usage.ts';
import { Metering } from './metering.ts';
import type { UsageRecord } from './script-args.ts';

const T0 = Date.UTC(2025, 0, 15, 10, 0, 0);
const chat = (keyId: string | null, extra: Partial<UsageRecord> = {}): UsageRecord => ({
  keyId,
  model: 'Org/Chat-1',
  kind: 'chat',
  inputTokens: 100,
  cachedTokens: 40,
  outputTokens: 20,
  ...extra,
});

describe('Metering', () => {
  let server: TestRedis;
  let redis: Redis;
  const clock = T0;
  let m: Metering;

  beforeAll(async () => {
    server = await startRedis();
    redis = server.client();
    m = new Metering(redis, { now: () => clock });
  });
  afterAll(async () => server.stop());

  async function funded(amount: number): Promise<string> {
    const accountId = newId('acct');
    if (amount > 0) await m.topUp({ accountId, topUpId: newId('top'), amount });
    return accountId;
  }
  const streamLength = (accountId: string) => redis.xlen(accountKeys(accountId).usage);
  const allRows = (accountId: string) =>
    usageReport(redis, { accountId, fromMs: 0, toMs: T0 + 100 * 3_600_000 });

  it('BILL-5 a reserve and settle charge the balance once and record the usage', async () => {
    const a = await funded(1_000);
    expect(await m.reserve({ accountId: a, holdId: 'h1', min: 100, max: 400, ttlMs: 60_000 })).toEqual({
      ok: true,
      held: 400,
      available: 600,
      voided: { holds: 0, leases: 0 },
      keyLimit: null,
      windows: null,
    });
    expect(await m.balance(a)).toEqual({ balance: 1_000, held: 400, available: 600 });
    const s = await m.settle({ accountId: a, holdId: 'h1', cost: 250, usage: chat('key_a') });
    expect(s).toEqual({ charged: 250, balance: 750, duplicate: false, short: 0 });
    expect(await m.balance(a)).toEqual({ balance: 750, held: 0, available: 750 });
    expect(await streamLength(a)).toBe(2);
    expect(await recomputeBalanceFromStream(redis, a)).toBe(750);
  });

  it('BILL-6 a reserve fails when the input bound is not covered, and holds what is left otherwise', async () => {
    const a = await funded(1_000);
    expect(await m.reserve({ accountId: a, holdId: 'h1', min: 700, max: 700, ttlMs: 60_000 })).toMatchObject({
      ok: true,
    });
    expect(await m.reserve({ accountId: a, holdId: 'h2', min: 301, max: 900, ttlMs: 60_000 })).toEqual({
      ok: false,
      available: 300,
      voided: { holds: 0, leases: 0 },
      keyLimit: null,
      rateLimit: null,
    });
    expect(await m.reserve({ accountId: a, holdId: 'h3', min: 100, max: 900, ttlMs: 60_000 })).toEqual({
      ok: true,
      held: 300,
      available: 0,
      voided: { holds: 0, leases: 0 },
      keyLimit: null,
      windows: null,
    });
  });

  it('BILL-5 a settlement for an account this Redis does not have (it lost its data) is refused and writes nothing', async () => {
    const a = newId('acct'); // never created: as after a Redis restarted empty
    await expect(m.settle({ accountId: a, holdId: 'h', cost: 100, usage: chat('k') })).rejects.toThrow(
      /NOACCOUNT the account record is missing/,
    );
    expect(await scanKeys(redis, `{a:${a}}*`)).toEqual([]);
  });

  it('a retried reserve returns the same hold; a settled hold id cannot be reserved again', async () => {
    const a = await funded(1_000);
    const first = await m.reserve({ accountId: a, holdId: 'h', min: 10, max: 100, ttlMs: 60_000 });
    const again = await m.reserve({ accountId: a, holdId: 'h', min: 10, max: 100, ttlMs: 60_000 });
    expect(again).toEqual(first);
    expect((await m.balance(a)).held).toBe(100);
    await m.settle({ accountId: a, holdId: 'h', cost: 10, usage: chat('k') });
    await expect(m.reserve({ accountId: a, holdId: 'h', min: 10, max: 100, ttlMs: 60_000 })).rejects.toThrow(
      /MP_HOLD_SETTLED/,
    );
  });

  it('BILL-5 a cost above the hold is charged from the spare balance; the entry keeps the true cost beside it', async () => {
    const a = await funded(1_000);
    await m.reserve({ accountId: a, holdId: 'h', min: 50, max: 200, ttlMs: 60_000 });
    await m.reserve({ accountId: a, holdId: 'other', min: 100, max: 100, ttlMs: 60_000 });
    // 200 from the hold, 600 from the spare balance (1000 − 200 − 100 held elsewhere = 700).
    expect(await m.settle({ accountId: a, holdId: 'h', cost: 800, usage: chat('k') })).toEqual({
      charged: 800,
      balance: 200,
      duplicate: false,
      short: 0,
    });
    const [entry] = await usageRecords(redis, a, { count: 1 });
    expect(entry).toMatchObject({ amount: 800, cost: 800, short: 0, held: 200, source: 'hold' });
  });

  it('BILL-5 a cost the balance cannot cover is charged down to what stays held, and the rest recorded as short', async () => {
    const a = await funded(1_000);
    await m.reserve({ accountId: a, holdId: 'h', min: 50, max: 200, ttlMs: 60_000 });
    await m.reserve({ accountId: a, holdId: 'other', min: 300, max: 300, ttlMs: 60_000 });
    const s = await m.settle({ accountId: a, holdId: 'h', cost: 5_000, usage: chat('k') });
    expect(s).toEqual({ charged: 700, balance: 300, duplicate: false, short: 4_300 });
    expect(await m.balance(a)).toEqual({ balance: 300, held: 300, available: 0 });
    const [entry] = await redis.xrevrange(accountKeys(a).usage, '+', '-', 'COUNT', 1);
    expect(entry![1]).toEqual(expect.arrayContaining(['amt', '700', 'cost', '5000', 'short', '4300']));
    expect(await recomputeBalanceFromStream(redis, a)).toBe(300);
  });

  it('double settle is a no-op that returns the first result', async () => {
    const a = await funded(1_000);
    await m.reserve({ accountId: a, holdId: 'h', min: 100, max: 100, ttlMs: 60_000 });
    const first = await m.settle({ accountId: a, holdId: 'h', cost: 60, usage: chat('k') });
    await m.topUp({ accountId: a, topUpId: 'later', amount: 5 });
    const second = await m.settle({ accountId: a, holdId: 'h', cost: 60, usage: chat('k') });
    expect(second).toEqual({ ...first, duplicate: true, short: 0 });
    expect(await m.balance(a)).toEqual({ balance: 945, held: 0, available: 945 });
    expect(await streamLength(a)).toBe(3);
    expect((await allRows(a)).map((r) => [r.requests, r.cost])).toEqual([[1, 60]]);
  });

  it('double top-up and double refund are no-ops', async () => {
    const a = newId('acct');
    expect(await m.topUp({ accountId: a, topUpId: 't1', amount: 500, note: 'card' })).toEqual({
      balance: 500,
      duplicate: false,
    });
    expect(await m.topUp({ accountId: a, topUpId: 't1', amount: 500, note: 'card' })).toEqual({
      balance: 500,
      duplicate: true,
    });
    const usage: UsageRecord = { keyId: 'k', model: 'vid', kind: 'video', videoSeconds: 4 };
    expect((await m.charge({ accountId: a, chargeId: 'v1', cost: 400, usage })).balance).toBe(100);
    const refund = { accountId: a, refundId: 'v1', of: 'charge:v1', amount: 400, usage };
    expect(await m.refund(refund)).toEqual({
      refunded: 400,
      balance: 500,
      duplicate: false,
      finished: false,
    });
    expect(await m.refund(refund)).toEqual({ refunded: 400, balance: 500, duplicate: true, finished: false });
    expect(await m.balance(a)).toEqual({ balance: 500, held: 0, available: 500 });
    expect(await streamLength(a)).toBe(3);
    expect(await recomputeBalanceFromStream(redis, a)).toBe(500);
  });

  it('a refund with a record fails it in the same step; a finished or deleted record refunds nothing', async () => {
    const a = await funded(1_000);
    const usage: UsageRecord = { keyId: 'k', model: 'vid', kind: 'video', videoSeconds: 4 };
    const k = accountKeys(a);
    const job = (id: string) => ({ key: k.video(id), index: k.videos, id, fields: { id, status: 'queued' } });
    for (const id of ['j1', 'j2', 'j3'])
      await m.charge({ accountId: a, chargeId: id, cost: 100, usage, record: job(id) });
    const fail = (id: string) =>
      m.refund({
        accountId: a,
        refundId: id,
        of: `charge:${id}`,
        amount: 100,
        usage,
        record: { key: k.video(id), fields: { status: 'failed', error_code: 'x' } },
      });
    expect(await fail('j1')).toMatchObject({ refunded: 100, duplicate: false, finished: false });
    expect(await redis.hgetall(k.video('j1'))).toMatchObject({ status: 'failed', error_code: 'x' });
    // Failed already: nothing more.
    expect(await fail('j1')).toMatchObject({ refunded: 0, finished: true });
    await redis.hset(k.video('j2'), 'status', 'completed');
    expect(await fail('j2')).toMatchObject({ refunded: 0, finished: true });
    expect(await redis.hget(k.video('j2'), 'status')).toBe('completed');
    await redis.del(k.video('j3'));
    expect(await fail('j3')).toMatchObject({ refunded: 0, finished: true });
    expect(await redis.exists(k.video('j3'))).toBe(0);
    expect(await m.balance(a)).toMatchObject({ balance: 1_000 - 300 + 100 });
    expect(await recomputeBalanceFromStream(redis, a)).toBe(800);
  });

  it('a refund names the charge it refunds, and the refunds of a charge never exceed it', async () => {
    const a = await funded(1_000);
    const usage: UsageRecord = { keyId: 'k', model: 'vid', kind: 'video', videoSeconds: 4 };
    await m.charge({ accountId: a, chargeId: 'job', cost: 400, usage });
    const refund = (refundId: string, amount: number, of = 'charge:job') =>
      m.refund({ accountId: a, refundId, of, amount, usage });
    expect((await refund('r1', 150)).refunded).toBe(150);
    await expect(refund('r2', 251)).rejects.toMatchObject({ code: 'invalid_request', param: 'amount' });
    expect((await refund('r2', 250)).refunded).toBe(250);
    await expect(refund('r3', 1)).rejects.toMatchObject({ code: 'invalid_request', param: 'amount' });
    await expect(refund('r4', 1, 'charge:nothing')).rejects.toMatchObject({ param: 'of' });
    await expect(refund('r5', 1, 'topup:x')).rejects.toThrow(RangeError);
    const entries = (await usageRecords(redis, a, { count: 10 })).filter((e) => e.type === 'refund');
    expect(entries.map((e) => [e.amount, e.refundOf])).toEqual([
      [250, 'charge:job'],
      [150, 'charge:job'],
    ]);
    // A direct call's settle is refundable by its op id too.
    await m.reserve({ accountId: a, holdId: 'req_1', min: 10, max: 100, ttlMs: 60_000 });
    await m.settle({ accountId: a, holdId: 'req_1', cost: 60, usage: chat('k') });
    expect((await refund('r6', 60, 'settle:req_1')).refunded).toBe(60);
    expect(await recomputeBalanceFromStream(redis, a)).toBe((await m.balance(a)).balance);
  });

  it('BILL-4 charge takes the video cost at once, refuses a short balance, and is exactly-once', async () => {
    const a = await funded(1_000);
    const usage: UsageRecord = { keyId: 'k', model: 'vid', kind: 'video', videoSeconds: 8 };
    await m.reserve({ accountId: a, holdId: 'h', min: 300, max: 300, ttlMs: 60_000 });
    // Held credits are not available: 1000 − 300 < 800.
    expect(await m.charge({ accountId: a, chargeId: 'c1', cost: 800, usage })).toEqual({
      ok: false,
      charged: 0,
      balance: 1_000,
      duplicate: false,
      keyLimit: null,
    });
    await m.release(a, 'h');
    expect(await m.charge({ accountId: a, chargeId: 'c1', cost: 800, usage })).toEqual({
      ok: true,
      charged: 800,
      balance: 200,
      duplicate: false,
      keyLimit: null,
    });
    expect(await m.charge({ accountId: a, chargeId: 'c1', cost: 800, usage })).toMatchObject({
      ok: true,
      charged: 800,
      duplicate: true,
    });
    expect(await m.balance(a)).toEqual({ balance: 200, held: 0, available: 200 });
  });

  it('release drops a hold without charge', async () => {
    const a = await funded(1_000);
    await m.reserve({ accountId: a, holdId: 'h', min: 100, max: 600, ttlMs: 60_000 });
    expect(await m.release(a, 'h')).toBe(600);
    expect(await m.balance(a)).toEqual({ balance: 1_000, held: 0, available: 1_000 });
    expect(await m.release(a, 'h')).toBe(0);
    expect(await streamLength(a)).toBe(1);
  });

  it('a hold is renewed while its owner lives: renew pushes its expiry past now (Redis time) and names the gone ones', async () => {
    const a = await funded(1_000);
    await m.reserve({ accountId: a, holdId: 'live', min: 10, max: 10, ttlMs: 1_000 });
    const before = Number(await redis.zscore(accountKeys(a).holdExpiry, 'live'));
    expect(await m.renew(a, 60_000, ['live', 'settled-already'])).toEqual(['settled-already']);
    const after = Number(await redis.zscore(accountKeys(a).holdExpiry, 'live'));
    expect(after - before).toBeGreaterThanOrEqual(59_000);
  });

  it('a reserve voids expired holds on its way, so an unswept account is not blocked, and the ledger says so', async () => {
    const a = await funded(1_000);
    await m.reserve({ accountId: a, holdId: 'req_crashed', min: 1_000, max: 1_000, ttlMs: 1_000 });
    expect((await m.reserve({ accountId: a, holdId: 'x', min: 1, max: 1, ttlMs: 1_000 })).ok).toBe(false);
    await new Promise((r) => setTimeout(r, 1_050));
    expect(await m.reserve({ accountId: a, holdId: 'y', min: 1, max: 1_000, ttlMs: 1_000 })).toEqual({
      ok: true,
      held: 1_000,
      available: 0,
      voided: { holds: 1, leases: 0 },
      keyLimit: null,
      windows: null,
    });
    const [voidEntry] = (await usageRecords(redis, a, { count: 5 })).filter((e) => e.type === 'void');
    expect(voidEntry).toMatchObject({
      opId: 'void:req_crashed',
      amount: 1_000,
      reason: 'hold_expired',
      requestId: 'req_crashed',
    });
    expect(await recomputeBalanceFromStream(redis, a)).toBe(1_000);
  });

  it('a settle whose hold was voided charges the spare balance and records what it could not collect', async () => {
    const a = await funded(1_000);
    await m.reserve({ accountId: a, holdId: 'req_late', min: 300, max: 300, ttlMs: 60_000 });
    await m.release(a, 'req_late'); // gone, as a voided hold is
    await m.reserve({ accountId: a, holdId: 'other', min: 900, max: 900, ttlMs: 60_000 });
    expect(await m.settle({ accountId: a, holdId: 'req_late', cost: 250, usage: chat('k') })).toEqual({
      charged: 100,
      balance: 900,
      duplicate: false,
      short: 150,
    });
    const [entry] = await usageRecords(redis, a, { count: 1 });
    expect(entry).toMatchObject({ amount: 100, cost: 250, short: 150, held: 0, source: 'none' });
  });

  it('top-up beyond 2^53 is refused; up to it is exact', async () => {
    const a = await funded(MAX_SAFE_NANO - 10);
    const refused = m.topUp({ accountId: a, topUpId: 'too-much', amount: 11 });
    await expect(refused).rejects.toBeInstanceOf(ApiError);
    await expect(refused).rejects.toMatchObject({ code: 'invalid_request', param: 'amount' });
    expect((await m.balance(a)).balance).toBe(MAX_SAFE_NANO - 10);
    // The refusal is not remembered: the same id can go through once it fits.
    expect(await m.topUp({ accountId: a, topUpId: 'too-much', amount: 10 })).toEqual({
      balance: MAX_SAFE_NANO,
      duplicate: false,
    });
    await expect(m.topUp({ accountId: a, topUpId: 'x', amount: MAX_SAFE_NANO + 1 })).rejects.toThrow(
      RangeError,
    );
    await expect(m.topUp({ accountId: a, topUpId: 'y', amount: 0.5 })).rejects.toThrow(RangeError);
    // Large amounts stay exact through Lua (no "9.007e+15" strings in the stream or rollups).
    const big = 4_503_599_627_370_497;
    await m.reserve({ accountId: a, holdId: 'big', min: big, max: big, ttlMs: 60_000 });
    await m.settle({ accountId: a, holdId: 'big', cost: big, usage: chat('k') });
    expect((await m.balance(a)).balance).toBe(MAX_SAFE_NANO - big);
    expect(await recomputeBalanceFromStream(redis, a)).toBe(MAX_SAFE_NANO - big);
    expect((await allRows(a))[0]!.cost).toBe(big);
  });

  it('survives a script cache flush (EVALSHA falls back to EVAL)', async () => {
    const a = await funded(100);
    await redis.script('FLUSH');
    expect((await m.reserve({ accountId: a, holdId: 'h', min: 1, max: 1, ttlMs: 1_000 })).ok).toBe(true);
  });

  it('BILL-5 BILL-6 KEY-10 1,000 concurrent reserve/settle pairs on a balance for exactly 100', async () => {
    const cost = 123_456_789;
    const a = await funded(100 * cost);
    const clients = Array.from({ length: 8 }, () => new Metering(server.client(), { now: () => clock }));
    const keys = ['key_a', 'key_b', 'key_c', 'key_d'];
    const won = new Map<string, number>();
    const results = await Promise.all(
      Array.from({ length: 1_000 }, async (_, i) => {
        const meter = clients[i % clients.length]!;
        const keyId = keys[i % keys.length]!;
        const r = await meter.reserve({ accountId: a, holdId: `h${i}`, min: cost, max: cost, ttlMs: 60_000 });
        if (!r.ok) return 0;
        const s = await meter.settle({
          accountId: a,
          holdId: `h${i}`,
          cost,
          usage: chat(keyId, { inputTokens: i, cachedTokens: 0, outputTokens: 1 }),
        });
        expect(s.balance).toBeGreaterThanOrEqual(0);
        won.set(keyId, (won.get(keyId) ?? 0) + 1);
        return s.charged;
      }),
    );
    expect(results.filter((c) => c > 0)).toHaveLength(100);
    expect(results.reduce((x, y) => x + y, 0)).toBe(100 * cost);
    expect(await m.balance(a)).toEqual({ balance: 0, held: 0, available: 0 });
    expect(await recomputeBalanceFromStream(redis, a)).toBe(0);
    expect(await streamLength(a)).toBe(101);
    const rows = await allRows(a);
    expect(rows.reduce((x, r) => x + r.cost, 0)).toBe(100 * cost);
    expect(rows.reduce((x, r) => x + r.requests, 0)).toBe(100);
    for (const keyId of keys) {
      const row = rows.find((r) => r.keyId === keyId);
      expect(row?.requests ?? 0).toBe(won.get(keyId) ?? 0);
      expect(row?.cost ?? 0).toBe((won.get(keyId) ?? 0) * cost);
    }
  });

  it('BILL-5 the balance never goes below zero under concurrency with short holds and overruns charged from the spare balance', async () => {
    const a = await funded(50_000);
    const clients = Array.from({ length: 8 }, () => new Metering(server.client(), { now: () => clock }));
    let charged = 0;
    await Promise.all(
      Array.from({ length: 600 }, async (_, i) => {
        const meter = clients[i % clients.length]!;
        const min = 50 + (i % 7) * 10;
        const r = await meter.reserve({ accountId: a, holdId: `h${i}`, min, max: min * 4, ttlMs: 60_000 });
        if (!r.ok) return;
        expect(r.available).toBeGreaterThanOrEqual(0);
        // Some calls overrun their hold (cost > held), some finish under it, some do nothing.
        if (i % 5 === 0) return meter.release(a, `h${i}`);
        const cost = (i % 3) * min * 3;
        const s = await meter.settle({ accountId: a, holdId: `h${i}`, cost, usage: chat('k') });
        // An overrun is charged from the spare balance as far as it goes; the rest is short.
        expect(s.charged + s.short).toBe(cost);
        expect(s.balance).toBeGreaterThanOrEqual(0);
        charged += s.charged;
      }),
    );
    const b = await m.balance(a);
    expect(b.held).toBe(0);
    expect(b.balance).toBe(50_000 - charged);
    expect(charged).toBeGreaterThan(0);
    expect(b.balance).toBeGreaterThanOrEqual(0);
    expect(await recomputeBalanceFromStream(redis, a)).toBe(b.balance);
  });

  it('the done records expire, so they cannot grow forever', async () => {
    const short = new Metering(redis, { now: () => clock, settleDoneTtlMs: 5_000, ledgerDoneTtlMs: 7_000 });
    const a = newId('acct');
    await short.topUp({ accountId: a, topUpId: 't', amount: 100 });
    await short.reserve({ accountId: a, holdId: 'h', min: 10, max: 10, ttlMs: 60_000 });
    await short.settle({ accountId: a, holdId: 'h', cost: 10, usage: chat('k') });
    const k = accountKeys(a);
    expect(await redis.pttl(k.done('settle:h'))).toBeGreaterThan(4_000);
    expect(await redis.pttl(k.done('settle:h'))).toBeLessThanOrEqual(5_000);
    expect(await redis.pttl(k.done('topup:t'))).toBeGreaterThan(6_000);
    expect(await redis.pttl(k.done('topup:t'))).toBeLessThanOrEqual(7_000);
  });
});
