// Authentication, error shapes and headers of the chat-completions surface, end to end: the official
// openai SDK against the real proxy, real Redis and the simulator.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REQUEST_ID_PATTERN } from '../../core/ids.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const raw = (path: string, init: RequestInit = {}) => fetch(`${h.baseURL}${path}`, init);
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });
const chatBody = JSON.stringify({
  model: CHAT_MODEL,
  messages: [{ role: 'user', content: 'hi' }],
  max_tokens: 3,
});

async function expectApiError(
  p: Promise<unknown>,
  status: number,
  code: string,
): Promise<InstanceType<typeof OpenAI.APIError>> {
  const err = await p.then(
    () => {
      throw new Error('expected an error');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  const apiErr = err as InstanceType<typeof OpenAI.APIError>;
  expect(apiErr.status).toBe(status);
  expect(apiErr.code).toBe(code);
  expect(apiErr.headers?.get('x-request-id')).toMatch(REQUEST_ID_PATTERN);
  return apiErr;
}

describe('authentication', () => {
  it('AUTH-1 AUTH-2 a Bearer key authenticates; no key is refused with 401 invalid_api_key', async () => {
    expect((await h.client().models.list()).data.length).toBeGreaterThan(0);
    const res = await raw('/models');
    expect(res.status).toBe(401);
    expect((await res.json()).error.code).toBe('invalid_api_key');
  });

  it.each([
    ['wrong', () => `sk-service-${'0'.repeat(48)}`],
    ['leading space (two after Bearer)', () => ` ${h.secret}`],
    ['inner space', () => `${h.secret.slice(0, 10)} ${h.secret.slice(10)}`],
    ['inner tab', () => `${h.secret.slice(0, 10)}\t${h.secret.slice(10)}`],
    ['space then more text', () => `${h.secret} x`],
    // Outer whitespace is not in this table: HTTP itself strips it before any server sees the value
    // (Fetch header normalization, RFC 9110 field values), so only inner whitespace can be refused.
  ])('AUTH-5 a %s key → 401 invalid_api_key (never trimmed)', async (_, secret) => {
    const res = await raw('/models', { headers: bearer(secret()) });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({
      error: {
        message: expect.any(String),
        type: 'authentication_error',
        param: null,
        code: 'invalid_api_key',
      },
    });
    expect(res.headers.get('x-request-id')).toMatch(REQUEST_ID_PATTERN);
  });

  it('AUTH-5 the SDK surfaces a wrong key as AuthenticationError', async () => {
    const err = await expectApiError(
      h.client(`sk-service-${'a'.repeat(48)}`).models.list(),
      401,
      'invalid_api_key',
    );
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('AUTH-5 a legacy-format key still authenticates', async () => {
    const legacy = `gw-legacy-${'x'.repeat(30)}`;
    await h.keys.importLegacy(h.accountId, { name: 'legacy', secret: legacy });
    expect((await h.client(legacy).models.list()).data.length).toBeGreaterThan(0);
  });

  it('AUTH-6 an account without a billing currency → 403 billing_currency_unset', async () => {
    const a = await h.newAccount({ country: null, credit: '0' });
    await expectApiError(h.client(a.secret).models.list(), 403, 'billing_currency_unset');
  });

  it('KEY-6 a deleted key stops authenticating at once (the cache is invalidated)', async () => {
    const a = await h.newAccount();
    const c = h.client(a.secret);
    await c.models.list(); // now cached in the proxy
    await h.keys.delete(a.accountId, a.keyId);
    await expectApiError(c.models.list(), 401, 'invalid_api_key');
  });

  it('KEY-5 a rotated secret fails at once and the new one works', async () => {
    const a = await h.newAccount();
    await h.client(a.secret).models.list();
    const { secret } = await h.keys.rotate(a.accountId, a.keyId);
    await expectApiError(h.client(a.secret).models.list(), 401, 'invalid_api_key');
    expect((await h.client(secret).models.list()).data.length).toBeGreaterThan(0);
  });

  it('AUTH-5 the 401 says a key was rotated or deleted when it was, and nothing of the sort for a guessed key', async () => {
    const a = await h.newAccount();
    await h.keys.rotate(a.accountId, a.keyId);
    const rotated = await raw('/models', { headers: bearer(a.secret) });
    expect(rotated.status).toBe(401);
    expect(((await rotated.json()) as { error: { message: string } }).error.message).toMatch(
      /rotated or deleted/,
    );
    const b = await h.newAccount();
    await h.keys.delete(b.accountId, b.keyId);
    const deleted = await raw('/models', { headers: bearer(b.secret) });
    expect(((await deleted.json()) as { error: { message: string } }).error.message).toMatch(
      /rotated or deleted/,
    );
    const guessed = await raw('/models', { headers: bearer(`sk-service-${'0'.repeat(48)}`) });
    expect(((await guessed.json()) as { error: { message: string } }).error.message).not.toMatch(
      /rotated|deleted/,
    );
  });
});

describe('errors and headers', () => {
  it('ERR-1 every response carries X-Request-Id: success, 404 route, preflight, stream, OpenAPI document, health', async () => {
    const responses = await Promise.all([
      raw('/models', { headers: bearer(h.secret) }),
      raw('/nope', { headers: bearer(h.secret) }),
      fetch(h.baseURL.replace('/v1', '/healthz')),
      fetch(h.baseURL.replace('/v1', '/openapi.json')),
      raw('/chat/completions', {
        method: 'OPTIONS',
        headers: {
          origin: 'http://console.test',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type',
        },
      }),
      raw('/chat/completions', {
        method: 'POST',
        headers: { ...bearer(h.secret), 'content-type': 'application/json' },
        body: JSON.stringify({ ...JSON.parse(chatBody), stream: true }),
      }),
    ]);
    const ids = new Set<string>();
    for (const res of responses) {
      const id = res.headers.get('x-request-id');
      expect(id).toMatch(REQUEST_ID_PATTERN);
      ids.add(id!);
      await res.arrayBuffer();
    }
    expect(ids.size).toBe(responses.length);
    expect(responses[1]!.status).toBe(404);
    expect(responses[4]!.status).toBe(204);
  });

  it('ERR-1 a client-sent X-Request-Id is not trusted', async () => {
    const res = await raw('/models', { headers: { ...bearer(h.secret), 'x-request-id': 'evil' } });
    expect(res.headers.get('x-request-id')).toMatch(REQUEST_ID_PATTERN);
  });

  it('CORS allows the configured console origin only, without credentials', async () => {
    const ok = await raw('/models', { headers: { ...bearer(h.secret), origin: 'http://console.test' } });
    expect(ok.headers.get('access-control-allow-origin')).toBe('http://console.test');
    expect(ok.headers.get('access-control-allow-credentials')).toBeNull();
    expect(ok.headers.get('access-control-expose-headers')).toContain('x-request-id');
    const other = await raw('/models', { headers: { ...bearer(h.secret), origin: 'http://evil.test' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = (origin: string) =>
      raw('/chat/completions', {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,x-stainless-os',
        },
      });
    const pre = await preflight('http://console.test');
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('http://console.test');
    expect(pre.headers.get('access-control-allow-methods')).toContain('POST');
    expect(pre.headers.get('access-control-allow-headers')).toBe('authorization,content-type,x-stainless-os');
    expect(pre.headers.get('access-control-allow-credentials')).toBeNull();
    const evil = await preflight('http://evil.test');
    expect(evil.headers.get('access-control-allow-origin')).toBeNull();
    expect(evil.headers.get('access-control-allow-headers')).toBeNull();
  });

  it.each([
    ['missing model', { messages: [{ role: 'user', content: 'x' }] }, 'model'],
    ['bad role', { model: CHAT_MODEL, messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role'],
    ['empty messages', { model: CHAT_MODEL, messages: [] }, 'messages'],
    [
      'negative max_tokens',
      { model: CHAT_MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: -1 },
      'max_tokens',
    ],
  ])('ERR-2 bad input (%s) → 400 naming the field, nothing charged', async (_, body, param) => {
    await h.quiesce();
    const before = await h.metering.balance(h.accountId);
    const err = await expectApiError(
      h.client().chat.completions.create(body as never),
      400,
      'invalid_request',
    );
    expect(err.param).toBe(param);
    expect(err.message).toContain(param);
    await h.quiesce();
    expect(await h.metering.balance(h.accountId)).toEqual(before);
  });

  it('ERR-2 malformed JSON → 400 invalid_request', async () => {
    const res = await raw('/chat/completions', {
      method: 'POST',
      headers: { ...bearer(h.secret), 'content-type': 'application/json' },
      body: '{"model":',
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error.code).toBe('invalid_request');
  });

  it('ERR-2 BILL-6 too little credit → 429 insufficient_quota with x-should-retry: false', async () => {
    const poor = await h.newAccount({ credit: '0' });
    const res = await raw('/chat/completions', {
      method: 'POST',
      headers: { ...bearer(poor.secret), 'content-type': 'application/json' },
      body: chatBody,
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('x-should-retry')).toBe('false');
    expect((await res.json()).error).toMatchObject({
      code: 'insufficient_quota',
      type: 'insufficient_quota',
    });
    // The SDK, whose default is to retry 429s, obeys the header: one request, not three.
    const sdk = h.client(poor.secret, { maxRetries: 2 });
    const t0 = Date.now();
    const err = await expectApiError(
      sdk.chat.completions.create({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'hi' }] }),
      429,
      'insufficient_quota',
    );
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(Date.now() - t0).toBeLessThan(400);
  });

  it('ERR-3 engines failing before the first byte → 500 server_error, retryable, nothing charged', async () => {
    for (const s of h.sims) s.setOptions({ failBeforeFirstByte: 1 });
    try {
      const before = await h.settled(h.accountId);
      const res = await raw('/chat/completions', {
        method: 'POST',
        headers: { ...bearer(h.secret), 'content-type': 'application/json' },
        body: chatBody,
      });
      expect(res.status).toBe(500);
      expect(res.headers.get('x-should-retry')).not.toBe('false');
      expect((await res.json()).error.code).toBe('server_error');
      expect(await h.settled(h.accountId)).toMatchObject({ balance: before.balance });
    } finally {
      for (const s of h.sims) s.setOptions({ failBeforeFirstByte: 0 });
    }
  });

  it('ERR-3 one failing engine is retried on another endpoint, invisibly', async () => {
    h.sims[0]!.setOptions({ failBeforeFirstByte: 1 });
    try {
      const c = h.client();
      for (let i = 0; i < 6; i++) {
        const r = await c.chat.completions.create({
          model: CHAT_MODEL,
          messages: [{ role: 'user', content: 'x' }],
          max_tokens: 2,
        });
        expect(r.model).toBe(CHAT_MODEL);
      }
    } finally {
      h.sims[0]!.setOptions({ failBeforeFirstByte: 0 });
    }
  });
});
