// A key's spend limit with a reset window (issue 34): a budget per UTC day, ISO week (Monday 00:00
// UTC on) or UTC month, checked in the reserve and charge scripts' own step. Every charge counts in
// its month, day and week at once, so a window set or changed mid-period sees what was already
// spent; the refusal says which window and when it resets. Real Redis; every test ends with the
// ledger check, which also proves each key's spend per period against the usage stream.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../../test/helpers/ledger.ts';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { spendOnce } from '../../test/helpers/spend.ts';
import { keySpendLimitReached } from '../errors.ts';
import { newId } from '../ids.ts';
import { ApiKeys } from '../keys/index.ts';
import { budgetResetsAt, keyWindowSpend, spendPeriod, spendPeriods } from './key-spend.ts';
import { LeaseMetering } from './leases.ts';
import { Metering } from './metering.ts';
import type { UsageRecord } from './script-args.ts';

const TTL = 60_000;
// Saturday 2026-11-28 23:30 UTC; the ISO week began Monday 2026-11-23.
const SAT = Date.UTC(2026, 10, 28, 23, 30);
const SUN = Date.UTC(2026, 10, 29, 0, 30);
const MON = Date.UTC(2026, 10, 30, 0, 0);
const DEC = Date.UTC(2026, 11, 1, 0, 0);
const chat = (keyId: string): UsageRecord => ({ keyId, model: 'Org/Chat', kind: 'chat', inputTokens: 1 });

describe('budget periods (UTC)', () => {
  it('names the month, day and ISO week of a time; the week is named by its Monday', () => {
    expect(spendPeriods(SAT)).toBe('202611|20261128|w20261123');
    expect(spendPeriods(SUN)).toBe('202611|20261129|w20261123');
    expect(spendPeriods(MON)).toBe('202611|20261130|w20261130');
    // A week across a year boundary is named by its Monday, in the old year.
    expect(spendPeriod('week', Date.UTC(2027, 0, 1, 12))).toBe('w20261228');
    expect(spendPeriod('day', Date.UTC(2026, 0, 1) - 1)).toBe('20251231');
  });

  it('a window resets at the next UTC midnight, Monday 00:00 UTC, or the 1st 00:00 UTC', () => {
    expect(budgetResetsAt('day', SAT)).toBe(Date.UTC(2026, 10, 29));
    expect(budgetResetsAt('week', SAT)).toBe(MON);
    expect(budgetResetsAt('week', MON)).toBe(Date.UTC(2026, 11, 7));
    expect(budgetResetsAt('month', SAT)).toBe(DEC);
    expect(budgetResetsAt('month', Date.UTC(2026, 11, 31, 23, 59))).toBe(Date.UTC(2027, 0, 1));
  });

  it('the refusal names the window and carries limit_source and resets_at for a client to act on', () => {
    const err = keySpendLimitReached(
      {
        limit: 1_000_000_000,
        spent: 1_000_000_000,
        held: 0,
        window: 'day',
        resetsAt: Date.UTC(2026, 10, 29),
      },
      'USD',
    );
    expect(err.status).toBe(429);
    expect(err.code).toBe('insufficient_quota');
    expect(err.shouldRetry).toBe(false);
    expect(err.message).toBe(
      "This API key's daily spend limit of 1.00 USD is reached (1.00 USD spent today). It resets at 2026-11-29T00:00:00Z. Raise the key's limit in the console, or use another key.",
    );
    expect(err.details).toEqual({
      limit_source: 'key',
      limit_window: 'day',
      resets_at: '2026-11-29T00:00:00Z',
    });
  });
});

describe('key budgets with reset windows', () => {
  const r = redisForFile();
  const clock = { now: SAT };
  const metering = () => new Metering(r.redis, { now: () => clock.now });
  const apiKeys = () => new ApiKeys(r.redis, { brand: 'service', kek: randomBytes(32) });

  async function setup(limit: number, spendWindow: 'day' | 'week' | 'month') {
    clock.now = SAT;
    const accountId = newId('acct');
    const m = metering();
    await m.topUp({ accountId, topUpId: newId('top'), amount: 1_000_000 });
    const { key } = await apiKeys().create(accountId, { name: 'tool', spendLimit: limit, spendWindow });
    expect(key).toMatchObject({ spendLimit: limit, spendWindow });
    return { accountId, keyId: key.id, m };
  }
  const spend = (m: Metering, accountId: string, keyId: string, holdId: string, cost: number) =>
    spendOnce(m, { accountId, keyId, holdId, cost, ttlMs: TTL }, chat(keyId));
  const ledgerClean = (accountId: string) => expectLedgerClean(r.redis, [accountId], 0);

  it('BILL-6 a daily budget refuses at its bound, says the day resets at midnight UTC, and passes again the next day', async () => {
    const { accountId, keyId, m } = await setup(1_000, 'day');
    expect(await spend(m, accountId, keyId, 'req_1', 600)).toMatchObject({ ok: true, held: 600 });
    // What is left is held, no more (the hold is lowered to the room, as the monthly limit did).
    expect(await spend(m, accountId, keyId, 'req_2', 900)).toMatchObject({
      ok: true,
      held: 400,
      keyLimit: { limit: 1_000, spent: 600, held: 0, window: 'day', resetsAt: Date.UTC(2026, 10, 29) },
    });
    const refused = await m.reserve({ accountId, holdId: 'req_3', min: 1, max: 10, ttlMs: TTL, keyId });
    expect(refused).toEqual({
      ok: false,
      available: 1_000_000 - 1_500,
      voided: { holds: 0, leases: 0 },
      keyLimit: {
        limit: 1_000,
        spent: 1_500,
        held: 0,
        window: 'day',
        resetsAt: Date.UTC(2026, 10, 29),
        source: 'key',
      },
      rateLimit: null,
    });
    clock.now = SUN;
    expect(await spend(m, accountId, keyId, 'req_4', 700)).toMatchObject({
      ok: true,
      held: 700,
      keyLimit: null,
    });
    const day = (ms: number) => keyWindowSpend(r.redis, accountId, [{ id: keyId, window: 'day' }], ms);
    expect(await day(SAT)).toEqual(new Map([[keyId, 1_500]]));
    expect(await day(SUN)).toEqual(new Map([[keyId, 700]]));
    await ledgerClean(accountId);
  });

  it('a weekly budget counts every day of the ISO week and resets on Monday; the month goes on counting', async () => {
    const { accountId, keyId, m } = await setup(1_000, 'week');
    await spend(m, accountId, keyId, 'req_sat', 500);
    clock.now = SUN;
    await spend(m, accountId, keyId, 'req_sun', 500);
    expect(await m.reserve({ accountId, holdId: 'req_x', min: 1, max: 1, ttlMs: TTL, keyId })).toMatchObject({
      ok: false,
      keyLimit: { limit: 1_000, spent: 1_000, window: 'week', resetsAt: MON },
    });
    clock.now = MON;
    expect(await spend(m, accountId, keyId, 'req_mon', 800)).toMatchObject({ ok: true, held: 800 });
    const spent = await apiKeys().windowSpend(accountId, [{ id: keyId, spendWindow: 'week' }], MON);
    expect(spent.get(keyId)).toBe(800);
    expect((await apiKeys().monthSpend(accountId, [keyId], MON)).get(keyId)).toBe(1_800);
    await ledgerClean(accountId);
  });

  it('a window changed mid-period counts what the key already spent in the new one; the limit removed, its window goes too', async () => {
    const { accountId, keyId, m } = await setup(10_000, 'month');
    await spend(m, accountId, keyId, 'req_1', 900);
    clock.now = SUN;
    await spend(m, accountId, keyId, 'req_2', 300);
    const keys = apiKeys();
    // A day of 1 000 has 700 left today (Sunday's 300 count; Saturday's 900 do not).
    expect((await keys.setSpendLimit(accountId, keyId, 1_000, 'day')).spendWindow).toBe('day');
    expect(
      await m.reserve({ accountId, holdId: 'req_3', min: 1, max: 5_000, ttlMs: TTL, keyId }),
    ).toMatchObject({
      ok: true,
      held: 700,
    });
    await m.release(accountId, 'req_3');
    // A week of 1 000 has nothing left (900 + 300 this week); the window stays when only the limit changes.
    await keys.setSpendLimit(accountId, keyId, 1_000, 'week');
    expect((await keys.setSpendLimit(accountId, keyId, 1_100)).spendWindow).toBe('week');
    expect(await m.reserve({ accountId, holdId: 'req_4', min: 1, max: 1, ttlMs: TTL, keyId })).toMatchObject({
      ok: false,
      keyLimit: { spent: 1_200, window: 'week' },
    });
    const cleared = await keys.setSpendLimit(accountId, keyId, null);
    expect(cleared).toMatchObject({ spendLimit: null, spendWindow: 'month' });
    await expect(keys.setSpendLimit(accountId, keyId, 5, 'fortnight' as 'day')).rejects.toMatchObject({
      code: 'invalid_request',
      param: 'spendWindow',
    });
    await ledgerClean(accountId);
  });

  it('BILL-4 a charge (video) past a daily budget is refused; charges, leased batches and refunds count in every period', async () => {
    const { accountId, keyId, m } = await setup(1_000, 'day');
    const charge = (id: string, cost: number) =>
      m.charge({
        accountId,
        chargeId: id,
        cost,
        usage: { keyId, model: 'Org/Video', kind: 'video', videoSeconds: 1 },
      });
    expect(await charge('c1', 800)).toMatchObject({ ok: true, charged: 800 });
    expect(await charge('c2', 300)).toMatchObject({
      ok: false,
      keyLimit: { limit: 1_000, spent: 800, window: 'day', resetsAt: Date.UTC(2026, 10, 29) },
    });
    await m.refund({
      accountId,
      refundId: 'r1',
      of: 'charge:c1',
      amount: 500,
      usage: { keyId, model: 'Org/Video', kind: 'video' },
    });
    expect(await charge('c3', 700)).toMatchObject({ ok: true, charged: 700 });
    // A lease's batch settles count in the same periods (a leased key has no limit, but its spend is kept).
    const { key: free } = await apiKeys().create(accountId, { name: 'free' });
    const leases = new LeaseMetering(r.redis, { now: () => clock.now });
    await leases.extendLease({ accountId, leaseId: 'lease_a', add: 5_000, den: 1, ttlMs: TTL });
    await leases.settleBatch({
      accountId,
      leaseId: 'lease_a',
      batchId: 'b1',
      ttlMs: TTL,
      records: [{ holdId: 'req_l1', cost: 250, carved: 250, usage: chat(free.id) }],
    });
    await leases.releaseLease({ accountId, leaseId: 'lease_a' });
    const day = await keyWindowSpend(
      r.redis,
      accountId,
      [
        { id: keyId, window: 'day' },
        { id: free.id, window: 'week' },
      ],
      SAT,
    );
    expect(day).toEqual(
      new Map([
        [keyId, 1_000],
        [free.id, 250],
      ]),
    );
    await ledgerClean(accountId);
  });
});
