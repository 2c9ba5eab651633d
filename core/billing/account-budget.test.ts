// An account's budget across all its keys (issue 34): a spend limit per UTC day, ISO week or month
// on the account, checked in the same reserve and charge scripts' step as the balance and the key's
// own budget, refused with limit_source `account`. Real Redis (and the Redis Cluster run: every key
// is the account's hash tag); two replicas' connections racing refuse exactly at the bound. Every
// test ends with the ledger check, which also proves the account's spend per period (`spent:*:`) and
// its open holds (`held:*`) against the usage stream and the holds.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../../test/helpers/ledger.ts';
import { redisForFile } from '../../test/helpers/redis-per-file.ts';
import { spendOnce } from '../../test/helpers/spend.ts';
import { Accounts } from '../accounts/accounts.ts';
import { keySpendLimitReached } from '../errors.ts';
import { newId } from '../ids.ts';
import { ApiKeys } from '../keys/index.ts';
import { Metering } from './metering.ts';
import type { UsageRecord } from './script-args.ts';

const TTL = 60_000;
// Saturday 2026-11-28 23:30 UTC, then Sunday: a daily budget's period changes between them.
const SAT = Date.UTC(2026, 10, 28, 23, 30);
const SUN = Date.UTC(2026, 10, 29, 0, 30);
const chat = (keyId: string): UsageRecord => ({ keyId, model: 'Org/Chat', kind: 'chat', inputTokens: 1 });

describe('account budgets', () => {
  const r = redisForFile();
  const clock = { now: SAT };
  const metering = () => new Metering(r.redis, { now: () => clock.now });
  const apiKeys = () => new ApiKeys(r.redis, { brand: 'service', kek: randomBytes(32) });

  async function setup(budget: number | null, window?: 'day' | 'week' | 'month') {
    clock.now = SAT;
    const accounts = new Accounts(r.redis);
    const { id: accountId } = await accounts.create({ name: 'team', country: 'US' });
    const m = metering();
    await m.topUp({ accountId, topUpId: newId('top'), amount: 10_000_000 });
    if (budget !== null)
      expect((await accounts.setBudget(accountId, budget, window)).budget).toEqual({
        limit: budget,
        window: window ?? 'month',
      });
    const keys = apiKeys();
    const one = (await keys.create(accountId, { name: 'one' })).key.id;
    const two = (await keys.create(accountId, { name: 'two' })).key.id;
    return { accountId, accounts, m, one, two };
  }
  const spend = (m: Metering, accountId: string, keyId: string, holdId: string, cost: number) =>
    spendOnce(m, { accountId, keyId, holdId, cost, ttlMs: TTL }, chat(keyId));
  const ledgerClean = (accountId: string) => expectLedgerClean(r.redis, [accountId], 0);

  it('BILL-6 a daily account budget counts every key, lowers the hold to what is left, refuses with limit_source account, and passes the next day', async () => {
    const { accountId, m, one, two } = await setup(1_000, 'day');
    expect(await spend(m, accountId, one, 'req_1', 600)).toMatchObject({
      ok: true,
      held: 600,
      keyLimit: null,
    });
    // The other key has what the account has left, no more.
    expect(await spend(m, accountId, two, 'req_2', 900)).toMatchObject({
      ok: true,
      held: 400,
      keyLimit: { limit: 1_000, spent: 600, held: 0, window: 'day', source: 'account' },
    });
    const refused = await m.reserve({ accountId, holdId: 'req_3', min: 1, max: 10, ttlMs: TTL, keyId: one });
    expect(refused).toEqual({
      ok: false,
      available: 10_000_000 - 1_500,
      voided: { holds: 0, leases: 0 },
      keyLimit: {
        limit: 1_000,
        spent: 1_500,
        held: 0,
        window: 'day',
        resetsAt: Date.UTC(2026, 10, 29),
        source: 'account',
      },
      rateLimit: null,
    });
    const err = keySpendLimitReached(refused.keyLimit!, 'USD');
    expect(err.code).toBe('insufficient_quota');
    expect(err.details).toEqual({
      limit_source: 'account',
      limit_window: 'day',
      resets_at: '2026-11-29T00:00:00Z',
    });
    expect(err.message).toMatch(/^This account's daily spend limit of /);
    clock.now = SUN;
    expect(await spend(m, accountId, two, 'req_4', 700)).toMatchObject({
      ok: true,
      held: 700,
      keyLimit: null,
    });
    await ledgerClean(accountId);
  });

  it("a key's own budget, when tighter, is the one named; the account's open holds count against it until they end", async () => {
    const { accountId, m, one, two } = await setup(1_000, 'week');
    await apiKeys().setSpendLimit(accountId, one, 300, 'day');
    expect(
      await m.reserve({ accountId, holdId: 'run_1', min: 1, max: 500, ttlMs: TTL, keyId: one }),
    ).toMatchObject({
      ok: true,
      held: 300,
      keyLimit: { limit: 300, source: 'key' },
    });
    // run_1 is still open: the account's 1 000 has 700 left for the other key.
    expect(
      await m.reserve({ accountId, holdId: 'run_2', min: 1, max: 900, ttlMs: TTL, keyId: two }),
    ).toMatchObject({
      ok: true,
      held: 700,
      keyLimit: { held: 300, source: 'account' },
    });
    expect(
      await m.reserve({ accountId, holdId: 'run_3', min: 1, max: 1, ttlMs: TTL, keyId: two }),
    ).toMatchObject({
      ok: false,
      keyLimit: { held: 1_000, source: 'account', window: 'week' },
    });
    await m.release(accountId, 'run_2');
    await m.settle({ accountId, holdId: 'run_1', cost: 100, usage: chat(one) });
    // Released and settled below its hold: 900 left this week.
    expect(
      await m.reserve({ accountId, holdId: 'run_4', min: 1, max: 5_000, ttlMs: TTL, keyId: two }),
    ).toMatchObject({
      ok: true,
      held: 900,
    });
    await m.release(accountId, 'run_4');
    await ledgerClean(accountId);
  });

  it('BILL-4 a charge (video) past the account budget is refused and not recorded; cleared, the budget binds no more', async () => {
    const { accountId, accounts, m, one, two } = await setup(1_000, 'month');
    const charge = (id: string, keyId: string, cost: number) =>
      m.charge({
        accountId,
        chargeId: id,
        cost,
        usage: { keyId, model: 'Org/Video', kind: 'video', videoSeconds: 1 },
      });
    expect(await charge('c1', one, 800)).toMatchObject({ ok: true, charged: 800 });
    expect(await charge('c2', two, 300)).toMatchObject({
      ok: false,
      keyLimit: { limit: 1_000, spent: 800, window: 'month', source: 'account' },
    });
    await expect(accounts.setBudget(accountId, 5, 'fortnight' as 'day')).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect((await accounts.setBudget(accountId, null)).budget).toBeNull();
    expect(await charge('c3', two, 300)).toMatchObject({ ok: true, charged: 300 });
    await ledgerClean(accountId);
  });

  it('BILL-6 two replicas racing on one account: exactly as many calls as the budget covers pass, none more', async () => {
    const cost = 1_000;
    const covered = 17;
    const { accountId, m, one, two } = await setup(cost * covered, 'day');
    // Each replica: its own connection, 20 calls at once, each wanting a whole `cost` (min = max).
    const replica = async (n: number) => {
      const rm = new Metering(r.server.client(), { now: () => clock.now });
      return Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const holdId = `r${n}_${i}`;
          const keyId = i % 2 === 0 ? one : two;
          const res = await rm.reserve({ accountId, holdId, min: cost, max: cost, ttlMs: TTL, keyId });
          if (res.ok) await rm.settle({ accountId, holdId, cost, usage: chat(keyId) });
          return res;
        }),
      );
    };
    const all = (await Promise.all([replica(1), replica(2)])).flat();
    expect(all.filter((x) => x.ok)).toHaveLength(covered);
    for (const x of all.filter((y) => !y.ok)) expect(x.keyLimit?.source).toBe('account');
    expect((await m.balance(accountId)).balance).toBe(10_000_000 - cost * covered);
    await ledgerClean(accountId);
  });
});
