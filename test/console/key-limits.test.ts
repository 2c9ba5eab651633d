// API Management's key limits through the console's JSON API (issue 34): an owner reads and sets a
// key's rate limits and its budget (a spend limit per UTC day, ISO week or month) and sees the
// period's spend and reset; a member reads them but cannot change them (403, nothing changed);
// another account's key is not found; bad input is a 400 naming the field. Real Redis, real HTTP
// on loopback; what the console set is what the key's calls are held to (read back from the key
// store the proxy authenticates with), and the spend shown is what the ledger charged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetResetsAt, Metering } from '../../core/billing/index.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { type ConsoleHarness, type Person, type Signed, startConsole } from './harness.ts';

let h: ConsoleHarness;
let owner: Person;
let os: Signed;
let ms: Signed;
beforeAll(async () => {
  h = await startConsole();
  owner = await h.newOwner('Limits Co');
  os = await h.session(owner);
  ms = await h.session(await h.newMember(owner.accountId, 'limits-member'));
});
afterAll(async () => h?.stop());

interface LimitsView {
  keyId: string;
  rateLimits: Record<string, number | null>;
  accountDefaults: Record<string, number | null>;
  effective: Record<string, number | null>;
  use: Record<string, number>;
  budget: { spendLimit: string | null; spendWindow: string; spent: string; resetsAt: string };
}
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
const newKey = async (name: string) =>
  (await h.json<{ key: { id: string } }>(os, 'POST', '/keys', { name })).key.id;

describe("a key's limits on API Management", () => {
  it('an owner sets and clears each rate limit and a budget with its window; the key is held to them; the spend shown is the period’s', async () => {
    const id = await newKey('limited tool');
    await h.accounts.setRateLimits(owner.accountId, { outputTokensPerMinute: 5_000 });
    const fresh = await h.json<LimitsView>(os, 'GET', `/keys/${id}/limits`);
    expect(fresh).toEqual({
      keyId: id,
      rateLimits: {
        requestsPerMinute: null,
        inputTokensPerMinute: null,
        outputTokensPerMinute: null,
        concurrentCalls: null,
      },
      accountDefaults: {
        requestsPerMinute: null,
        inputTokensPerMinute: null,
        outputTokensPerMinute: 5_000,
        concurrentCalls: null,
      },
      effective: {
        requestsPerMinute: null,
        inputTokensPerMinute: null,
        outputTokensPerMinute: 5_000,
        concurrentCalls: null,
      },
      use: { requestsPerMinute: 0, inputTokensPerMinute: 0, outputTokensPerMinute: 0, concurrentCalls: 0 },
      budget: {
        spendLimit: null,
        spendWindow: 'month',
        spent: '0',
        resetsAt: iso(budgetResetsAt('month', Date.now())),
      },
    });
    const set = await h.json<LimitsView>(os, 'PUT', `/keys/${id}/limits`, {
      rateLimits: {
        requestsPerMinute: 60,
        inputTokensPerMinute: 10_000,
        outputTokensPerMinute: 2_000,
        concurrentCalls: 3,
      },
      spendLimit: '2.50',
      spendWindow: 'day',
    });
    expect(set.rateLimits).toEqual({
      requestsPerMinute: 60,
      inputTokensPerMinute: 10_000,
      outputTokensPerMinute: 2_000,
      concurrentCalls: 3,
    });
    expect(set.effective.outputTokensPerMinute).toBe(2_000);
    expect(set.budget).toMatchObject({
      spendLimit: '2.5',
      spendWindow: 'day',
      resetsAt: iso(budgetResetsAt('day', Date.now())),
    });
    const stored = await h.keys.get(owner.accountId, id);
    expect(stored).toMatchObject({
      spendLimit: 2_500_000_000,
      spendWindow: 'day',
      rateLimits: { requestsPerMinute: 60, concurrentCalls: 3 },
    });
    // The day's spend is what the ledger charged the key today.
    const m = new Metering(h.redis);
    await m.topUp({ accountId: owner.accountId, topUpId: 'top_limits', amount: 10_000_000_000 });
    const held = await m.reserve({
      accountId: owner.accountId,
      holdId: 'req_l1',
      min: 1,
      max: 1_000_000_000,
      ttlMs: 60_000,
      keyId: id,
      tokens: { input: 6_000, output: 1_500 },
    });
    expect(held).toMatchObject({ ok: true });
    // While the call runs, its share of each window is in use (the token buckets drain
    // continuously: 10,000 and 2,000 a minute, so a slow machine sees a little less).
    const running = (await h.json<LimitsView>(ms, 'GET', `/keys/${id}/limits`)).use;
    expect(running.concurrentCalls).toBe(1);
    expect(running.requestsPerMinute).toBeLessThanOrEqual(1);
    expect(running.inputTokensPerMinute).toBeGreaterThan(4_000);
    expect(running.inputTokensPerMinute).toBeLessThanOrEqual(6_000);
    expect(running.outputTokensPerMinute).toBeGreaterThan(1_000);
    expect(running.outputTokensPerMinute).toBeLessThanOrEqual(1_500);
    await m.settle({
      accountId: owner.accountId,
      holdId: 'req_l1',
      cost: 750_000_000,
      usage: { keyId: id, model: 'M', kind: 'chat' },
    });
    const after = await h.json<LimitsView>(ms, 'GET', `/keys/${id}/limits`);
    expect(after.budget.spent).toBe('0.75');
    expect(after.use.concurrentCalls).toBe(0); // its slot came back at settle
    // Cleared one by one: what is not named stays; the window alone moves the limit there is.
    const partly = await h.json<LimitsView>(os, 'PUT', `/keys/${id}/limits`, {
      rateLimits: { requestsPerMinute: null, concurrentCalls: null },
      spendWindow: 'week',
    });
    expect(partly.rateLimits).toMatchObject({
      requestsPerMinute: null,
      inputTokensPerMinute: 10_000,
      concurrentCalls: null,
    });
    expect(partly.budget).toMatchObject({ spendLimit: '2.5', spendWindow: 'week', spent: '0.75' });
    const cleared = await h.json<LimitsView>(os, 'PUT', `/keys/${id}/limits`, {
      rateLimits: { inputTokensPerMinute: null, outputTokensPerMinute: null },
      spendLimit: null,
    });
    expect(cleared.rateLimits).toEqual(fresh.rateLimits);
    expect(cleared.budget).toMatchObject({ spendLimit: null, spendWindow: 'month' });
    await h.accounts.setRateLimits(owner.accountId, { outputTokensPerMinute: null });
    await expectLedgerClean(h.redis, [owner.accountId]);
  });

  it('a member reads the limits but cannot change them (403, unchanged); another account’s key is not found; bad input is a 400', async () => {
    const id = await newKey('owner tool');
    await h.json(os, 'PUT', `/keys/${id}/limits`, { rateLimits: { requestsPerMinute: 10 } });
    expect((await h.json<LimitsView>(ms, 'GET', `/keys/${id}/limits`)).rateLimits.requestsPerMinute).toBe(10);
    const mine = (await h.json<{ key: { id: string } }>(ms, 'POST', '/keys', { name: 'member tool' })).key.id;
    for (const key of [id, mine]) {
      const res = await h.call(ms, 'PUT', `/keys/${key}/limits`, { rateLimits: { requestsPerMinute: null } });
      expect(res.status).toBe(403);
    }
    expect((await h.keys.get(owner.accountId, id))?.rateLimits.requestsPerMinute).toBe(10);
    const other = await h.newOwner('Other Limits Co');
    const otherKey = (await h.keys.create(other.accountId, { name: 'theirs' })).key.id;
    expect((await h.call(os, 'GET', `/keys/${otherKey}/limits`)).status).toBe(404);
    expect((await h.call(os, 'PUT', `/keys/${otherKey}/limits`, { spendLimit: '1' })).status).toBe(404);
    for (const body of [
      { rateLimits: { requestsPerMinute: 0 } },
      { rateLimits: { requestsPerMinute: 1.5 } },
      { rateLimits: { tokensPerDay: 5 } },
      { spendWindow: 'fortnight' },
      { spendLimit: '5,00' },
      { budget: '5' },
    ]) {
      const res = await h.call(os, 'PUT', `/keys/${id}/limits`, body);
      expect([body, res.status]).toEqual([body, 400]);
    }
    expect((await h.keys.get(owner.accountId, id))?.rateLimits.requestsPerMinute).toBe(10);
  });

  it("an owner sets and clears the account's budget across its keys and its keys' default rate limits; the spend shown is every key's this period; a member only reads", async () => {
    interface AccountLimits {
      rateLimits: Record<string, number | null>;
      budget: { limit: string | null; window: string; spent: string; resetsAt: string };
    }
    const one = await newKey('budget one');
    const two = await newKey('budget two');
    const m = new Metering(h.redis);
    await m.topUp({ accountId: owner.accountId, topUpId: 'acct-budget-top', amount: 10_000_000_000 });
    for (const [holdId, keyId] of [
      ['acct_b1', one],
      ['acct_b2', two],
    ] as const) {
      await m.reserve({ accountId: owner.accountId, holdId, min: 1, max: 500_000_000, ttlMs: 60_000, keyId });
      await m.settle({
        accountId: owner.accountId,
        holdId,
        cost: 250_000_000,
        usage: { keyId, model: 'M', kind: 'chat' },
      });
    }
    const before = await h.json<AccountLimits>(os, 'GET', '/account/limits');
    expect(before.budget).toMatchObject({ limit: null, window: 'month' });
    const spentBefore = Number(before.budget.spent);
    expect(spentBefore).toBeGreaterThanOrEqual(0.5);
    const set = await h.json<AccountLimits>(os, 'PUT', '/account/limits', {
      budget: '20',
      budgetWindow: 'day',
      rateLimits: { requestsPerMinute: 120 },
    });
    expect(set).toEqual({
      rateLimits: expect.objectContaining({ requestsPerMinute: 120 }),
      budget: {
        limit: '20',
        window: 'day',
        spent: expect.any(String),
        resetsAt: iso(budgetResetsAt('day', Date.now())),
      },
    });
    expect(Number(set.budget.spent)).toBeGreaterThanOrEqual(0.5);
    expect((await h.accounts.get(owner.accountId))?.budget).toEqual({ limit: 20_000_000_000, window: 'day' });
    // A member reads them, cannot change them.
    expect((await h.json<AccountLimits>(ms, 'GET', '/account/limits')).budget.limit).toBe('20');
    expect((await h.call(ms, 'PUT', '/account/limits', { budget: null })).status).toBe(403);
    for (const body of [{ budgetWindow: 'fortnight' }, { budget: '5,00' }, { spendLimit: '5' }]) {
      const res = await h.call(os, 'PUT', '/account/limits', body);
      expect([body, res.status]).toEqual([body, 400]);
    }
    const cleared = await h.json<AccountLimits>(os, 'PUT', '/account/limits', {
      budget: null,
      rateLimits: { requestsPerMinute: null },
    });
    expect(cleared.budget.limit).toBeNull();
    expect(cleared.rateLimits.requestsPerMinute).toBeNull();
    await expectLedgerClean(h.redis, [owner.accountId]);
  });
});
