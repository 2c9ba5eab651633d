// An account's budget across all its keys through two real proxy replicas (issue 34): a budget set
// on an account both replicas have cached binds their next calls (announced), every call then holds
// per call (never from a lease), a burst from both replicas and two keys never spends past the
// budget, and the calls past it get 429 insufficient_quota with limit_source `account`, the window
// and resets_at, on both surfaces. Ledger check last.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT_SPEND_KEY, budgetResetsAt, keyWindowSpend } from '../../core/billing/index.ts';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, secondReplica, startHarness } from './harness.ts';

let h: Harness;
let second: Awaited<ReturnType<typeof secondReplica>>;
beforeAll(async () => {
  h = await startHarness();
  second = await secondReplica(h);
});
afterAll(async () => {
  await second?.stop();
  await h?.stop();
});

const messages = [{ role: 'user' as const, content: 'hi' }];
const BUDGET = 200_000; // nano: a handful of short calls

describe('an account budget through two proxy replicas', () => {
  it('BILL-6 a burst from two replicas and two keys never spends past the budget; the rest are refused naming the account', async () => {
    const { accountId, secret } = await h.newAccount();
    const other = await h.keys.create(accountId, { name: 'other' });
    const replicas = [h.baseURL, second.baseURL];
    // Both replicas know the account before its budget exists (cached, possibly leasing).
    for (const baseURL of replicas)
      await new OpenAI({ apiKey: secret, baseURL, maxRetries: 0 }).chat.completions.create({
        model: CHAT_MODEL,
        messages,
        max_tokens: 2,
      });
    await h.quiesce();
    await second.proxy.ctx.billing.quiesce();
    await h.accounts.setBudget(accountId, BUDGET, 'day');
    const before = (
      await keyWindowSpend(h.redis.client(), accountId, [{ id: ACCOUNT_SPEND_KEY, window: 'day' }])
    ).get(ACCOUNT_SPEND_KEY)!;
    expect(before).toBeGreaterThan(0); // spent before the budget counts in its day
    const errors: unknown[] = [];
    let ok = 0;
    // Polled: the budget reaches each replica by its announcement, not instantly.
    await Promise.all(
      replicas.flatMap((baseURL) =>
        [secret, other.secret].flatMap((s) =>
          Array.from({ length: 12 }, async () => {
            try {
              await new OpenAI({ apiKey: s, baseURL, maxRetries: 0 }).chat.completions.create({
                model: CHAT_MODEL,
                messages,
                max_tokens: 5,
              });
              ok++;
            } catch (err) {
              errors.push(err);
            }
          }),
        ),
      ),
    );
    await h.quiesce();
    await second.proxy.ctx.billing.quiesce();
    expect(ok).toBeGreaterThan(0);
    expect(errors.length).toBeGreaterThan(0);
    for (const err of errors) {
      expect(err).toBeInstanceOf(OpenAI.APIError);
      const e = err as InstanceType<typeof OpenAI.APIError>;
      expect(e.status).toBe(429);
      expect(e.code).toBe('insufficient_quota');
      expect(e.error).toMatchObject({
        limit_source: 'account',
        limit_window: 'day',
        resets_at: new Date(budgetResetsAt('day', Date.now())).toISOString().replace('.000Z', 'Z'),
      });
      expect(e.message).toMatch(/This account's daily spend limit of 0\.0002 USD is reached/);
    }
    const spent = (
      await keyWindowSpend(h.redis.client(), accountId, [{ id: ACCOUNT_SPEND_KEY, window: 'day' }])
    ).get(ACCOUNT_SPEND_KEY)!;
    // Every call's hold was at most what the budget had left, and a call costs at most its hold.
    expect(spent).toBeLessThanOrEqual(BUDGET);
    const charges = (await usageRecords(h.redis.client(), accountId, { count: 200 })).filter(
      (r) => r.type === 'charge',
    );
    expect(charges).toHaveLength(ok + 2);
    expect(charges.reduce((s, r) => s + r.amount, 0)).toBe(spent);
    // A refusal on the Messages surface is Anthropic's error shape, naming the account too (the
    // budget lowered to what was spent, so nothing at all is left).
    await h.accounts.setBudget(accountId, spent);
    const anthropic = new Anthropic({
      apiKey: secret,
      baseURL: second.baseURL.replace(/\/v1$/, ''),
      maxRetries: 0,
    });
    const refused = await anthropic.messages.create({ model: CHAT_MODEL, max_tokens: 5, messages }).then(
      () => null,
      (err: unknown) => err as InstanceType<typeof Anthropic.APIError>,
    );
    expect(refused?.status).toBe(429);
    expect(JSON.stringify(refused?.error)).toMatch(/"limit_source":"account"/);
    // Cleared, the account's keys are served again.
    await h.accounts.setBudget(accountId, null);
    await expect
      .poll(
        () =>
          new OpenAI({ apiKey: other.secret, baseURL: second.baseURL, maxRetries: 0 }).chat.completions
            .create({ model: CHAT_MODEL, messages, max_tokens: 2 })
            .then(
              () => true,
              () => false,
            ),
        { timeout: 10_000 },
      )
      .toBe(true);
    await h.quiesce();
    await second.proxy.ctx.billing.quiesce();
    await expectLedgerClean(h.redis.client(), [accountId]);
  }, 60_000);
});
