// A key's monthly spend limit, held in the same scripts as the balance (issue 14): a reserve or a
// video charge is refused, or a hold lowered, by what the key may still spend this month (limit −
// spent − its open holds), while the balance is ample; every charging script counts the key's
// spend of the month (settle, settleBatch, charge, refund), every way a hold ends gives its share
// back (settle, release, void), and concurrency never takes a key past its limit. Real Redis; every
// test ends with the ledger check, which also proves the keys' spend against the usage stream.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { newId } from '../ids.ts';
import { ApiKeys } from '../keys/index.ts';
import { checkAccountLedger } from '../ledger/ledger.ts';
import { accountKeys } from '../redis/keyspace.ts';
import { keyMonthSpend, spendMonth } from './key-spend.ts';
import { LeaseMetering } from './leases.ts';
import { Metering } from './metering.ts';
import type { UsageRecord } from './script-args.ts';
import { sweepDueHolds } from './sweeper.ts';

const JAN = Date.UTC(2025, 0, 31, 23, 0, 0);
const FEB = Date.UTC(2025, 1, 1, 0, 30, 0);
const TTL = 60_000;
const chat = (keyId: string | null, requestId?: string): UsageRecord => ({
  keyId,
  model: 'Org/Chat',
  kind: 'chat',
  inputTokens: 3,
  outputTokens: 2,
  ...(requestId === undefined ? {} : { requestId }),
});

describe('key spend limits', () => {
  const r = redisForFile();
  const clock = { now: JAN };
  const metering = () => new Metering(r.redis, { now: () => clock.now });
  const apiKeys = () => new ApiKeys(r.redis, { brand: 'service', kek: randomBytes(32) });

  /** A funded account with a key of that limit (nano; null = none). */
  async function setup(balance: number, spendLimit: number | null) {
    clock.now = JAN;
    const accountId = newId('acct');
    const m = metering();
    await m.topUp({ accountId, topUpId: newId('top'), amount: balance });
    const { key } = await apiKeys().create(accountId, { name: 'tool', spendLimit });
    return { accountId, keyId: key.id, m };
  }
  const held = async (accountId: string, keyId: string) =>
    Number((await r.redis.hget(accountKeys(accountId).keySpend, `held:${keyId}`)) ?? 0);
  const spentNow = async (accountId: string, keyId: string) =>
    (await keyMonthSpend(r.redis, accountId, [keyId], clock.now)).get(keyId);
  async function expectLedgerClean(accountId: string) {
    expect((await checkAccountLedger(r.redis, accountId, { toleranceMs: 0 })).problems).toEqual([]);
  }

  it('BILL-6 a reserve the key limit cannot cover is refused with its own answer while the balance is ample; another key goes on', async () => {
    const { accountId, keyId, m } = await setup(1_000_000, 500);
    const refused = await m.reserve({ accountId, holdId: 'req_1', min: 600, max: 900, ttlMs: TTL, keyId });
    expect(refused).toEqual({
      ok: false,
      available: 1_000_000,
      voided: { holds: 0, leases: 0 },
      keyLimit: {
        limit: 500,
        spent: 0,
        held: 0,
        window: 'month',
        resetsAt: Date.UTC(2025, 1, 1),
        source: 'key',
      },
      rateLimit: null,
    });
    expect(await m.balance(accountId)).toEqual({ balance: 1_000_000, held: 0, available: 1_000_000 });
    const { key: other } = await apiKeys().create(accountId, { name: 'other' });
    const ok = await m.reserve({
      accountId,
      holdId: 'req_2',
      min: 600,
      max: 900,
      ttlMs: TTL,
      keyId: other.id,
    });
    expect(ok).toMatchObject({ ok: true, held: 900, keyLimit: null });
    await m.settle({ accountId, holdId: 'req_2', cost: 700, usage: chat(other.id) });
    expect(await spentNow(accountId, other.id)).toBe(700);
    // When both fall short, the balance is named: topping up is needed whatever the key may spend.
    const broke = await m.reserve({
      accountId,
      holdId: 'req_3',
      min: 2_000_000,
      max: 2_000_000,
      ttlMs: TTL,
      keyId,
    });
    expect(broke).toMatchObject({ ok: false, keyLimit: null });
    await expectLedgerClean(accountId);
  });

  it('BILL-6 a hold is lowered to what the key may still spend, counts against it until it ends, and a retried reserve counts once', async () => {
    const { accountId, keyId, m } = await setup(1_000_000, 1_000);
    await m.reserve({ accountId, holdId: 'req_a', min: 100, max: 300, ttlMs: TTL, keyId });
    await m.settle({ accountId, holdId: 'req_a', cost: 300, usage: chat(keyId) });
    const lowered = await m.reserve({ accountId, holdId: 'req_b', min: 100, max: 5_000, ttlMs: TTL, keyId });
    expect(lowered).toMatchObject({
      ok: true,
      held: 700,
      available: 1_000_000 - 300 - 700,
      keyLimit: { limit: 1_000, spent: 300, held: 0 },
    });
    const again = await m.reserve({ accountId, holdId: 'req_b', min: 100, max: 5_000, ttlMs: TTL, keyId });
    expect(again).toMatchObject({ ok: true, held: 700 });
    expect(await held(accountId, keyId)).toBe(700);
    expect(await m.reserve({ accountId, holdId: 'req_c', min: 1, max: 10, ttlMs: TTL, keyId })).toMatchObject(
      {
        ok: false,
        keyLimit: { limit: 1_000, spent: 300, held: 700 },
      },
    );
    await expectLedgerClean(accountId);
    // Settled below its hold: the rest is the key's again.
    await m.settle({ accountId, holdId: 'req_b', cost: 200, usage: chat(keyId) });
    expect(await held(accountId, keyId)).toBe(0);
    expect(await r.redis.hexists(accountKeys(accountId).keySpend, 'h:req_b')).toBe(0);
    expect(await spentNow(accountId, keyId)).toBe(500);
    expect(
      await m.reserve({ accountId, holdId: 'req_d', min: 1, max: 5_000, ttlMs: TTL, keyId }),
    ).toMatchObject({
      ok: true,
      held: 500,
    });
    await expectLedgerClean(accountId);
  });

  it('a release and a void give the hold back to the key, by the sweeper and by a reserve on its way', async () => {
    const { accountId, keyId, m } = await setup(1_000_000, 1_000);
    await m.reserve({ accountId, holdId: 'req_r', min: 1, max: 1_000, ttlMs: TTL, keyId });
    expect(await held(accountId, keyId)).toBe(1_000);
    expect(await m.release(accountId, 'req_r')).toBe(1_000);
    expect(await held(accountId, keyId)).toBe(0);

    // A hold whose owner died: the sweeper voids it, and the key may spend its share again.
    await m.reserve({ accountId, holdId: 'req_dead', min: 1, max: 600, ttlMs: 500, keyId });
    expect(
      await m.reserve({ accountId, holdId: 'req_x', min: 500, max: 500, ttlMs: TTL, keyId }),
    ).toMatchObject({
      ok: false,
      keyLimit: { held: 600 },
    });
    await new Promise((res) => setTimeout(res, 550));
    const voided = await sweepDueHolds(r.redis);
    expect(voided).toContainEqual({ accountId, holdId: 'req_dead', amount: 600, reason: 'hold_expired' });
    expect(await held(accountId, keyId)).toBe(0);
    await expectLedgerClean(accountId);

    // Voided by the key's next reserve instead (no sweeper has come by): that reserve sees the room.
    await m.reserve({ accountId, holdId: 'req_dead2', min: 1, max: 1_000, ttlMs: 100, keyId });
    await new Promise((res) => setTimeout(res, 150));
    expect(
      await m.reserve({ accountId, holdId: 'req_y', min: 1_000, max: 1_000, ttlMs: TTL, keyId }),
    ).toMatchObject({
      ok: true,
      held: 1_000,
      voided: { holds: 1, leases: 0 },
    });
    await m.release(accountId, 'req_y');
    await sweepDueHolds(r.redis); // the index entry of req_dead2
    await expectLedgerClean(accountId);

    // And by a lease extension on its way (the expired holds of an account are voided by all three).
    await m.reserve({ accountId, holdId: 'req_dead3', min: 1, max: 400, ttlMs: 100, keyId });
    await new Promise((res) => setTimeout(res, 150));
    const leases = new LeaseMetering(r.redis, { now: () => clock.now });
    const ext = await leases.extendLease({ accountId, leaseId: 'lease_1', add: 1_000, den: 8, ttlMs: TTL });
    expect(ext.voided).toEqual({ holds: 1, leases: 0 });
    expect(await held(accountId, keyId)).toBe(0);
    await leases.releaseLease({ accountId, leaseId: 'lease_1' });
    await sweepDueHolds(r.redis);
    await expectLedgerClean(accountId);
  });

  it('the month rolls over by the report clock: February starts at zero, January keeps its figure', async () => {
    const { accountId, keyId, m } = await setup(1_000_000, 1_000);
    await m.reserve({ accountId, holdId: 'req_jan', min: 1, max: 1_000, ttlMs: TTL, keyId });
    await m.settle({ accountId, holdId: 'req_jan', cost: 1_000, usage: chat(keyId) });
    expect(
      await m.reserve({ accountId, holdId: 'req_late', min: 1, max: 1, ttlMs: TTL, keyId }),
    ).toMatchObject({
      ok: false,
      keyLimit: { limit: 1_000, spent: 1_000, held: 0 },
    });
    clock.now = FEB;
    expect(spendMonth(JAN)).toBe('202501');
    expect(spendMonth(FEB)).toBe('202502');
    expect(
      await m.reserve({ accountId, holdId: 'req_feb', min: 1, max: 1_000, ttlMs: TTL, keyId }),
    ).toMatchObject({
      ok: true,
      held: 1_000,
      keyLimit: null,
    });
    await m.settle({ accountId, holdId: 'req_feb', cost: 250, usage: chat(keyId) });
    expect(await keyMonthSpend(r.redis, accountId, [keyId], JAN)).toEqual(new Map([[keyId, 1_000]]));
    expect(await keyMonthSpend(r.redis, accountId, [keyId], FEB)).toEqual(new Map([[keyId, 250]]));
    await expectLedgerClean(accountId);
  });

  it("every charging script counts the key's month spend: settle, settleBatch (summed per key), charge, refund", async () => {
    const { accountId, keyId, m } = await setup(1_000_000, null);
    const { key: b } = await apiKeys().create(accountId, { name: 'b' });
    await m.reserve({ accountId, holdId: 'req_s', min: 1, max: 100, ttlMs: TTL, keyId });
    await m.settle({ accountId, holdId: 'req_s', cost: 100, usage: chat(keyId, 'req_s') });
    // A settle of a hold that is gone (voided) still counts what it charged.
    await m.settle({ accountId, holdId: 'req_gone', cost: 40, usage: chat(keyId, 'req_gone') });
    const leases = new LeaseMetering(r.redis, { now: () => clock.now });
    await leases.extendLease({ accountId, leaseId: 'lease_b', add: 10_000, den: 1, ttlMs: TTL });
    const records = [
      { holdId: 'l1', cost: 10, carved: 50, usage: chat(keyId) },
      { holdId: 'l2', cost: 20, carved: 50, usage: chat(b.id) },
      { holdId: 'l3', cost: 30, carved: 50, usage: chat(keyId) },
      { holdId: 'l4', cost: 0, carved: 50, usage: chat(b.id) },
      { holdId: 'l5', cost: 5, carved: 50, usage: chat(null) },
    ];
    const batch = { accountId, leaseId: 'lease_b', batchId: '1', ttlMs: TTL, records };
    await leases.settleBatch(batch);
    await leases.settleBatch(batch); // sent again (a lost reply): counted once
    await m.charge({
      accountId,
      chargeId: 'vid',
      cost: 500,
      usage: { keyId: b.id, model: 'V', kind: 'video' },
    });
    await m.refund({
      accountId,
      refundId: 'vid-back',
      of: 'charge:vid',
      amount: 200,
      usage: { keyId: b.id, model: 'V', kind: 'video' },
    });
    expect(await keyMonthSpend(r.redis, accountId, [keyId, b.id, 'key_never'], clock.now)).toEqual(
      new Map([
        [keyId, 100 + 40 + 10 + 30],
        [b.id, 20 + 500 - 200],
        ['key_never', 0],
      ]),
    );
    // Refunded in the next month: it lowers that month's spend, as it lowers that month's rollups.
    clock.now = FEB;
    await m.refund({
      accountId,
      refundId: 'vid-back-2',
      of: 'charge:vid',
      amount: 100,
      usage: { keyId: b.id, model: 'V', kind: 'video' },
    });
    expect(await spentNow(accountId, b.id)).toBe(-100);
    await leases.releaseLease({ accountId, leaseId: 'lease_b' });
    await expectLedgerClean(accountId);
  });

  it('BILL-4 a video charge the key limit cannot cover is refused and records nothing; one it covers counts', async () => {
    const { accountId, keyId, m } = await setup(1_000_000, 1_000);
    const usage: UsageRecord = { keyId, model: 'V', kind: 'video', videoSeconds: 4 };
    const k = accountKeys(accountId);
    const record = { key: k.video('vid_1'), index: k.videos, id: 'vid_1', fields: { id: 'vid_1' } };
    const entries = await r.redis.xlen(k.usage);
    expect(await m.charge({ accountId, chargeId: 'vid_1', cost: 1_001, usage, record })).toEqual({
      ok: false,
      charged: 0,
      balance: 1_000_000,
      duplicate: false,
      keyLimit: {
        limit: 1_000,
        spent: 0,
        held: 0,
        window: 'month',
        resetsAt: Date.UTC(2025, 1, 1),
        source: 'key',
      },
    });
    expect(await r.redis.xlen(k.usage)).toBe(entries);
    expect(await r.redis.exists(k.video('vid_1'), k.done('charge:vid_1'))).toBe(0);
    expect(await spentNow(accountId, keyId)).toBe(0);
    // Open holds of the key count too.
    await m.reserve({ accountId, holdId: 'req_h', min: 1, max: 300, ttlMs: TTL, keyId });
    expect(await m.charge({ accountId, chargeId: 'vid_1', cost: 800, usage, record })).toMatchObject({
      ok: false,
      keyLimit: { held: 300 },
    });
    expect(await m.charge({ accountId, chargeId: 'vid_1', cost: 700, usage, record })).toMatchObject({
      ok: true,
      charged: 700,
      keyLimit: null,
    });
    expect(await r.redis.hget(k.video('vid_1'), 'id')).toBe('vid_1');
    expect(await spentNow(accountId, keyId)).toBe(700);
    await m.release(accountId, 'req_h');
    await expectLedgerClean(accountId);
  });

  it('a limit set mid-month counts what the key spent earlier that month; raised or removed, the key may spend at once', async () => {
    const { accountId, keyId, m } = await setup(1_000_000, null);
    const keys = apiKeys();
    await m.reserve({ accountId, holdId: 'req_1', min: 1, max: 800, ttlMs: TTL, keyId });
    await m.settle({ accountId, holdId: 'req_1', cost: 800, usage: chat(keyId) });
    expect((await keys.setSpendLimit(accountId, keyId, 1_000)).spendLimit).toBe(1_000);
    expect(
      await m.reserve({ accountId, holdId: 'req_2', min: 300, max: 500, ttlMs: TTL, keyId }),
    ).toMatchObject({
      ok: false,
      keyLimit: { limit: 1_000, spent: 800, held: 0 },
    });
    expect(
      await m.reserve({ accountId, holdId: 'req_3', min: 100, max: 500, ttlMs: TTL, keyId }),
    ).toMatchObject({
      ok: true,
      held: 200,
    });
    await keys.setSpendLimit(accountId, keyId, 2_000);
    expect(
      await m.reserve({ accountId, holdId: 'req_4', min: 100, max: 5_000, ttlMs: TTL, keyId }),
    ).toMatchObject({
      ok: true,
      held: 1_000,
    });
    // Removed while the key has holds open: they still end cleanly, and nothing limits the key.
    await keys.setSpendLimit(accountId, keyId, null);
    expect(
      await m.reserve({ accountId, holdId: 'req_5', min: 1, max: 5_000, ttlMs: TTL, keyId }),
    ).toMatchObject({
      ok: true,
      held: 5_000,
      keyLimit: null,
    });
    await m.settle({ accountId, holdId: 'req_3', cost: 150, usage: chat(keyId) });
    await m.release(accountId, 'req_4');
    await m.release(accountId, 'req_5');
    expect(await held(accountId, keyId)).toBe(0);
    await expectLedgerClean(accountId);
  });

  it('BILL-5 a call that cost more than its hold is charged in full: the spend may pass the limit by that much, and then nothing more is held', async () => {
    const { accountId, keyId, m } = await setup(1_000_000, 1_000);
    await m.reserve({ accountId, holdId: 'req_1', min: 100, max: 1_000, ttlMs: TTL, keyId });
    expect(await m.settle({ accountId, holdId: 'req_1', cost: 1_300, usage: chat(keyId) })).toMatchObject({
      charged: 1_300,
      short: 0,
    });
    expect(await spentNow(accountId, keyId)).toBe(1_300);
    expect(
      await m.reserve({ accountId, holdId: 'req_2', min: 0, max: 100, ttlMs: TTL, keyId }),
    ).toMatchObject({
      ok: false,
      keyLimit: { limit: 1_000, spent: 1_300 },
    });
    await expectLedgerClean(accountId);
  });

  it('concurrent reserves and settles never take a key past its limit', async () => {
    const LIMIT = 50_000;
    const { accountId, keyId, m } = await setup(10_000_000, LIMIT);
    const { key: free } = await apiKeys().create(accountId, { name: 'unlimited' });
    let peak = 0;
    const watch = async () => {
      const s = await r.redis.hmget(
        accountKeys(accountId).keySpend,
        `spent:${keyId}:${spendMonth(clock.now)}`,
        `held:${keyId}`,
      );
      peak = Math.max(peak, Number(s[0] ?? 0) + Number(s[1] ?? 0));
    };
    const call = async (i: number) => {
      const holdId = `req_${i}`;
      const forKey = i % 5 === 0 ? free.id : keyId;
      const res = await m.reserve({ accountId, holdId, min: 500, max: 3_000, ttlMs: TTL, keyId: forKey });
      await watch();
      if (!res.ok) return res.keyLimit === null ? 'balance' : 'key';
      // Charged at most what it held, as the proxy bounds a call's output by its hold.
      const cost = Math.floor(res.held * ((i % 7) / 7));
      if (i % 11 === 0) await m.release(accountId, holdId);
      else await m.settle({ accountId, holdId, cost, usage: chat(forKey) });
      await watch();
      return forKey === keyId ? 'ran' : 'free';
    };
    const done = await Promise.all(Array.from({ length: 300 }, (_, i) => call(i)));
    const count = (what: string) => done.filter((d) => d === what).length;
    // The limit was reached and refused calls (it was what bound them, not the balance), the
    // limited key still ran calls, and the other key of the account ran every one of its calls.
    expect(count('key')).toBeGreaterThan(0);
    expect(count('ran')).toBeGreaterThan(15);
    expect(count('free')).toBe(60);
    expect(count('balance')).toBe(0);
    expect(peak).toBeLessThanOrEqual(LIMIT);
    expect(peak).toBeGreaterThan(LIMIT - 500);
    expect(await spentNow(accountId, keyId)).toBeLessThanOrEqual(LIMIT);
    expect(await held(accountId, keyId)).toBe(0);
    await expectLedgerClean(accountId);
  });
});
