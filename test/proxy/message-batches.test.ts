// Anthropic's Message Batches (docs/batches.md) through the official @anthropic-ai/sdk against the
// real proxy, Redis and simulator engines: create, retrieve, list, results (JSONL in input order),
// cancel, delete; each succeeded request charged once at the batch price; a bad request refused up
// front with nothing held; the ledger check is clean.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { type Harness, startHarness } from './harness.ts';

const CHAT = 'Batch/Chat';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    { BATCH_POLL_MS: '30', BATCH_LOCK_MS: '2000', BATCH_CONCURRENCY: '4' },
    {
      entries: (endpoints) => [
        {
          id: CHAT,
          kind: 'chat',
          pricing: { USD: { input: '1', output: '2' } },
          batchDiscountPercent: 50,
          maxOutputTokens: 64,
          endpoints,
          created: 1_700_000_000,
        },
      ],
    },
  );
});
afterAll(async () => {
  await h?.stop();
});

const client = (secret: string) =>
  new Anthropic({ apiKey: secret, baseURL: h.baseURL.replace(/\/v1$/, ''), maxRetries: 0 });

const params = (text: string) => ({
  model: CHAT,
  max_tokens: 16,
  messages: [{ role: 'user' as const, content: text }],
});

describe('Anthropic message batches', () => {
  it('BILL-5 MSG-1 create, retrieve, list, results in input order, delete; each request charged once at the batch price', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const anthropic = client(acct.secret);
    const created = await anthropic.messages.batches.create({
      requests: [
        { custom_id: 'one', params: params('hello') },
        { custom_id: 'two', params: params('world') },
      ],
    });
    expect(created).toMatchObject({
      type: 'message_batch',
      processing_status: 'in_progress',
      results_url: null,
    });
    expect(created.id).toMatch(/^msgbatch_/);
    let b = created;
    for (let i = 0; i < 600 && b.processing_status !== 'ended'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      b = await anthropic.messages.batches.retrieve(created.id);
    }
    expect(b.processing_status).toBe('ended');
    expect(b.request_counts).toEqual({ processing: 0, succeeded: 2, errored: 0, canceled: 0, expired: 0 });
    expect(b.ended_at).not.toBeNull();

    const results = [];
    for await (const r of await anthropic.messages.batches.results(b.id)) results.push(r);
    expect(results.map((r) => [r.custom_id, r.result.type])).toEqual([
      ['one', 'succeeded'],
      ['two', 'succeeded'],
    ]);
    for (const r of results) if (r.result.type === 'succeeded') expect(r.result.message.type).toBe('message');

    const charges = (await usageRecords(h.redis.client(), acct.accountId, { count: 1000 })).filter(
      (e) => e.type === 'charge' && e.requestId?.startsWith(`${b.id}:`),
    );
    expect(charges.map((e) => e.requestId).sort()).toEqual([`${b.id}:0`, `${b.id}:1`]);

    const listed = [];
    for await (const x of anthropic.messages.batches.list({ limit: 1 })) listed.push(x.id);
    expect(listed).toEqual([b.id]);

    expect(await anthropic.messages.batches.delete(b.id)).toEqual({
      id: b.id,
      type: 'message_batch_deleted',
    });
    await expect(anthropic.messages.batches.retrieve(b.id)).rejects.toMatchObject({ status: 404 });
    expect((await h.metering.balance(acct.accountId)).held).toBe(0);
    await expectLedgerClean(h.redis.client(), [acct.accountId]);
  });

  it('BILL-6 a bad request is refused up front (400 naming it), nothing held; cancel stops the rest', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const anthropic = client(acct.secret);
    const before = await h.metering.balance(acct.accountId);
    await expect(
      anthropic.messages.batches.create({
        requests: [
          { custom_id: 'ok', params: params('hi') },
          { custom_id: 'bad', params: { ...params('hi'), model: 'No/Such' } },
        ],
      }),
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining('requests.1') });
    expect(await h.metering.balance(acct.accountId)).toEqual(before);

    for (const s of h.sims) s.setOptions({ itlMs: 40 });
    try {
      const b = await anthropic.messages.batches.create({
        requests: Array.from({ length: 12 }, (_, i) => ({ custom_id: `r${i}`, params: params(`line ${i}`) })),
      });
      const cancelled = await anthropic.messages.batches.cancel(b.id);
      expect(['canceling', 'ended']).toContain(cancelled.processing_status);
      let e = cancelled;
      for (let i = 0; i < 600 && e.processing_status !== 'ended'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        e = await anthropic.messages.batches.retrieve(b.id);
      }
      expect(e.processing_status).toBe('ended');
      const c = e.request_counts;
      expect(c.succeeded + c.errored + c.canceled).toBe(12);
      expect(c.canceled).toBeGreaterThan(0);
      const results = [];
      for await (const r of await anthropic.messages.batches.results(b.id)) results.push(r.result.type);
      expect(results.filter((t) => t === 'canceled')).toHaveLength(c.canceled);
      expect((await h.metering.balance(acct.accountId)).held).toBe(0);
      await expectLedgerClean(h.redis.client(), [acct.accountId]);
    } finally {
      for (const s of h.sims) s.setOptions({ itlMs: 1 });
    }
  });
});
