// The ledger check finds every kind of difference it promises to (and none on a clean ledger):
// a balance written around the scripts, a running balance that breaks, held that is not the sum of
// the holds, a hold stranded past its expiry, a hold the sweeper cannot find, a refund beyond its
// charge, keys' spend that does not add up. ledgerOfRequest finds one call's entries.
import { describe, expect, it } from 'vitest';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { Accounts } from '../accounts/accounts.ts';
import { spendMonth, spendPeriod } from '../billing/key-spend.ts';
import { LeaseMetering } from '../billing/leases.ts';
import { Metering } from '../billing/metering.ts';
import { accountKeys, dueMember, globalKeys } from '../redis/keyspace.ts';
import { accountSpendCounted, checkAccountLedger, checkLedger, ledgerOfRequest } from './ledger.ts';

const chat = (requestId: string) => ({
  keyId: 'key_1',
  model: 'Org/Chat',
  kind: 'chat' as const,
  inputTokens: 3,
  outputTokens: 2,
  requestId,
});

describe('ledger check', () => {
  const r = redisForFile();

  async function busyAccount() {
    const m = new Metering(r.redis);
    const a = await new Accounts(r.redis).create({ name: 'ledger', country: 'US' });
    await m.topUp({ accountId: a.id, topUpId: 't1', amount: 10_000 });
    await m.reserve({ accountId: a.id, holdId: 'req_a', min: 100, max: 500, ttlMs: 60_000 });
    await m.settle({ accountId: a.id, holdId: 'req_a', cost: 300, usage: chat('req_a') });
    await m.reserve({ accountId: a.id, holdId: 'req_open', min: 100, max: 200, ttlMs: 60_000 });
    await new LeaseMetering(r.redis).extendLease({
      accountId: a.id,
      leaseId: 'lease_x',
      add: 1_000,
      den: 2,
      ttlMs: 60_000,
    });
    await m.charge({
      accountId: a.id,
      chargeId: 'vid',
      cost: 700,
      usage: { keyId: null, model: 'V', kind: 'video' },
    });
    await m.refund({
      accountId: a.id,
      refundId: 'back',
      of: 'charge:vid',
      amount: 200,
      usage: { keyId: null, model: 'V', kind: 'video' },
    });
    return { accountId: a.id, m };
  }

  it('a ledger written by the scripts alone is clean, held counted from its open holds and leases', async () => {
    const { accountId } = await busyAccount();
    const l = await checkAccountLedger(r.redis, accountId, { toleranceMs: 0 });
    expect(l.problems).toEqual([]);
    expect(l).toMatchObject({ balance: 10_000 - 300 - 700 + 200, held: 1_200, entries: 4 });
    expect(l.holds.map((h) => h.id).sort()).toEqual(['lease_x', 'req_open']);
    expect((await checkLedger(r.redis, { toleranceMs: 0 })).map((x) => x.accountId)).toContain(accountId);
  });

  it('names a balance written around the scripts, and where the running balance broke', async () => {
    const { accountId } = await busyAccount();
    await r.redis.hincrby(accountKeys(accountId).account, 'balance', 55);
    const { problems } = await checkAccountLedger(r.redis, accountId, { toleranceMs: 0 });
    expect(problems).toEqual([
      expect.stringMatching(/^balance is 9255, but top-ups − charges \+ refunds .* are 9200$/),
    ]);
    // An entry appended by hand with a made-up balance breaks the running sum.
    await r.redis.xadd(
      accountKeys(accountId).usage,
      '*',
      't',
      'topup',
      'op',
      'topup:hand',
      'amt',
      '5',
      'bal',
      '1',
    );
    const again = await checkAccountLedger(r.redis, accountId, { toleranceMs: 0 });
    expect(
      again.problems.some((p) => /records balance 1, but the entries up to it sum to 9205/.test(p)),
    ).toBe(true);
  });

  it('names held that is not the sum of the holds, a stranded hold, a hold missing from the index, an orphan expiry', async () => {
    const { accountId } = await busyAccount();
    const k = accountKeys(accountId);
    await r.redis.hincrby(k.account, 'held', 1);
    await r.redis.zadd(k.holdExpiry, 1, 'req_open'); // expired long ago, never voided
    await r.redis.zrem(globalKeys.holdsDue(accountId), dueMember(accountId, 'lease_x'));
    await r.redis.zadd(k.holdExpiry, Date.now() + 60_000, 'req_ghost');
    const { problems } = await checkAccountLedger(r.redis, accountId, { toleranceMs: 5_000 });
    expect(problems).toEqual(
      expect.arrayContaining([
        'held is 1201, but its open holds and leases sum to 1200',
        expect.stringMatching(
          /^hold req_open \(200\) expired \d+ s ago and its owner is gone, but it was not voided$/,
        ),
        "hold lease_x is missing from the sweeper's index",
        'expiry entry req_ghost has no hold',
      ]),
    );
    expect(problems).toHaveLength(4);
  });

  it("names a key's spend in a month or a day (a budget's period) that is not its charges − refunds, a key's held that is not its holds, a key hold that is gone", async () => {
    const { accountId, m } = await busyAccount();
    const k = accountKeys(accountId);
    await r.redis.hset(k.key('key_cap'), 'spendLimit', '10000');
    await m.reserve({ accountId, holdId: 'req_cap', min: 1, max: 400, ttlMs: 60_000, keyId: 'key_cap' });
    expect((await checkAccountLedger(r.redis, accountId, { toleranceMs: 0 })).problems).toEqual([]);
    const month = spendMonth(Date.now());
    const day = spendPeriod('day', Date.now());
    await r.redis.hincrby(k.keySpend, `spent:key_1:${month}`, 7);
    await r.redis.hincrby(k.keySpend, `spent:key_1:${day}`, -5);
    await r.redis.hincrby(k.keySpend, 'held:key_cap', 1);
    await r.redis.hset(k.keySpend, 'h:req_gone', 'key_cap');
    const { problems } = await checkAccountLedger(r.redis, accountId, { toleranceMs: 0 });
    expect(problems).toEqual(
      expect.arrayContaining([
        `key key_1 spent 307 in ${month}, but its charges − refunds in the usage stream in that period are 300`,
        `key key_1 spent 295 in ${day}, but its charges − refunds in the usage stream in that period are 300`,
        'key key_cap holds 401, but the open holds filed under it sum to 400',
        'hold req_gone is gone, but it is still filed under key key_cap',
      ]),
    );
    expect(problems).toHaveLength(4);
  });

  it("an install upgraded mid-period: the account's own spend (`*`) is checked only for periods after the day it began counting; an account that spent nothing before is checked in full", async () => {
    const { accountId, m } = await busyAccount();
    const k = accountKeys(accountId);
    // busyAccount's keyed charge came first: counted in full, a wrong `*` is named.
    expect(await r.redis.hget(k.keySpend, 'since:*')).toBe('0');
    const month = spendMonth(Date.now());
    await r.redis.hincrby(k.keySpend, `spent:*:${month}`, 3);
    expect((await checkAccountLedger(r.redis, accountId, { toleranceMs: 0 })).problems).toEqual([
      `key * spent 303 in ${month}, but its charges − refunds in the usage stream in that period are 300`,
    ]);
    // As an older release left it: keyed spend, no `*` at all. A new charge starts counting `*`
    // from today, and today's, this week's and this month's `*` are not compared (they began before).
    for (const f of Object.keys(await r.redis.hgetall(k.keySpend)))
      if (f.startsWith('spent:*:') || f === 'since:*') await r.redis.hdel(k.keySpend, f);
    expect((await checkAccountLedger(r.redis, accountId, { toleranceMs: 0 })).problems).toEqual([]);
    await m.reserve({ accountId, holdId: 'req_b', min: 1, max: 50, ttlMs: 60_000, keyId: 'key_1' });
    await m.settle({ accountId, holdId: 'req_b', cost: 40, usage: { ...chat('req_b'), keyId: 'key_1' } });
    expect(await r.redis.hget(k.keySpend, 'since:*')).toBe(spendPeriod('day', Date.now()));
    expect((await checkAccountLedger(r.redis, accountId, { toleranceMs: 0 })).problems).toEqual([]);
  });

  it('accountSpendCounted: whole periods after the day counting began, all of them from the start', () => {
    expect(accountSpendCounted('202611', undefined)).toBe(false);
    expect(accountSpendCounted('202611', '0')).toBe(true);
    expect(accountSpendCounted('20261128', '20261128')).toBe(false);
    expect(accountSpendCounted('20261129', '20261128')).toBe(true);
    expect(accountSpendCounted('w20261123', '20261128')).toBe(false);
    expect(accountSpendCounted('w20261130', '20261128')).toBe(true);
    expect(accountSpendCounted('202611', '20261128')).toBe(false);
    expect(accountSpendCounted('202612', '20261128')).toBe(true);
    expect(accountSpendCounted('202612', '202611')).toBe(true);
  });

  it('names refunds beyond their charge (written around the refund script)', async () => {
    const { accountId } = await busyAccount();
    const k = accountKeys(accountId);
    const bal = Number(await r.redis.hget(k.account, 'balance')) + 600;
    await r.redis.hincrby(k.account, 'balance', 600);
    await r.redis.xadd(
      k.usage,
      '*',
      't',
      'refund',
      'op',
      'refund:extra',
      'of',
      'charge:vid',
      'amt',
      '600',
      'bal',
      String(bal),
    );
    const { problems } = await checkAccountLedger(r.redis, accountId, { toleranceMs: 0 });
    expect(problems).toEqual(['refunds of charge:vid total 800, more than it charged (700)']);
  });

  it("ledgerOfRequest finds one call's charge, a void of its hold and refunds of its charge", async () => {
    const { accountId, m } = await busyAccount();
    await m.refund({ accountId, refundId: 'r1', of: 'settle:req_a', amount: 100, usage: chat('req_a') });
    const [found] = await ledgerOfRequest(r.redis, 'req_a', accountId);
    expect(found?.accountId).toBe(accountId);
    // Without an account every account's stream is searched (each test's account has a req_a).
    expect((await ledgerOfRequest(r.redis, 'req_a')).map((f) => f.accountId)).toContain(accountId);
    expect(found?.entries.map((e) => [e.type, e.opId, e.amount])).toEqual([
      ['charge', 'settle:req_a', 300],
      ['refund', 'refund:r1', 100],
    ]);
    expect(await ledgerOfRequest(r.redis, 'req_nothing')).toEqual([]);
  });
});
