// Credit leases on real Redis: extend / settleBatch / releaseLease, exactly-once per batch id,
// several replicas' leases plus direct reserves on one account (balance never below zero; balance,
// usage stream and hourly rollups agree to the nano), the sweeper voiding a dead replica's lease,
// and expiry judged by Redis time, never by a replica's clock.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../test/helpers/redis.ts';
import { newId } from '../ids.ts';
import type { Redis } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';
import { recomputeBalanceFromStream, usageRecords, usageReport } from '../usage/usage.ts';
import { LeaseMetering, type LeaseSettleRecord } from './leases.ts';
import { Metering } from './metering.ts';
import type { UsageRecord } from './script-args.ts';
import { sweepDueHolds } from './sweeper.ts';

const T0 = Date.UTC(2025, 0, 15, 10, 0, 0);
const usage = (keyId: string, req = ''): UsageRecord => ({
  keyId,
  model: 'Org/Chat-1',
  kind: 'chat',
  inputTokens: 10,
  cachedTokens: 0,
  outputTokens: 5,
  requestId: req,
});
const rec = (holdId: string, cost: number, keyId = 'k', carved = cost): LeaseSettleRecord => ({
  holdId,
  cost,
  carved,
  usage: usage(keyId, `req-${holdId}`),
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('credit leases', () => {
  let server: TestRedis;
  let redis: Redis;
  const clock = T0;
  let m: Metering;
  let l: LeaseMetering;

  beforeAll(async () => {
    server = await startRedis();
    redis = server.client();
    m = new Metering(redis, { now: () => clock });
    l = new LeaseMetering(redis, { now: () => clock });
  });
  afterAll(async () => server.stop());

  async function funded(amount: number): Promise<string> {
    const accountId = newId('acct');
    await m.topUp({ accountId, topUpId: newId('top'), amount });
    return accountId;
  }
  const rollupCost = async (a: string) =>
    (await usageReport(redis, { accountId: a, fromMs: 0, toMs: T0 + 100 * 3_600_000 })).reduce(
      (s, r) => s + r.cost,
      0,
    );

  it('extendLease grows by at most add, at most 1/den of the account, skips growth below min, refreshes the ttl', async () => {
    const a = await funded(8_000);
    const ext = (add: number, min = 0) =>
      l.extendLease({ accountId: a, leaseId: 'L', add, min, den: 8, ttlMs: 2_000 });
    expect(await ext(300)).toEqual({
      leaseHeld: 300,
      grown: 300,
      available: 7_700,
      voided: { holds: 0, leases: 0 },
      keyLimit: null,
    });
    // Cap: floor(8000 / 8) = 1000 in total.
    expect(await ext(5_000)).toEqual({
      leaseHeld: 1_000,
      grown: 700,
      available: 7_000,
      voided: { holds: 0, leases: 0 },
      keyLimit: null,
    });
    expect(await ext(5_000)).toEqual({
      leaseHeld: 1_000,
      grown: 0,
      available: 7_000,
      voided: { holds: 0, leases: 0 },
      keyLimit: null,
    });
    const b = await funded(800);
    expect(
      await l.extendLease({ accountId: b, leaseId: 'L', add: 500, min: 200, den: 8, ttlMs: 1_000 }),
    ).toEqual({ leaseHeld: 0, grown: 0, available: 800, voided: { holds: 0, leases: 0 }, keyLimit: null });
    expect(await m.balance(b)).toEqual({ balance: 800, held: 0, available: 800 });
    // Renewed half-way through its ttl, the lease outlives its first expiry (margins of 0.4 s and
    // 0.8 s either side of the check, for a loaded machine).
    await sleep(1_200);
    await ext(0); // renews
    await sleep(1_200);
    expect(await sweepDueHolds(redis)).toEqual([]);
    expect(await m.balance(a)).toEqual({ balance: 8_000, held: 1_000, available: 7_000 });
  });

  it('BILL-5 settleBatch charges each record from the lease with the same stream entry and rollups as settle', async () => {
    const a = await funded(10_000);
    await l.extendLease({ accountId: a, leaseId: 'L', add: 1_000, den: 2, ttlMs: 60_000 });
    const r = await l.settleBatch({
      accountId: a,
      leaseId: 'L',
      batchId: 'b1',
      ttlMs: 60_000,
      records: [rec('h1', 100, 'k1'), rec('h2', 250, 'k2'), rec('h3', 0, 'k1')],
    });
    expect(r).toEqual({
      leaseHeld: 650,
      balance: 9_650,
      duplicate: false,
      charged: [100, 250, 0],
      short: [0, 0, 0],
    });
    expect(await m.balance(a)).toEqual({ balance: 9_650, held: 650, available: 9_000 });
    const records = (await usageRecords(redis, a, { count: 10 })).filter((x) => x.type === 'charge');
    expect(records.map((x) => [x.opId, x.amount, x.keyId, x.requestId]).sort()).toEqual([
      ['settle:h1', 100, 'k1', 'req-h1'],
      ['settle:h2', 250, 'k2', 'req-h2'],
      ['settle:h3', 0, 'k1', 'req-h3'],
    ]);
    expect(await rollupCost(a)).toBe(350);
    // The batch's rollups are summed per key and model before they are written: same totals.
    const rows = await usageReport(redis, { accountId: a, fromMs: 0, toMs: T0 + 3_600_000 });
    const byKey = Object.fromEntries(rows.map((x) => [x.keyId, x]));
    expect(byKey.k1).toMatchObject({ requests: 2, cost: 100, inputTokens: 20, outputTokens: 10 });
    expect(byKey.k2).toMatchObject({ requests: 1, cost: 250, inputTokens: 10, outputTokens: 5 });
    expect(await recomputeBalanceFromStream(redis, a)).toBe(9_650);
    // One done key for the batch, none per record (a key per request would be kept for a day).
    const k = accountKeys(a);
    expect(await redis.exists(k.done('settle-batch:L:b1'))).toBe(1);
    expect(await redis.exists(k.done('settle:h1'))).toBe(0);
  });

  it('a record takes from the lease up to what it carved, the rest of its cost from the spare balance', async () => {
    const a = await funded(10_000);
    await l.extendLease({ accountId: a, leaseId: 'L', add: 300, den: 1, ttlMs: 60_000 });
    // x1 cost more than it carved (its hold was an estimate): 200 from the lease, 300 from the spare
    // balance. x2 carved 200 but only 100 is left in the lease: the rest from the spare balance too.
    const r = await l.settleBatch({
      accountId: a,
      leaseId: 'L',
      batchId: 'bx',
      ttlMs: 60_000,
      records: [rec('x1', 500, 'k', 200), rec('x2', 200), rec('x3', 50)],
    });
    expect(r.charged).toEqual([500, 200, 50]);
    expect(r.short).toEqual([0, 0, 0]);
    expect(r.leaseHeld).toBe(0);
    expect(await redis.hexists(accountKeys(a).holds, 'L')).toBe(0); // a lease at zero is dropped
    expect(await m.balance(a)).toEqual({ balance: 9_250, held: 0, available: 9_250 });
    const entries = (await usageRecords(redis, a, { count: 3 })).reverse();
    expect(entries.map((e) => [e.amount, e.cost, e.held, e.source])).toEqual([
      [500, 500, 200, 'lease'],
      [200, 200, 200, 'lease'],
      [50, 50, 50, 'lease'],
    ]);
    expect(await recomputeBalanceFromStream(redis, a)).toBe(9_250);
  });

  it('what the spare balance cannot cover is recorded as short, never taken from other holds', async () => {
    const a = await funded(1_000);
    await l.extendLease({ accountId: a, leaseId: 'L', add: 200, den: 1, ttlMs: 60_000 });
    await m.reserve({ accountId: a, holdId: 'other', min: 700, max: 700, ttlMs: 60_000 });
    const r = await l.settleBatch({
      accountId: a,
      leaseId: 'L',
      batchId: 'short',
      ttlMs: 60_000,
      records: [rec('s1', 450, 'k', 200)],
    });
    // 200 from the lease, 100 spare (1000 − 200 − 700), 150 uncollected; the other hold is untouched.
    expect(r).toMatchObject({ charged: [300], short: [150], leaseHeld: 0 });
    expect(await m.balance(a)).toEqual({ balance: 700, held: 700, available: 0 });
    const [entry] = await usageRecords(redis, a, { count: 1 });
    expect(entry).toMatchObject({ amount: 300, cost: 450, short: 150 });
  });

  it('exactly once under retries: a batch sent again with its id charges nothing and answers as the first time', async () => {
    const a = await funded(10_000);
    await l.extendLease({ accountId: a, leaseId: 'L', add: 2_000, den: 1, ttlMs: 60_000 });
    const batch = { accountId: a, leaseId: 'L', batchId: 'once', ttlMs: 60_000 };
    const first = await l.settleBatch({ ...batch, records: [rec('r1', 100), rec('r2', 200)] });
    expect(first).toEqual({
      leaseHeld: 1_700,
      balance: 9_700,
      duplicate: false,
      charged: [100, 200],
      short: [0, 0],
    });
    const again = await l.settleBatch({ ...batch, records: [rec('r1', 100), rec('r2', 200)] });
    expect(again).toEqual({
      leaseHeld: 1_700,
      balance: 9_700,
      duplicate: true,
      charged: [100, 200],
      short: [0, 0],
    });
    // The next batch (a new id) charges as usual.
    const next = await l.settleBatch({ ...batch, batchId: 'next', records: [rec('r3', 300)] });
    expect(next).toEqual({ leaseHeld: 1_400, balance: 9_400, duplicate: false, charged: [300], short: [0] });
    expect(await m.balance(a)).toEqual({ balance: 9_400, held: 1_400, available: 8_000 });
    expect((await usageRecords(redis, a, { count: 10 })).filter((x) => x.type === 'charge')).toHaveLength(3);
    expect(await rollupCost(a)).toBe(600);
    // An empty batch is settled once too.
    const empty = { ...batch, batchId: 'empty', records: [] };
    expect(await l.settleBatch(empty)).toMatchObject({ duplicate: false, charged: [] });
    expect(await l.settleBatch(empty)).toMatchObject({ duplicate: true, charged: [] });
  });

  it('BILL-5 perRecord: a record is charged once by its hold id, whichever batch carries it; a batch resent answers from its own key', async () => {
    const a = await funded(10_000);
    await l.extendLease({ accountId: a, leaseId: 'L', add: 2_000, den: 1, ttlMs: 60_000 });
    const batch = { accountId: a, leaseId: 'L', ttlMs: 60_000, perRecord: true };
    // Sent while the journal's disk was full: its line may be lost, its records' lines not.
    const first = await l.settleBatch({
      ...batch,
      batchId: 'full',
      records: [rec('p1', 100), rec('p2', 200)],
    });
    expect(first).toMatchObject({ duplicate: false, charged: [100, 200], leaseHeld: 1_700 });
    // A later start finds p2's line alone and sends it in a new batch, with a record never sent.
    const replayed = await l.settleBatch({
      ...batch,
      batchId: 'replay-1',
      records: [rec('p2', 200), rec('p3', 300)],
    });
    expect(replayed).toMatchObject({
      duplicate: false,
      charged: [200, 300],
      short: [0, 0],
      leaseHeld: 1_400,
    });
    // The first batch's line did land: it is resent under its own id and answered from its key.
    const again = await l.settleBatch({ ...batch, batchId: 'full', records: [rec('p1', 100)] });
    expect(again).toMatchObject({ duplicate: true, charged: [100, 200] });
    // The record's key is settle.lua's: an own-hold settle of the same hold id is a duplicate too.
    const own = await m.settle({ accountId: a, holdId: 'p3', cost: 300, usage: usage('k', 'req-p3') });
    expect(own).toMatchObject({ duplicate: true, charged: 300 });
    expect(await m.balance(a)).toEqual({ balance: 9_400, held: 1_400, available: 8_000 });
    const charges = (await usageRecords(redis, a, { count: 10 })).filter((x) => x.type === 'charge');
    expect(charges.map((c) => c.amount).sort()).toEqual([100, 200, 300]);
    expect(await rollupCost(a)).toBe(600);
    expect(await recomputeBalanceFromStream(redis, a)).toBe(9_400);
  });

  it('releaseLease keeps what is still carved and returns the rest', async () => {
    const a = await funded(1_000);
    await l.extendLease({ accountId: a, leaseId: 'L', add: 400, den: 1, ttlMs: 60_000 });
    expect(await l.releaseLease({ accountId: a, leaseId: 'L', keep: 150 })).toEqual({
      released: 250,
      leaseHeld: 150,
    });
    expect(await l.releaseLease({ accountId: a, leaseId: 'L', keep: 500 })).toEqual({
      released: 0,
      leaseHeld: 150,
    });
    expect(await l.releaseLease({ accountId: a, leaseId: 'L' })).toEqual({ released: 150, leaseHeld: 0 });
    expect(await l.releaseLease({ accountId: a, leaseId: 'L' })).toEqual({ released: 0, leaseHeld: 0 });
    expect(await m.balance(a)).toEqual({ balance: 1_000, held: 0, available: 1_000 });
  });

  it('the sweeper voids a dead replica lease; a late batch against it is still charged, from the spare balance', async () => {
    const a = await funded(1_000);
    await l.extendLease({ accountId: a, leaseId: 'lease_dead', add: 500, den: 1, ttlMs: 200 });
    await sleep(250);
    // (Other tests' short leases may come due in the same sweep on a slow machine: only this account's.)
    const swept = (await sweepDueHolds(redis)).filter((v) => v.accountId === a);
    expect(swept).toMatchObject([{ accountId: a, holdId: 'lease_dead', amount: 500 }]);
    expect(await m.balance(a)).toEqual({ balance: 1_000, held: 0, available: 1_000 });
    const r = await l.settleBatch({
      accountId: a,
      leaseId: 'lease_dead',
      batchId: 'late',
      ttlMs: 1_000,
      records: [rec('late', 100)],
    });
    expect(r).toMatchObject({ duplicate: false, charged: [100], short: [0] });
    expect(await m.balance(a)).toEqual({ balance: 900, held: 0, available: 900 });
    const [charge, voided] = await usageRecords(redis, a, { count: 2 });
    expect(voided).toMatchObject({
      type: 'void',
      reason: 'lease_expired',
      leaseId: 'lease_dead',
      amount: 500,
    });
    expect(charge).toMatchObject({ type: 'charge', amount: 100, source: 'none' });
    expect(await recomputeBalanceFromStream(redis, a)).toBe(900);
  });

  it('expiry is Redis time: a replica whose clock runs five minutes fast never voids another replica’s live lease', async () => {
    const a = await funded(10_000);
    const fast = new LeaseMetering(server.client(), { now: () => Date.now() + 5 * 60_000 });
    const fastHolds = new Metering(server.client(), { now: () => Date.now() + 5 * 60_000 });
    await l.extendLease({ accountId: a, leaseId: 'lease_slow', add: 1_000, den: 2, ttlMs: 30_000 });
    // The fast replica's own scripts void expired holds on their way: the live lease is not one.
    await fast.extendLease({ accountId: a, leaseId: 'lease_fast', add: 1_000, den: 2, ttlMs: 30_000 });
    expect(
      (await fastHolds.reserve({ accountId: a, holdId: 'h', min: 1, max: 1, ttlMs: 30_000 })).voided,
    ).toEqual({
      holds: 0,
      leases: 0,
    });
    expect(await redis.hget(accountKeys(a).holds, 'lease_slow')).toBe('1000');
    // Both leases expire at Redis time + ttl, whatever the replicas' clocks say.
    const [sec] = await redis.time();
    for (const id of ['lease_slow', 'lease_fast']) {
      const at = Number(await redis.zscore(accountKeys(a).holdExpiry, id));
      expect(Math.abs(at - (Number(sec) * 1000 + 30_000))).toBeLessThan(5_000);
    }
  });

  it('BILL-6 several replicas with leases plus direct reserves: never below zero, ledger = stream = rollups', async () => {
    const credit = 200_000;
    const a = await funded(credit);
    let lowest = Number.POSITIVE_INFINITY;
    const watch = async () => {
      const b = await m.balance(a);
      lowest = Math.min(lowest, b.balance, b.available);
    };
    // A replica: its own connection, lease and local accounting (size known from replies only).
    const replica = async (id: number) => {
      const conn = server.client();
      const lm = new LeaseMetering(conn, { now: () => clock });
      const leaseId = `lease-${id}`;
      let size = 0;
      for (let round = 0; round < 25; round++) {
        const e = await lm.extendLease({ accountId: a, leaseId, add: 20_000, min: 0, den: 8, ttlMs: 60_000 });
        size = e.leaseHeld;
        const records: LeaseSettleRecord[] = [];
        let free = size;
        for (let i = 0; i < 8; i++) {
          const hold = 700 + ((id * 31 + round * 7 + i) % 500);
          if (free < hold) break;
          free -= hold;
          const cost = (hold * ((i + round) % 4)) / 4;
          records.push(rec(`${leaseId}-${round}-${i}`, Math.floor(cost)));
        }
        if (records.length > 0) {
          const batchId = `${leaseId}-${round}`;
          const s = await lm.settleBatch({ accountId: a, leaseId, batchId, ttlMs: 60_000, records });
          expect(s.duplicate).toBe(false);
          size = s.leaseHeld;
        }
        await watch();
      }
      await lm.releaseLease({ accountId: a, leaseId });
      conn.disconnect();
    };
    const direct = async (id: number) => {
      for (let i = 0; i < 40; i++) {
        const holdId = `direct-${id}-${i}`;
        const r = await m.reserve({ accountId: a, holdId, min: 500, max: 3_000, ttlMs: 60_000 });
        if (r.ok)
          await m.settle({ accountId: a, holdId, cost: Math.min(r.held, 1_000 + i * 50), usage: usage('d') });
        await watch();
      }
    };
    await Promise.all([replica(1), replica(2), replica(3), replica(4), direct(1), direct(2)]);
    const b = await m.balance(a);
    expect(lowest).toBeGreaterThanOrEqual(0);
    expect(b.held).toBe(0);
    expect(b.balance).toBeGreaterThanOrEqual(0);
    const charges = (await usageRecords(redis, a, { count: 10_000 })).filter((x) => x.type === 'charge');
    const charged = charges.reduce((s, x) => s + x.amount, 0);
    expect(charged).toBeGreaterThan(credit / 2); // the run really drained the account
    expect(b.balance).toBe(credit - charged);
    expect(await recomputeBalanceFromStream(redis, a)).toBe(b.balance);
    expect(await rollupCost(a)).toBe(charged);
  });
  it('BILL-6 a lease held for a key with a spend limit (a batch’s) is bounded by the key’s room and filed as its hold until billed, released or voided', async () => {
    const a = await funded(10_000);
    const k = accountKeys(a);
    await redis.hset(k.key('kb'), 'spendLimit', '600', 'spendWindow', 'day');
    const keyFields = async () =>
      Object.fromEntries(
        Object.entries(await redis.hgetall(k.keySpend)).filter(
          ([f]) => !f.startsWith('spent:') && !f.startsWith('since:'),
        ),
      );
    const grow = (leaseId: string, add: number, keyId = 'kb', ttlMs = 60_000) =>
      l.extendLease({ accountId: a, leaseId, add, min: add, den: 1, ttlMs, keyId });

    expect(await grow('batch:x', 500)).toMatchObject({ grown: 500, keyLimit: null });
    expect(await keyFields()).toEqual({ 'h:batch:x': 'kb', 'held:kb': '500' });
    // The key has 100 left: a second batch of 200 is refused for the key's limit, not the balance.
    const refused = await grow('batch:y', 200);
    expect(refused).toMatchObject({ grown: 0, keyLimit: { limit: 600, spent: 0, held: 500, window: 'day' } });
    // A key without a limit is not filed.
    await redis.hset(k.key('free'), 'name', 'free');
    expect(await grow('batch:free', 300, 'free')).toMatchObject({ grown: 300, keyLimit: null });
    await l.releaseLease({ accountId: a, leaseId: 'batch:free' });

    // A line billed from the lease moves its cost from the key's held to its spent.
    await l.settleBatch({
      accountId: a,
      leaseId: 'batch:x',
      batchId: 'line:0',
      ttlMs: 60_000,
      records: [rec('x0', 100, 'kb')],
    });
    expect(await keyFields()).toEqual({ 'h:batch:x': 'kb', 'held:kb': '400' });
    await l.releaseLease({ accountId: a, leaseId: 'batch:x', keep: 150 });
    expect(await keyFields()).toEqual({ 'h:batch:x': 'kb', 'held:kb': '150' });
    await l.releaseLease({ accountId: a, leaseId: 'batch:x' });
    expect(await keyFields()).toEqual({});

    // A batch's lease that lapses (its runners died) gives the key's room back as it is voided.
    await grow('batch:z', 300, 'kb', 200);
    await sleep(250);
    await sweepDueHolds(redis);
    expect(await keyFields()).toEqual({});
    expect(await m.balance(a)).toEqual({ balance: 9_900, held: 0, available: 9_900 });
  });
});
