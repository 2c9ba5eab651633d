// A batch and its key's spend limit (docs/batches.md "Billing"), on real Redis and the simulator:
// the batch's hold is the key's hold too. A batch whose estimate the key's budget (its day, week or
// month) cannot cover is refused up front with the same 429 insufficient_quota an interactive call
// gets (limit_source key, its window, resets_at), nothing held; a batch that fits holds its
// estimate against the key while it runs, so a second one is refused; each line's charge counts in
// the key's window; at the end the key holds nothing and the ledger check (which checks each key's
// held against the holds filed under it) is clean.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Batches } from '../../core/batches.ts';
import { budgetResetsAt, keyWindowSpend } from '../../core/billing/key-spend.ts';
import { accountKeys } from '../../core/keyspace.ts';
import { batchCharges, batchEnded, uploadLines } from '../helpers/batches.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { registerSecrets } from '../helpers/run-log.ts';
import { type Harness, startHarness } from './harness.ts';

const MODEL = 'Batch/Budget';
const LINES = 3;

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    { BATCH_POLL_MS: '30', BATCH_LOCK_MS: '2000', BATCH_CONCURRENCY: '1' },
    {
      entries: (endpoints) => [
        {
          id: MODEL,
          kind: 'chat',
          pricing: { USD: { input: '1', output: '2' } },
          batchDiscountPercent: 50,
          maxOutputTokens: 64,
          endpoints: [endpoints[0]!],
          created: 1_700_000_000,
        },
      ],
    },
  );
  // Each line takes at least 16 × 40 ms on the engine: a batch of three cannot end before the
  // next request is made (a lower bound only, which load can only lengthen).
  h.sims[0]!.setOptions({ itlMs: 40 });
});
afterAll(async () => {
  await h?.stop();
});

const lines = Array.from({ length: LINES }, (_, i) => ({
  custom_id: `l${i}`,
  body: {
    model: MODEL,
    messages: [{ role: 'user', content: `line ${i}` }],
    max_tokens: 16,
    ignore_eos: true,
  },
}));

const resetsAtText = (window: 'day' | 'week' | 'month') =>
  new Date(budgetResetsAt(window, Date.now())).toISOString().replace('.000Z', 'Z');

async function createBatch(client: OpenAI) {
  const file = await uploadLines(client, '/v1/chat/completions', lines);
  return client.batches.create({
    input_file_id: file.id,
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
  });
}

/** A key of the account with a daily spend limit. */
async function limitedKey(accountId: string, limit: number) {
  const { key, secret } = await h.keys.create(accountId, {
    name: `daily ${limit}`,
    spendLimit: limit,
    spendWindow: 'day',
  });
  registerSecrets(secret);
  return { keyId: key.id, secret, client: h.client(secret) };
}

async function expectDailyLimitRefusal(p: Promise<unknown>): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.RateLimitError);
  const e = err as InstanceType<typeof OpenAI.APIError>;
  expect(e.code).toBe('insufficient_quota');
  expect(e.headers?.get('x-should-retry')).toBe('false');
  expect(e.message).toMatch(/This API key's daily spend limit of \S+ USD is reached/);
  expect(e.error).toMatchObject({ limit_source: 'key', limit_window: 'day', resets_at: resetsAtText('day') });
}

const keyHeld = async (accountId: string, keyId: string) =>
  Number((await h.redis.client().hget(accountKeys(accountId).keySpend, `held:${keyId}`)) ?? 0);

/** What this batch of lines holds when it is created (the same lines, model and price every time). */
async function estimateOfLines(): Promise<number> {
  const other = await h.newAccount({ credit: '10' });
  const b = await createBatch(h.client(other.secret));
  const estimate = Number((await new Batches(h.redis.client()).get(other.accountId, b.id))?.estimate);
  expect(estimate).toBeGreaterThan(0);
  await batchEnded(h.client(other.secret), b.id);
  return estimate;
}

describe('a batch and its key’s spend limit', () => {
  it('BILL-6 a batch its key’s daily budget cannot cover is refused up front, on both APIs, with the key’s limit named; nothing is held', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const k = await limitedKey(acct.accountId, 1_000);
    await expectDailyLimitRefusal(createBatch(k.client));
    const base = h.baseURL.replace(/\/v1$/, '');
    const msg = await new Anthropic({ apiKey: k.secret, baseURL: base, maxRetries: 0 }).messages.batches
      .create({
        requests: [
          {
            custom_id: 'a',
            params: { model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
          },
        ],
      })
      .catch((x: unknown) => x);
    expect(msg).toBeInstanceOf(Anthropic.RateLimitError);
    expect((msg as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      error: { code: 'insufficient_quota', limit_source: 'key', limit_window: 'day' },
    });
    expect((await h.metering.balance(acct.accountId)).held).toBe(0);
    expect(await keyHeld(acct.accountId, k.keyId)).toBe(0);
    expect((await k.client.batches.list()).data).toHaveLength(0);
    await expectLedgerClean(h.redis.client(), [acct.accountId]);
  });

  it('BILL-6 a batch that fits holds its estimate against the key while it runs (a second is refused); its lines’ charges count in the key’s window', async () => {
    const estimate = await estimateOfLines();
    const acct = await h.newAccount({ credit: '10' });
    // Room for one batch, not two.
    const limit = estimate + Math.floor(estimate / 2);
    const k = await limitedKey(acct.accountId, limit);
    const first = await createBatch(k.client);
    expect(first.status).toBe('validating');
    // Held for the key: what the lease still holds plus what its lines were charged is the estimate.
    const day = [{ id: k.keyId, window: 'day' as const }];
    const spentToday = async () =>
      (await keyWindowSpend(h.redis.client(), acct.accountId, day)).get(k.keyId)!;
    expect((await keyHeld(acct.accountId, k.keyId)) + (await spentToday())).toBe(estimate);
    await expectDailyLimitRefusal(createBatch(k.client));
    // Another key of the account is not bound by this key's limit.
    const unlimited = await createBatch(h.client(acct.secret));

    const b = await batchEnded(k.client, first.id);
    expect(b.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    const charges = await batchCharges(h.redis.client(), acct.accountId, b.id);
    const total = [...charges.values()].flat().reduce((a, e) => a + e.amount, 0);
    expect(charges.size).toBe(LINES);
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(estimate);
    // The lines' charges are the key's spend today; its hold is gone with the batch's.
    expect(await spentToday()).toBe(total);
    expect(await keyHeld(acct.accountId, k.keyId)).toBe(0);
    for (const e of [...charges.values()].flat()) expect(e.keyId).toBe(k.keyId);

    await batchEnded(h.client(acct.secret), unlimited.id);
    expect((await h.settled(acct.accountId)).held).toBe(0);
    await expectLedgerClean(h.redis.client(), [acct.accountId]);
  });
});
