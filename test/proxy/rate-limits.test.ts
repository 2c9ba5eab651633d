// A key's rate limits through the real proxy (issue 34): a limited key's answers carry the vendor's
// rate-limit headers, its refusals are 429 rate_limit_exceeded (never insufficient_quota) with
// retry-after, and the official openai and anthropic SDKs, given such a key, retry on their own and
// succeed — no code change. A key without limits answers as before (no header). Ledger check last.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const chatBody = JSON.stringify({
  model: CHAT_MODEL,
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 5,
});
const post = (secret: string) =>
  fetch(`${h.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: chatBody,
  });

/** A fetch that records every status the SDK saw, retries included. */
function recording(statuses: number[]): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    statuses.push(res.status);
    return res;
  };
}

describe('rate limits through the proxy', () => {
  it('the third request of a key limited to 2 a minute is refused with rate_limit_exceeded, retry-after and the headers; a key without limits has none', async () => {
    const { accountId, keyId, secret } = await h.newAccount();
    await h.keys.setRateLimits(accountId, keyId, { requestsPerMinute: 2 });
    const first = await post(secret);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    expect(first.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?s$/);
    await first.text();
    const second = await post(secret);
    expect(second.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    await second.text();
    const third = await post(secret);
    expect(third.status).toBe(429);
    const body = (await third.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('rate_limit_exceeded');
    expect(body.error.message).toMatch(/2 requests per minute/);
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(third.headers.get('retry-after-ms'))).toBeGreaterThan(0);
    expect(third.headers.get('x-should-retry')).toBeNull();

    const plain = await h.newAccount();
    const free = await post(plain.secret);
    expect(free.status).toBe(200);
    expect([...free.headers.keys()].filter((k) => k.includes('ratelimit'))).toEqual([]);
    await free.text();
    await h.quiesce();
    await expectLedgerClean(h.redis.client());
  });

  it('the official openai SDK retries a limited key after retry-after and succeeds, unchanged', async () => {
    const { accountId, keyId, secret } = await h.newAccount();
    await h.keys.setRateLimits(accountId, keyId, { requestsPerMinute: 20 });
    const statuses: number[] = [];
    const client = new OpenAI({
      apiKey: secret,
      baseURL: h.baseURL,
      maxRetries: 10,
      fetch: recording(statuses),
    });
    const answers = await Promise.all(
      Array.from({ length: 22 }, () =>
        client.chat.completions.create({
          model: CHAT_MODEL,
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 3,
        }),
      ),
    );
    expect(answers).toHaveLength(22);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 200)).toHaveLength(22);
    await h.quiesce();
    await expectLedgerClean(h.redis.client());
  }, 90_000);

  it('MSG-8 the official anthropic SDK retries a limited key after retry-after and succeeds; the Messages headers are Anthropic’s', async () => {
    const { accountId, keyId, secret } = await h.newAccount();
    await h.keys.setRateLimits(accountId, keyId, { requestsPerMinute: 20, outputTokensPerMinute: 100_000 });
    const statuses: number[] = [];
    const client = new Anthropic({
      apiKey: secret,
      baseURL: h.baseURL.replace(/\/v1$/, ''),
      maxRetries: 10,
      fetch: recording(statuses),
    });
    const one = await client.messages
      .create({ model: CHAT_MODEL, max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(one.response.headers.get('anthropic-ratelimit-requests-limit')).toBe('20');
    expect(one.response.headers.get('anthropic-ratelimit-output-tokens-limit')).toBe('100000');
    expect(Date.parse(one.response.headers.get('anthropic-ratelimit-requests-reset')!)).toBeGreaterThan(0);
    const answers = await Promise.all(
      Array.from({ length: 21 }, () =>
        client.messages.create({
          model: CHAT_MODEL,
          max_tokens: 3,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      ),
    );
    expect(answers).toHaveLength(21);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 200)).toHaveLength(22);
    await h.quiesce();
    await expectLedgerClean(h.redis.client());
  }, 90_000);
});

describe('a calls-at-once limit with calls longer than the SDK’s retry budget (issue 48 item 3)', () => {
  const CALL_MS = 2000;
  const streamed = (client: OpenAI) => async () => {
    const stream = await client.chat.completions.create({
      model: CHAT_MODEL,
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 3,
      stream: true,
    });
    let text = '';
    for await (const c of stream) text += c.choices[0]?.delta?.content ?? '';
    return text;
  };

  it('the official openai SDK with its default 2 retries: five callers of a key limited to 2 at once all succeed with 2 s streams', async () => {
    for (const s of h.sims) s.setOptions({ ttftMs: CALL_MS });
    try {
      const { accountId, keyId, secret } = await h.newAccount();
      await h.keys.setRateLimits(accountId, keyId, { concurrentCalls: 2 });
      const statuses: number[] = [];
      const client = new OpenAI({ apiKey: secret, baseURL: h.baseURL, fetch: recording(statuses) });
      // One call of the key ends first: its duration is what the refusals are told from.
      await streamed(client)();
      const answers = await Promise.all(Array.from({ length: 5 }, streamed(client)));
      expect(answers.every((t) => t.length > 0)).toBe(true);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
      expect(statuses.filter((s) => s === 200)).toHaveLength(6);
      await h.quiesce();
      await expectLedgerClean(h.redis.client());
    } finally {
      for (const s of h.sims) s.setOptions({ ttftMs: 5 });
    }
  }, 60_000);
});

describe('an account that waits for a slot (issue 48 item 3)', () => {
  it('calls over a key’s calls-at-once limit wait in the proxy for a slot and all succeed without a 429; past the wait, the 429 stands', async () => {
    for (const s of h.sims) s.setOptions({ ttftMs: 500 });
    try {
      const { accountId, keyId, secret } = await h.newAccount();
      await h.keys.setRateLimits(accountId, keyId, { concurrentCalls: 1 });
      await h.accounts.setConcurrencyQueue(accountId, 10);
      const statuses: number[] = [];
      // No retries: a 429 would be the caller's answer.
      const client = new OpenAI({
        apiKey: secret,
        baseURL: h.baseURL,
        maxRetries: 0,
        fetch: recording(statuses),
      });
      const started = performance.now();
      const answers = await Promise.all(
        Array.from({ length: 4 }, () =>
          client.chat.completions.create({
            model: CHAT_MODEL,
            messages: [{ role: 'user', content: 'hi' }],
            max_tokens: 3,
          }),
        ),
      );
      expect(answers).toHaveLength(4);
      expect(statuses).toEqual([200, 200, 200, 200]);
      // One at a time: four half-second calls take two seconds at least.
      expect(performance.now() - started).toBeGreaterThanOrEqual(4 * 500);

      // A wait shorter than the call: the 429 comes at the wait's end, with its Retry-After.
      await h.accounts.setConcurrencyQueue(accountId, 1);
      for (const s of h.sims) s.setOptions({ ttftMs: 2500 });
      const long = client.chat.completions.create({
        model: CHAT_MODEL,
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 3,
      });
      await new Promise((r) => setTimeout(r, 200));
      const t0 = performance.now();
      const refused = await client.chat.completions
        .create({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 })
        .catch((e: unknown) => e as { status: number; code: string });
      expect(refused).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
      expect(performance.now() - t0).toBeGreaterThanOrEqual(900);
      await long;
      await h.quiesce();
      await expectLedgerClean(h.redis.client());
    } finally {
      for (const s of h.sims) s.setOptions({ ttftMs: 5 });
    }
  }, 60_000);
});
