// A batch and its key's spend limit (docs/batches.md "Billing"), on real Redis and the simulator:
// the batch's hold is the key's hold too. A batch whose estimate the key's budget (its day, week or
// month) cannot cover is refused up front with the same 429 insufficient_quota an interactive call
// gets (limit_source key, its window, resets_at), nothing held; a batch that fits holds its
// estimate against the key while it runs, so a second one is refused; each line's charge counts in
// the key's window; at the end the key holds nothing and the ledger check (which checks each key's
// held against the holds filed under it) is clean. The account's budget across its keys is held to
// the same way (limit_source account), whichever key makes the batch; its money test ends with the
// ledger check of Redis against the PostgreSQL journal the entries were archived into.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT_SPEND_KEY, budgetResetsAt, keyWindowSpend } from '../../core/billing/key-spend.ts';
import { Batches } from '../../core/jobs/batches.ts';
import { Archiver } from '../../core/journal/index.ts';
import { accountKeys } from '../../core/redis/keyspace.ts';
import { batchCharges, batchEnded, uploadLines } from '../helpers/batches.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { journalForFile } from '../helpers/postgres.ts';
import { registerSecrets } from '../helpers/run-log.ts';
import { type Harness, startHarness } from './harness.ts';

const MODEL = 'Batch/Budget';
/** The account-budget test archives its entries: a database of this file's own. */
const db = journalForFile();
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

async function expectDailyLimitRefusal(
  p: Promise<unknown>,
  source: 'key' | 'account' = 'key',
): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.RateLimitError);
  const e = err as InstanceType<typeof OpenAI.APIError>;
  expect(e.code).toBe('insufficient_quota');
  expect(e.headers?.get('x-should-retry')).toBe('false');
  const whose = source === 'key' ? "This API key's" : "This account's";
  expect(e.message).toMatch(new RegExp(`${whose} daily spend limit of \\S+ USD is reached`));
  expect(e.error).toMatchObject({
    limit_source: source,
    limit_window: 'day',
    resets_at: resetsAtText('day'),
  });
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

/** Waits for the batch to end with every line done; its lines' charges (each once) and their total, within the estimate. */
async function endedCharges(client: OpenAI, accountId: string, batchId: string, estimate: number) {
  const b = await batchEnded(client, batchId);
  expect(b.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
  const charges = await batchCharges(h.redis.client(), accountId, b.id);
  const total = [...charges.values()].flat().reduce((a, e) => a + e.amount, 0);
  expect(charges.size).toBe(LINES);
  expect(total).toBeGreaterThan(0);
  expect(total).toBeLessThanOrEqual(estimate);
  return { charges, total };
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

    const { charges, total } = await endedCharges(k.client, acct.accountId, first.id, estimate);
    // The lines' charges are the key's spend today; its hold is gone with the batch's.
    expect(await spentToday()).toBe(total);
    expect(await keyHeld(acct.accountId, k.keyId)).toBe(0);
    for (const e of [...charges.values()].flat()) expect(e.keyId).toBe(k.keyId);

    await batchEnded(h.client(acct.secret), unlimited.id);
    expect((await h.settled(acct.accountId)).held).toBe(0);
    await expectLedgerClean(h.redis.client(), [acct.accountId]);
  });
});

describe('a batch and its account’s budget', () => {
  const accountHeld = (accountId: string) => keyHeld(accountId, ACCOUNT_SPEND_KEY);
  const spentToday = async (accountId: string) =>
    (await keyWindowSpend(h.redis.client(), accountId, [{ id: ACCOUNT_SPEND_KEY, window: 'day' }])).get(
      ACCOUNT_SPEND_KEY,
    )!;

  it('BILL-6 a batch the account’s daily budget cannot cover is refused up front naming the account, whichever key makes it; nothing is held', async () => {
    const acct = await h.newAccount({ credit: '10' });
    await h.accounts.setBudget(acct.accountId, 1_000, 'day');
    const other = await h.keys.create(acct.accountId, { name: 'second key' });
    registerSecrets(other.secret);
    for (const secret of [acct.secret, other.secret])
      await expectDailyLimitRefusal(createBatch(h.client(secret)), 'account');
    expect((await h.metering.balance(acct.accountId)).held).toBe(0);
    expect(await accountHeld(acct.accountId)).toBe(0);
    expect((await h.client(acct.secret).batches.list()).data).toHaveLength(0);
    await expectLedgerClean(h.redis.client(), [acct.accountId]);
  });

  it('BILL-6 a batch that fits holds its estimate against the account’s budget while it runs (another key’s batch is refused); its lines’ charges are the account’s spend; Redis and the journal agree', async () => {
    const estimate = await estimateOfLines();
    const acct = await h.newAccount({ credit: '10' });
    // Room for one batch, not two, across all the account's keys.
    await h.accounts.setBudget(acct.accountId, estimate + Math.floor(estimate / 2), 'day');
    const other = await h.keys.create(acct.accountId, { name: 'second key' });
    registerSecrets(other.secret);
    const first = await createBatch(h.client(acct.secret));
    expect(first.status).toBe('validating');
    // Held for the account: what the lease still holds plus what its lines were charged.
    expect((await accountHeld(acct.accountId)) + (await spentToday(acct.accountId))).toBe(estimate);
    await expectDailyLimitRefusal(createBatch(h.client(other.secret)), 'account');

    const { total } = await endedCharges(h.client(acct.secret), acct.accountId, first.id, estimate);
    // The lines' charges are the account's spend today; its budget holds nothing once the batch ended.
    expect(await spentToday(acct.accountId)).toBe(total);
    expect(await accountHeld(acct.accountId)).toBe(0);
    expect((await h.settled(acct.accountId)).held).toBe(0);
    const archiver = new Archiver(h.redis.client(), db.journal);
    await archiver.drain();
    await expectLedgerClean(h.redis.client(), [acct.accountId], 5_000, db.journal);
  });
});
