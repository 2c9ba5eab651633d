// A key's monthly spend limit through the real proxy (issue 14): the dedicated key per tool that
// SPEC.md advises can be capped. A limited key reserves per call (never a lease carve, never a
// reserve alongside the engine call), so the limit is checked with the balance in one script; a
// call that would pass it gets 429 insufficient_quota naming the limit (x-should-retry: false) on
// every surface — chat (stream or not), Messages, images, videos — and is never charged, while
// the account's other keys go on. A limit set, raised or removed applies to the next call at once
// (the key cache is told), without ending calls already running. Official SDKs, real Redis and
// simulator engines; the key cache is made to live for minutes, so only the invalidation can
// explain a change seen at once. Each test ends with the ledger check.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetResetsAt, keyMonthSpend, keyWindowSpend } from '../../core/billing/index.ts';
import { displayNano } from '../../core/money.ts';
import { usageRecords } from '../../core/usage/usage.ts';
import { DEFAULT_PROMPT_BOUNDS } from '../../proxy/billing/text-quote.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, imageModel, startHarness, videoModel } from './harness.ts';

const IMAGE_MODEL = 'Img/Capped';
const VIDEO_MODEL = 'Vid/Capped';
const messages = [{ role: 'user' as const, content: 'hi' }];
// Harness prices (USD per 1M tokens): input 1, output 2 → nano per token.
const IN = 1_000;
const OUT = 2_000;
const { perMessage, perRequest } = DEFAULT_PROMPT_BOUNDS;
/** The hold's input bound for `messages` (the least a chat call is held for). */
const promptBound = (Buffer.byteLength(JSON.stringify(messages)) + 2 * perMessage + perRequest) * IN;

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    // Cached principals live for 10 minutes: a change seen at once came through the invalidation.
    { PROXY_KEY_CACHE_MS: '600000' },
    {
      entries: (endpoints) => [imageModel(IMAGE_MODEL, endpoints), videoModel(VIDEO_MODEL, endpoints)],
    },
  );
});
afterAll(async () => {
  await h?.stop();
});

let names = 0;
/** A key of the account with that monthly limit (nano; null = none). */
async function keyOf(accountId: string, spendLimit: number | null) {
  const { key, secret } = await h.keys.create(accountId, { name: `tool ${++names}`, spendLimit });
  return { keyId: key.id, secret };
}

const spent = async (accountId: string, keyId: string) =>
  (await keyMonthSpend(h.redis.client(), accountId, [keyId])).get(keyId)!;

/** A two-character prompt of its own, so the request an engine received can be told apart. */
const tagged = (tag: string) => [{ role: 'user' as const, content: tag.padEnd(2).slice(0, 2) }];

/** The chat request an engine received with that prompt. */
const sentWith = (tag: string) =>
  h.sims
    .flatMap((s) => s.received())
    .find(
      (x) =>
        x.path === '/v1/chat/completions' &&
        (x.json as { messages: { content: string }[] }).messages[0]!.content === tag,
    )!.json as { max_tokens: number };

/** Where the hold of a call came from (its ledger entry's source), once its settlement landed. */
async function sourceOf(accountId: string, requestId: string | null): Promise<string | null> {
  for (let i = 0; i < 200; i++) {
    const found = (await usageRecords(h.redis.client(), accountId, { count: 50 })).find(
      (r) => r.requestId === requestId,
    );
    if (found) return found.source;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no ledger entry for ${requestId}`);
}

/**
 * Calls with `secret` until this proxy holds a lease on the account with money to spare, and
 * returns the source of the first call carved from it (bounded: a lease grows in the background).
 */
async function leaseWarm(accountId: string, secret: string): Promise<string | null> {
  for (let i = 0; i < 50; i++) {
    const { response } = await h
      .client(secret)
      .chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5 })
      .withResponse();
    const source = await sourceOf(accountId, response.headers.get('x-request-id'));
    if (source === 'lease') return source;
  }
  return null;
}

/** The end of the current period of `window` (UTC), as the refusal writes it. */
const resetsAtText = (window: 'day' | 'week' | 'month') =>
  new Date(budgetResetsAt(window, Date.now())).toISOString().replace('.000Z', 'Z');

/** `p` fails with 429 insufficient_quota naming the key's limit (nano), not to be retried. */
async function expectKeyLimit(p: Promise<unknown>, limit: number): Promise<string> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.RateLimitError);
  const e = err as InstanceType<typeof OpenAI.APIError>;
  expect(e.status).toBe(429);
  expect(e.code).toBe('insufficient_quota');
  expect(e.headers?.get('x-should-retry')).toBe('false');
  expect(e.message).toMatch(
    new RegExp(
      `This API key's monthly spend limit of ${displayNano(limit).replace('.', '\\.')} USD is reached \\(`,
    ),
  );
  expect(e.message).toMatch(
    /USD spent this month.*It resets at \S+Z\. Raise the key's limit in the console, or use another key\./,
  );
  // What a client acts on, in the body beside the code: whose limit, its window, when it resets.
  expect(e.error).toMatchObject({
    limit_source: 'key',
    limit_window: 'month',
    resets_at: resetsAtText('month'),
  });
  return e.message;
}

describe('a key with a monthly spend limit', () => {
  it("BILL-6 KEY-10 gets 429 naming its limit once its spend reaches it, never by a lease; the account's other key goes on", async () => {
    const a = await h.newAccount({ credit: '100' });
    const limit = 3 * (promptBound + 5 * OUT);
    const capped = await keyOf(a.accountId, limit);
    const client = h.client(capped.secret);
    let calls = 0;
    let refused: string | null = null;
    for (let i = 0; i < 100 && refused === null; i++) {
      try {
        await client.chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5 });
        calls++;
      } catch (err) {
        refused = await expectKeyLimit(Promise.reject(err), limit);
      }
    }
    expect(refused).not.toBeNull();
    expect(calls).toBeGreaterThanOrEqual(3);
    const { balance } = await h.settled(a.accountId);
    const used = await spent(a.accountId, capped.keyId);
    expect(used).toBeLessThanOrEqual(limit);
    // It ran until what was left could not hold the prompt and one output token: the limit, not the
    // balance, stopped it.
    expect(limit - used).toBeLessThan(promptBound + OUT);
    expect(balance).toBe(100_000_000_000 - used);
    expect(refused).toContain(`(${displayNano(used)} USD spent this month)`);
    const records = await usageRecords(h.redis.client(), a.accountId, { count: 1_000, keyId: capped.keyId });
    expect(records).toHaveLength(calls);
    // The account's unlimited key goes on, carved from this proxy's lease as usual; with that lease
    // there and money to spare in it, a call of the limited key (its limit raised) is still held
    // by a reserve of its own: leases are on here, and the limit is never bypassed by one.
    expect(await leaseWarm(a.accountId, a.secret)).toBe('lease');
    await h.keys.setSpendLimit(a.accountId, capped.keyId, limit * 2);
    const { response } = await client.chat.completions
      .create({ model: CHAT_MODEL, messages, max_tokens: 5 })
      .withResponse();
    expect(h.proxy.ctx.billing.leases!.freeOf(a.accountId)).toBeGreaterThan(promptBound + 5 * OUT);
    expect(await sourceOf(a.accountId, response.headers.get('x-request-id'))).toBe('hold');
    await h.settled(a.accountId);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it("BILL-6 a daily budget (window: a UTC day) refuses once the day's spend reaches it, naming the window and when it resets, on both surfaces", async () => {
    const a = await h.newAccount({ credit: '100' });
    const limit = 2 * (promptBound + 5 * OUT);
    const { key, secret } = await h.keys.create(a.accountId, {
      name: `daily ${++names}`,
      spendLimit: limit,
      spendWindow: 'day',
    });
    const client = h.client(secret);
    let calls = 0;
    let err: unknown = null;
    for (let i = 0; i < 100 && err === null; i++) {
      err = await client.chat.completions
        .create({ model: CHAT_MODEL, messages, max_tokens: 5 })
        .then(() => {
          calls++;
          return null;
        })
        .catch((e: unknown) => e);
    }
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const e = err as InstanceType<typeof OpenAI.APIError>;
    expect(e.code).toBe('insufficient_quota');
    expect(e.headers?.get('x-should-retry')).toBe('false');
    expect(e.message).toMatch(
      /This API key's daily spend limit of \S+ USD is reached \(\S+ USD spent today\)/,
    );
    expect(e.message).toContain(`It resets at ${resetsAtText('day')}.`);
    expect(e.error).toMatchObject({
      limit_source: 'key',
      limit_window: 'day',
      resets_at: resetsAtText('day'),
    });
    expect(calls).toBeGreaterThanOrEqual(2);
    await h.settled(a.accountId);
    const today = (await keyWindowSpend(h.redis.client(), a.accountId, [{ id: key.id, window: 'day' }])).get(
      key.id,
    )!;
    expect(today).toBeLessThanOrEqual(limit);
    expect(today).toBe(await spent(a.accountId, key.id));
    const base = h.baseURL.replace(/\/v1$/, '');
    const msg = await new Anthropic({ apiKey: secret, baseURL: base, maxRetries: 0 }).messages
      .create({ model: CHAT_MODEL, max_tokens: 5, messages })
      .catch((x: unknown) => x);
    expect(msg).toBeInstanceOf(Anthropic.RateLimitError);
    expect((msg as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      error: {
        code: 'insufficient_quota',
        limit_source: 'key',
        limit_window: 'day',
        resets_at: resetsAtText('day'),
      },
    });
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 1_000, keyId: key.id })).toHaveLength(
      calls,
    );
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('BILL-6 near its limit max_tokens sent upstream is lowered to what the key may still spend, stream and non-stream; at the limit a stream is refused before any byte', async () => {
    const a = await h.newAccount({ credit: '100' });
    const covered = 3;
    const k = await keyOf(a.accountId, promptBound + covered * OUT);
    const r = await h
      .client(k.secret)
      .chat.completions.create({ model: CHAT_MODEL, messages: tagged('n1'), max_tokens: 100 });
    expect(r.usage!.completion_tokens).toBe(covered);
    expect(sentWith('n1').max_tokens).toBe(covered);
    await h.settled(a.accountId);

    const s = await keyOf(a.accountId, promptBound + covered * OUT);
    const stream = await h.client(s.secret).chat.completions.create({
      model: CHAT_MODEL,
      messages: tagged('s1'),
      max_tokens: 100,
      stream: true,
      stream_options: { include_usage: true },
    });
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(usage!.completion_tokens).toBe(covered);
    expect(sentWith('s1').max_tokens).toBe(covered);
    await h.settled(a.accountId);

    // What is left of the limit cannot hold the next prompt: 429 before the stream starts.
    const before = await usageRecords(h.redis.client(), a.accountId, { count: 100 });
    await expectKeyLimit(
      h
        .client(s.secret)
        .chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 100, stream: true }),
      promptBound + covered * OUT,
    );
    await h.settled(a.accountId);
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 100 })).toEqual(before);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('a limit raised works at once; a limit set on a key the proxy has cached binds its next call; removed, the key leases again; a running stream is not ended', async () => {
    const a = await h.newAccount({ credit: '100' });
    const k = await keyOf(a.accountId, null);
    const client = h.client(k.secret);
    // The proxy has the key cached without a limit, and a lease on the account to carve its calls from.
    expect(await leaseWarm(a.accountId, k.secret)).toBe('lease');
    const first = await spent(a.accountId, k.keyId);
    expect(first).toBeGreaterThan(0);

    // Set to what the key has spent this month: the next call is refused at once, though the lease
    // could cover it (a proxy still thinking the key unlimited would carve it from there).
    await h.keys.setSpendLimit(a.accountId, k.keyId, first);
    expect(h.proxy.ctx.billing.leases!.freeOf(a.accountId)).toBeGreaterThan(promptBound + 5 * OUT);
    await expectKeyLimit(
      client.chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5 }),
      first,
    );

    // Raised: the next call runs at once.
    await h.keys.setSpendLimit(a.accountId, k.keyId, 1_000_000_000);
    const ok = await client.chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5 });
    expect(ok.choices).toHaveLength(1);
    await h.settled(a.accountId);
    const [held] = await usageRecords(h.redis.client(), a.accountId, { count: 1, keyId: k.keyId });
    expect(held).toMatchObject({ source: 'hold' });

    // Changed while a stream of the key runs: the stream goes on to its end and is billed.
    for (const sim of h.sims) sim.setOptions({ itlMs: 15 });
    try {
      const stream = await client.chat.completions.create({
        model: CHAT_MODEL,
        messages: [{ role: 'user', content: 'Write a long story' }],
        max_tokens: 40,
        stream: true,
        stream_options: { include_usage: true },
      });
      let chunks = 0;
      let usage: OpenAI.CompletionUsage | null | undefined;
      for await (const chunk of stream) {
        if (++chunks === 3) await h.keys.setSpendLimit(a.accountId, k.keyId, 2_000_000_000);
        usage = chunk.usage ?? usage;
      }
      expect(usage!.completion_tokens).toBe(40);
    } finally {
      for (const sim of h.sims) sim.setOptions({ itlMs: 1 });
    }

    // Removed: the key is an ordinary key again, its calls carved from the lease.
    await h.keys.setSpendLimit(a.accountId, k.keyId, null);
    expect(await leaseWarm(a.accountId, k.secret)).toBe('lease');
    await h.settled(a.accountId);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('MSG-8 BILL-6 the Messages surface answers the same 429 in its own error shape', async () => {
    const a = await h.newAccount({ credit: '100' });
    const k = await keyOf(a.accountId, 0);
    const base = h.baseURL.replace(/\/v1$/, '');
    const res = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': k.secret,
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify({ model: CHAT_MODEL, max_tokens: 5, messages }),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const json = (await res.json()) as {
      type: string;
      error: { type: string; code: string; message: string };
    };
    expect(json.type).toBe('error');
    expect(json.error).toMatchObject({ type: 'rate_limit_error', code: 'insufficient_quota' });
    expect(json.error.message).toBe(
      `This API key's monthly spend limit of 0.00 USD is reached (0.00 USD spent this month). It resets at ${resetsAtText('month')}. Raise the key's limit in the console, or use another key.`,
    );
    expect(json.error).toMatchObject({
      limit_source: 'key',
      limit_window: 'month',
      resets_at: resetsAtText('month'),
    });
    const err = await new Anthropic({ apiKey: k.secret, baseURL: base, maxRetries: 0 }).messages
      .create({ model: CHAT_MODEL, max_tokens: 5, messages })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    expect((err as InstanceType<typeof Anthropic.APIError>).message).toMatch(
      /monthly spend limit of 0\.00 USD/,
    );
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 10, keyId: k.keyId })).toEqual([]);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('BILL-3 BILL-4 images and video creation past the limit are refused and not charged', async () => {
    const a = await h.newAccount({ credit: '100' });
    const k = await keyOf(a.accountId, 500_000_000); // 0.50 USD
    const client = h.client(k.secret);
    const img = await client.images.generate({
      model: IMAGE_MODEL,
      prompt: 'a fox',
      response_format: 'b64_json',
    });
    expect(img.data).toHaveLength(1);
    const video = await client.videos.create({ model: VIDEO_MODEL, prompt: 'a boat', seconds: '4' });
    expect(video.status).toBe('queued');
    await h.settled(a.accountId);
    expect(await spent(a.accountId, k.keyId)).toBe(40_000_000 + 400_000_000);
    const before = await h.metering.balance(a.accountId);

    // 0.06 left: not 2 images (0.08), not 4 seconds of video (0.40).
    await expectKeyLimit(
      client.images.generate({ model: IMAGE_MODEL, prompt: 'two foxes', n: 2 }),
      500_000_000,
    );
    const message = await expectKeyLimit(
      client.videos.create({ model: VIDEO_MODEL, prompt: 'another boat', seconds: '4' }),
      500_000_000,
    );
    expect(message).toContain('(0.44 USD spent this month)');
    await h.settled(a.accountId);
    expect(await h.metering.balance(a.accountId)).toEqual(before);
    expect(await spent(a.accountId, k.keyId)).toBe(440_000_000);
    expect((await client.videos.list()).data.map((v) => v.id)).toEqual([video.id]);
    // One image still fits.
    expect(
      (await client.images.generate({ model: IMAGE_MODEL, prompt: 'a fox', response_format: 'b64_json' }))
        .data,
    ).toHaveLength(1);
    await h.settled(a.accountId);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});
