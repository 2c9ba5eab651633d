// OpenAI's Batch API (docs/batches.md) through the official openai SDK against the real proxy,
// Redis and simulator engines: batches of chat, Responses and embeddings lines complete with
// OpenAI's output and error files; each line is charged once at the batch price (half the
// interactive price here) under its own id, failed lines are free; input is checked up front (a
// bad batch fails with its errors and nothing is held); cancel and expiry stop new lines and bill
// only finished ones; the unused hold is released; the ledger check is clean.
import { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchTokenPrice, textCost } from '../../core/billing/index.ts';
import { formatNano } from '../../core/money.ts';
import { type BatchLine, batchCharges, batchEnded, jsonlFile, uploadLines } from '../helpers/batches.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { type Harness, startHarness } from './harness.ts';

const CHAT = 'Batch/Chat';
const EMBED = 'Batch/Embed';
const CHAT_PRICE = { input: '1', output: '2' };
const EMBED_PRICE = { input: '0.1' };

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    { BATCH_POLL_MS: '30', BATCH_LOCK_MS: '2000', BATCH_CONCURRENCY: '4' },
    {
      entries: (endpoints) => [
        {
          id: CHAT,
          kind: 'chat',
          pricing: { USD: CHAT_PRICE },
          batchDiscountPercent: 50,
          maxOutputTokens: 64,
          endpoints,
          created: 1_700_000_000,
        },
        {
          id: EMBED,
          kind: 'embedding',
          pricing: { USD: EMBED_PRICE },
          batchDiscountPercent: 50,
          endpoints,
          created: 1_700_000_000,
        },
      ],
    },
  );
  for (const s of h.sims) s.setOptions({ maxModelLen: 3_000 });
});
afterAll(async () => {
  await h?.stop();
});

type Line = BatchLine;
const upload = uploadLines;
const ended = batchEnded;
const jsonl = jsonlFile;
const chargesOf = (accountId: string, batchId: string) => batchCharges(h.redis.client(), accountId, batchId);

const chat = (id: string, text: string, max = 16): Line => ({
  custom_id: id,
  body: { model: CHAT, messages: [{ role: 'user', content: text }], max_tokens: max },
});

describe('OpenAI batches', () => {
  it('BILL-1 BILL-5 a chat batch completes with OpenAI output and error files; each line charged once at the batch price, failed lines free', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const client = h.client(acct.secret);
    const before = await h.metering.balance(acct.accountId);
    const file = await upload(client, '/v1/chat/completions', [
      chat('a', 'hello there'),
      chat('b', 'tell me a story', 24),
      // Past the engine's context: the engine refuses it, the line fails and costs nothing.
      chat('c', 'word '.repeat(4_000)),
      chat('d', 'one more'),
    ]);
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { run: 'one' },
    });
    expect(created).toMatchObject({
      object: 'batch',
      status: 'validating',
      input_file_id: file.id,
      metadata: { run: 'one' },
    });
    expect(created.request_counts).toEqual({ total: 4, completed: 0, failed: 0 });
    // The whole estimate is held while the batch runs.
    expect((await h.metering.balance(acct.accountId)).held).toBeGreaterThan(0);

    const b = await ended(client, created.id);
    expect(b.status).toBe('completed');
    expect(b.request_counts).toEqual({ total: 4, completed: 3, failed: 1 });
    for (const t of ['in_progress_at', 'finalizing_at', 'completed_at'] as const)
      expect(b[t]).toBeGreaterThan(0);

    const out = await jsonl(client, b.output_file_id);
    expect(out.map((l) => l.custom_id)).toEqual(['a', 'b', 'd']);
    const price = batchTokenPrice(CHAT_PRICE, 50);
    let total = 0;
    const charges = await chargesOf(acct.accountId, b.id);
    for (const l of out) {
      expect(l.id).toMatch(/^batch_req_[0-9a-f]{24}$/);
      expect(l.error).toBeNull();
      expect(l.response.status_code).toBe(200);
      expect(l.response.request_id).toMatch(/^req_[0-9a-f]{24}$/);
      expect(l.response.body.object).toBe('chat.completion');
      expect(l.response.body.model).toBe(CHAT);
      const u = l.response.body.usage;
      const cost = textCost(price, {
        inputTokens: u.prompt_tokens,
        cachedTokens: 0,
        outputTokens: u.completion_tokens,
      });
      // The answer says the batch price, and the ledger charged exactly that, once.
      expect(l.response.body.usage.cost).toBe(formatNano(cost));
      const index = ['a', 'b', 'c', 'd'].indexOf(l.custom_id);
      const c = charges.get(index) ?? [];
      expect(c.map((e) => e.amount)).toEqual([cost]);
      expect(c[0]).toMatchObject({
        model: CHAT,
        kind: 'chat',
        keyId: acct.keyId,
        opId: `settle:${b.id}:${index}`,
      });
      total += cost;
    }
    const errors = await jsonl(client, b.error_file_id);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ custom_id: 'c', error: null, response: { status_code: 400 } });
    expect(errors[0]!.response.body.error.message).toEqual(expect.any(String));
    expect(charges.has(2)).toBe(false);
    expect((b as unknown as { usage: { cost: string } }).usage.cost).toBe(formatNano(total));

    // The unused hold went back; the balance paid exactly the lines' costs.
    const after = await h.metering.balance(acct.accountId);
    expect(after.held).toBe(0);
    expect(before.balance - after.balance).toBe(total);
    // Output files are the account's files (purpose batch_output).
    expect((await client.files.retrieve(b.output_file_id!)).purpose).toBe('batch_output');
    // Retrieving again charges nothing more (LiteLLM's "billed again on each retrieve").
    await client.batches.retrieve(b.id);
    expect((await h.metering.balance(acct.accountId)).balance).toBe(after.balance);
    await expectLedgerClean(h.redis.client(), [acct.accountId]);
  });

  it('BILL-1 Responses and embeddings batches complete with each endpoint’s own answers, billed at the batch price', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const client = h.client(acct.secret);
    const resp = await client.batches.create({
      input_file_id: (
        await upload(client, '/v1/responses', [
          { custom_id: 'r1', body: { model: CHAT, input: 'hi', max_output_tokens: 64 } },
          {
            custom_id: 'r2',
            body: { model: CHAT, input: [{ role: 'user', content: 'yo' }], instructions: 'be brief' },
          },
        ])
      ).id,
      endpoint: '/v1/responses',
      completion_window: '24h',
    });
    const emb = await client.batches.create({
      input_file_id: (
        await upload(client, '/v1/embeddings', [
          { custom_id: 'e1', body: { model: EMBED, input: 'one text' } },
          { custom_id: 'e2', body: { model: EMBED, input: ['two', 'texts'], encoding_format: 'base64' } },
        ])
      ).id,
      endpoint: '/v1/embeddings',
      completion_window: '24h',
    });
    const rb = await ended(client, resp.id);
    const eb = await ended(client, emb.id);
    expect([rb.status, eb.status]).toEqual(['completed', 'completed']);
    const rOut = await jsonl(client, rb.output_file_id);
    expect(rOut.map((l) => [l.custom_id, l.response.body.object, l.response.body.status])).toEqual([
      ['r1', 'response', 'completed'],
      ['r2', 'response', 'completed'],
    ]);
    const eOut = await jsonl(client, eb.output_file_id);
    expect(eOut[0]!.response.body.data).toHaveLength(1);
    expect(eOut[1]!.response.body.data.map((d: { embedding: unknown }) => typeof d.embedding)).toEqual([
      'string',
      'string',
    ]);
    const ePrice = batchTokenPrice(EMBED_PRICE, 50);
    const charges = await chargesOf(acct.accountId, eb.id);
    for (const [i, l] of eOut.entries()) {
      const cost = textCost(ePrice, {
        inputTokens: l.response.body.usage.prompt_tokens,
        cachedTokens: 0,
        outputTokens: 0,
      });
      expect((charges.get(i) ?? []).map((e) => e.amount)).toEqual([cost]);
    }
    expect([...(await chargesOf(acct.accountId, rb.id)).values()].map((c) => c.length)).toEqual([1, 1]);
    expect((await h.metering.balance(acct.accountId)).held).toBe(0);
    await expectLedgerClean(h.redis.client(), [acct.accountId]);
  });

  it('BILL-6 input is checked up front: a bad batch fails with OpenAI’s errors (line, param) and nothing is held; too little credit is a 429', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const client = h.client(acct.secret);
    const before = await h.metering.balance(acct.accountId);
    const text = [
      JSON.stringify({
        custom_id: 'ok',
        method: 'POST',
        url: '/v1/chat/completions',
        body: chat('x', 'hi').body,
      }),
      '{not json',
      JSON.stringify({
        custom_id: 'm',
        method: 'POST',
        url: '/v1/chat/completions',
        body: { ...chat('x', 'hi').body, model: 'No/Such' },
      }),
      JSON.stringify({
        custom_id: 'big',
        method: 'POST',
        url: '/v1/chat/completions',
        body: { ...chat('x', 'hi').body, max_tokens: 100_000 },
      }),
      JSON.stringify({
        custom_id: 'ok',
        method: 'POST',
        url: '/v1/chat/completions',
        body: chat('x', 'hi').body,
      }),
      JSON.stringify({ custom_id: 'u', method: 'POST', url: '/v1/embeddings', body: chat('x', 'hi').body }),
      JSON.stringify({
        custom_id: 's',
        method: 'POST',
        url: '/v1/chat/completions',
        body: { ...chat('x', 'hi').body, stream: true },
      }),
    ].join('\n');
    const file = await client.files.create({
      file: await toFile(Buffer.from(text), 'bad.jsonl'),
      purpose: 'batch',
    });
    const b = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    expect(b.status).toBe('failed');
    expect(b.failed_at).toBeGreaterThan(0);
    expect(b.errors?.data?.map((e) => [e.line, e.code, e.param])).toEqual([
      [2, 'invalid_json_line', null],
      [3, 'model_not_found', 'body.model'],
      // Line 4's max_tokens is above the model's limit: like an interactive call (issue 30), it
      // would run at the limit, so it is no error (the Model's outputLimitPolicy: refuse would be).
      [5, 'duplicate_custom_id', 'custom_id'],
      [6, 'invalid_url', 'url'],
      [7, 'invalid_request', 'body.stream'],
    ]);
    expect(await h.metering.balance(acct.accountId)).toEqual(before);

    const poor = await h.newAccount({ credit: '0.00001' });
    const pc = h.client(poor.secret);
    const pf = await upload(pc, '/v1/chat/completions', [chat('a', 'hi', 64), chat('b', 'hi', 64)]);
    await expect(
      pc.batches.create({ input_file_id: pf.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
    ).rejects.toMatchObject({ status: 429, code: 'insufficient_quota' });
    expect((await h.metering.balance(poor.accountId)).held).toBe(0);
    await expect(
      client.batches.create({
        input_file_id: 'file-nope',
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      }),
    ).rejects.toMatchObject({ status: 400, param: 'input_file_id' });
    await expectLedgerClean(h.redis.client(), [acct.accountId, poor.accountId]);
  });

  it('BILL-5 cancel mid-run stops new lines, bills only finished ones; expiry likewise; batches list with cursors', async () => {
    const acct = await h.newAccount({ credit: '10' });
    const client = h.client(acct.secret);
    for (const s of h.sims) s.setOptions({ itlMs: 40 });
    try {
      const lines = Array.from({ length: 12 }, (_, i) => chat(`l${i}`, `line ${i}`, 12));
      const started = async (id: string) => {
        for (let i = 0; i < 800 && (await client.batches.retrieve(id)).request_counts!.completed === 0; i++)
          await new Promise((r) => setTimeout(r, 10));
      };
      // Once a line of each finished: cancel one, and let the other's window pass.
      const cancelMe = await client.batches.create({
        input_file_id: (await upload(client, '/v1/chat/completions', lines)).id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      });
      await started(cancelMe.id);
      const cancelling = await client.batches.cancel(cancelMe.id);
      expect(['cancelling', 'cancelled']).toContain(cancelling.status);
      const expireMe = await client.batches.create({
        input_file_id: (await upload(client, '/v1/chat/completions', lines)).id,
        endpoint: '/v1/chat/completions',
        completion_window: '24h',
      });
      await started(expireMe.id);
      await h.redis.client().hset(`{a:${acct.accountId}}:batch:${expireMe.id}`, 'expires_at', 1);

      const c = await ended(client, cancelMe.id);
      const e = await ended(client, expireMe.id);
      expect([c.status, e.status]).toEqual(['cancelled', 'expired']);
      expect(c.cancelled_at).toBeGreaterThan(0);
      expect(e.expired_at).toBeGreaterThan(0);
      for (const [b, code] of [
        [c, 'batch_cancelled'],
        [e, 'batch_expired'],
      ] as const) {
        const done = b.request_counts!.completed;
        expect(done).toBeGreaterThan(0);
        expect(done).toBeLessThan(12);
        const out = await jsonl(client, b.output_file_id);
        const errs = await jsonl(client, b.error_file_id);
        expect(out).toHaveLength(done);
        expect(errs).toHaveLength(12 - done);
        for (const l of errs) expect(l).toMatchObject({ response: null, error: { code } });
        const charges = await chargesOf(acct.accountId, b.id);
        expect(charges.size).toBe(done);
        for (const list of charges.values()) expect(list).toHaveLength(1);
      }
      // A finished batch cannot be cancelled.
      await expect(client.batches.cancel(e.id)).rejects.toMatchObject({ status: 400 });

      const page = await client.batches.list({ limit: 1 });
      expect(page.data.map((b) => b.id)).toEqual([expireMe.id]);
      const all: string[] = [];
      for await (const b of client.batches.list({ limit: 1 })) all.push(b.id);
      expect(all).toEqual([expireMe.id, cancelMe.id]);
      expect((await h.metering.balance(acct.accountId)).held).toBe(0);
      await expectLedgerClean(h.redis.client(), [acct.accountId]);
    } finally {
      for (const s of h.sims) s.setOptions({ itlMs: 1 });
    }
  });
});
