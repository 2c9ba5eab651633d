// Credits through the proxy (BILL-5, BILL-6, KEY-10): holds, lowered max_tokens near the limit,
// exact per-key attribution, and the balance equal to the usage records after a concurrent run.
import { connect } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDecimalToNano } from '../../core/money.ts';
import { primaries, whenReady } from '../../core/redis/client.ts';
import { recomputeBalanceFromStream, usageRecords } from '../../core/usage/usage.ts';
import { DEFAULT_PROMPT_BOUNDS } from '../../proxy/billing/text-quote.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { until } from '../helpers/until.ts';
import { CHAT_MODEL, EMBED_MODEL, type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const messages = [{ role: 'user' as const, content: 'hi' }];
// Prices in the harness (USD per 1M tokens): input 1, cached 0.5, output 2 → nano per token:
const IN = 1_000;
const OUT = 2_000;
// The hold's input bound: the prompt's JSON bytes, the template's tokens around the message and the
// reply, and its tokens per request (the harness models set no promptBounds: the defaults).
const { perMessage, perRequest } = DEFAULT_PROMPT_BOUNDS;
const promptBound = (Buffer.byteLength(JSON.stringify(messages)) + 2 * perMessage + perRequest) * IN;

describe('billing', () => {
  it('BILL-5 a call is charged from the balance per its usage, attributed to its key (KEY-10)', async () => {
    const a = await h.newAccount({ credit: '1' });
    const r = await h
      .client(a.secret)
      .chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 7 })
      .withResponse();
    const { balance } = await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    const u = r.data.usage!;
    const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
    const expected = Math.ceil(
      ((u.prompt_tokens - cached) * IN * 1e6 + cached * 500 * 1e6 + u.completion_tokens * OUT * 1e6) / 1e6,
    );
    expect(rec).toMatchObject({
      type: 'charge',
      keyId: a.keyId,
      model: CHAT_MODEL,
      kind: 'chat',
      amount: expected,
      inputTokens: u.prompt_tokens,
      outputTokens: u.completion_tokens,
      requestId: r.response.headers.get('x-request-id'),
    });
    expect(balance).toBe(1_000_000_000 - expected);
  });

  it('BILL-1 an embeddings call is charged per input token at the model input rate, nothing for output', async () => {
    const a = await h.newAccount({ credit: '1' });
    const r = await h
      .client(a.secret)
      .embeddings.create({ model: EMBED_MODEL, input: ['one short text', 'and a second, longer one'] })
      .withResponse();
    const { balance } = await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    const tokens = r.data.usage.prompt_tokens;
    expect(tokens).toBeGreaterThan(0);
    // The harness prices the embedding model at 0.1 USD per 1M input tokens: 100 nano per token.
    expect(rec).toMatchObject({
      type: 'charge',
      model: EMBED_MODEL,
      kind: 'embedding',
      amount: tokens * 100,
      inputTokens: tokens,
      outputTokens: 0,
      requestId: r.response.headers.get('x-request-id'),
    });
    expect(balance).toBe(1_000_000_000 - tokens * 100);
  });

  it('BILL-6 near the limit max_tokens sent upstream is lowered to what the balance covers', async () => {
    const covered = 10;
    const a = await h.newAccount({ credit: '0' });
    await h.metering.topUp({ accountId: a.accountId, topUpId: 'exact', amount: promptBound + covered * OUT });
    const r = await h
      .client(a.secret)
      .chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 100 });
    expect(r.usage!.completion_tokens).toBe(covered);
    const sent = h.sims
      .flatMap((s) => s.received())
      .filter((x) => x.path === '/v1/chat/completions')
      .at(-1);
    expect((sent!.json as { max_tokens: number }).max_tokens).toBe(covered);
    const { balance } = await h.settled(a.accountId);
    expect(balance).toBeGreaterThanOrEqual(0);
  });

  it('BILL-6 when even the input cannot be covered → 429 insufficient_quota, nothing charged', async () => {
    const a = await h.newAccount({ credit: '0' });
    await h.metering.topUp({ accountId: a.accountId, topUpId: 'tiny', amount: promptBound - 1 });
    const err = await h
      .client(a.secret)
      .chat.completions.create({ model: CHAT_MODEL, messages })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_quota');
    expect(await h.settled(a.accountId)).toMatchObject({ balance: promptBound - 1 });
  });

  it('BILL-5 a client gone while the proxy was still authenticating it: no engine call, nothing charged', async () => {
    const a = await h.newAccount({ credit: '1' });
    const marker = `gone before the engine ${a.accountId}`;
    const body = JSON.stringify({ model: CHAT_MODEL, messages: [{ role: 'user', content: marker }] });
    // Redis answers nobody for a while, so the proxy is still authenticating the (uncached) key
    // when the client sends its call and leaves.
    const { keyCache } = h.proxy.ctx;
    const track = keyCache.track;
    let tracked = 0;
    keyCache.track = (hash) => {
      tracked++;
      return track.call(keyCache, hash);
    };
    const admin = h.redis.client();
    // Every server that holds keys (each primary of a cluster: the key's slot may be on any).
    await whenReady(admin);
    await Promise.all(primaries(admin).map((p) => p.call('CLIENT', 'PAUSE', '800', 'ALL')));
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(h.baseURL).port) });
    await new Promise((r) => socket.once('connect', r));
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${a.secret}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await new Promise((r) => setTimeout(r, 200));
    socket.destroy();
    await Promise.all(primaries(admin).map((p) => p.call('CLIENT', 'UNPAUSE')));
    admin.disconnect();
    // The proxy goes on once Redis answers: it authenticates the call (tracks it against the key),
    // then lets go of it — its hold on the key is not kept for a socket long gone.
    await until(() => tracked > 0, 'the proxy authenticated the call', 10_000);
    await until(() => keyCache.trackedCount() === 0, 'the proxy let go of the call', 10_000);
    keyCache.track = track;
    const reached = h.sims
      .flatMap((s) => s.received())
      .filter((x) => JSON.stringify(x.json).includes(marker));
    expect(reached).toEqual([]);
    expect(await h.settled(a.accountId)).toMatchObject({ balance: 1_000_000_000, held: 0 });
    const entries = await usageRecords(h.redis.client(), a.accountId, { count: 5 });
    expect(entries.map((e) => e.type)).toEqual(['topup']);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('KEY-10 BILL-5 after a mixed concurrent run the balance equals top-up minus the usage records, per key exactly', async () => {
    const a = await h.newAccount({ credit: '0.01' });
    const second = await h.keys.create(a.accountId, { name: 'second' });
    const secrets = [a.secret, second.secret];
    const keyIds = [a.keyId, second.key.id];
    const billed: { keyId: string; requestId: string | null }[] = [];
    const run = async (i: number) => {
      const k = i % 2;
      const c = h.client(secrets[k]);
      switch (i % 6) {
        case 0: {
          const r = await c.chat.completions
            .create({ model: CHAT_MODEL, messages, max_tokens: 5 + (i % 7) })
            .withResponse();
          billed.push({ keyId: keyIds[k]!, requestId: r.response.headers.get('x-request-id') });
          return;
        }
        case 1: {
          const s = await c.chat.completions
            .create({
              model: CHAT_MODEL,
              messages,
              stream: true,
              stream_options: { include_usage: true },
              max_tokens: 9,
            })
            .withResponse();
          for await (const _ of s.data);
          billed.push({ keyId: keyIds[k]!, requestId: s.response.headers.get('x-request-id') });
          return;
        }
        case 2: {
          const s = await c.chat.completions
            .create({ model: CHAT_MODEL, messages, stream: true, max_tokens: 50 })
            .withResponse();
          let n = 0;
          for await (const _ of s.data) if (++n === 3) break; // cut by the client: still billed
          billed.push({ keyId: keyIds[k]!, requestId: s.response.headers.get('x-request-id') });
          return;
        }
        case 3: {
          const r = await c.embeddings
            .create({ model: EMBED_MODEL, input: [`text ${i}`, 'more'] })
            .withResponse();
          billed.push({ keyId: keyIds[k]!, requestId: r.response.headers.get('x-request-id') });
          return;
        }
        case 4: // bad input: never billed
          await c.chat.completions.create({ model: CHAT_MODEL, messages: [] }).catch(() => {});
          return;
        default: // unknown model: never billed
          await c.chat.completions.create({ model: 'No/Such', messages }).catch(() => {});
      }
    };
    await Promise.all(Array.from({ length: 96 }, (_, i) => run(i)));
    const { balance } = await h.settled(a.accountId);
    const records = (await usageRecords(h.redis.client(), a.accountId, { count: 1000 })).filter(
      (r) => r.type === 'charge',
    );
    const charged = records.reduce((sum, r) => sum + r.amount, 0);
    expect(balance).toBe(parseDecimalToNano('0.01') - charged);
    expect(await recomputeBalanceFromStream(h.redis.client(), a.accountId)).toBe(balance);
    expect(records).toHaveLength(billed.length);
    // Every billed response has exactly one record, under the key that made it.
    const byRequest = new Map(records.map((r) => [r.requestId, r.keyId]));
    for (const b of billed) expect(byRequest.get(b.requestId)).toBe(b.keyId);
    for (const r of records) expect(r.amount).toBeGreaterThan(0);
  });

  it('BILL-6 concurrent calls on a nearly empty balance never take it below zero', async () => {
    const a = await h.newAccount({ credit: '0' });
    const credit = promptBound * 3 + 40 * OUT;
    await h.metering.topUp({ accountId: a.accountId, topUpId: 'small', amount: credit });
    const c = h.client(a.secret);
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () =>
        c.chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 20 }),
      ),
    );
    const refused = results.filter((r) => r.status === 'rejected');
    for (const r of refused)
      expect((r.reason as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_quota');
    expect(refused.length).toBeGreaterThan(0);
    const { balance } = await h.settled(a.accountId);
    expect(balance).toBeGreaterThanOrEqual(0);
    const charged = (await usageRecords(h.redis.client(), a.accountId, { count: 100 }))
      .filter((r) => r.type === 'charge')
      .reduce((s, r) => s + r.amount, 0);
    expect(balance).toBe(credit - charged);
  });
});
