// A catalogued model whose engine is restarting (listed, no ready endpoint) answers a retryable
// 500 with Retry-After on every surface that calls an engine — the check is one, in
// proxy/engine/call.ts — and nothing is charged; an unknown model stays a 404 (issue 11 item 4).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { gradientPng } from '../../engines/simulator/media/png.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { type Harness, imageModel, startHarness } from './harness.ts';

const created = 1_700_000_000;
const CHAT = 'Restarting/Chat';
const EMBED = 'Restarting/Embed';
const IMAGE = 'Restarting/Image';

let h: Harness;
let origin: string;
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      entries: () => [
        { id: CHAT, kind: 'chat', pricing: { USD: { input: '1', output: '1' } }, endpoints: [], created },
        { id: EMBED, kind: 'embedding', pricing: { USD: { input: '1' } }, endpoints: [], created },
        imageModel(IMAGE, [], { edit: true }),
      ],
    },
  );
  origin = h.baseURL.replace(/\/v1$/, '');
});
afterAll(async () => {
  await h?.stop();
});

const user = [{ role: 'user', content: 'hi' }];
const edit = (model: string) => {
  const fd = new FormData();
  fd.append('model', model);
  fd.append('prompt', 'a hat');
  fd.append('image', new Blob([new Uint8Array(gradientPng(1, 8, 8))], { type: 'image/png' }), 'in.png');
  return fd;
};

/** Each surface that calls an engine: its path, and its body for a model. */
const surfaces: [string, string, (model: string) => object | FormData][] = [
  ['chat completions', '/v1/chat/completions', (model) => ({ model, messages: user, max_tokens: 3 })],
  [
    'a chat completion stream',
    '/v1/chat/completions',
    (model) => ({ model, messages: user, max_tokens: 3, stream: true }),
  ],
  ['embeddings', '/v1/embeddings', (model) => ({ model, input: 'hi' })],
  ['image generations', '/v1/images/generations', (model) => ({ model, prompt: 'a cat' })],
  ['image edits', '/v1/images/edits', edit],
  ['Messages', '/v1/messages', (model) => ({ model, messages: user, max_tokens: 3 })],
  ['a Messages stream', '/v1/messages', (model) => ({ model, messages: user, max_tokens: 3, stream: true })],
];
const modelFor = (path: string) =>
  path.includes('embeddings') ? EMBED : path.includes('images') ? IMAGE : CHAT;

async function call(path: string, body: object | FormData, secret: string) {
  const form = body instanceof FormData;
  const res = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, ...(form ? {} : { 'content-type': 'application/json' }) },
    body: form ? body : JSON.stringify(body),
  });
  return { res, json: (await res.json()) as Record<string, unknown> };
}

describe('a catalogued model with no ready engine (restarting)', () => {
  it.each(surfaces)(
    'ERR-3 %s: a retryable 500 with Retry-After, nothing charged',
    async (_name, path, body) => {
      const a = await h.newAccount();
      const { res, json } = await call(path, body(modelFor(path)), a.secret);
      expect(res.status).toBe(500);
      expect(res.headers.get('retry-after')).toBe('2');
      expect(res.headers.get('x-should-retry')).toBeNull();
      expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{24}$/);
      if (path === '/v1/messages') {
        expect(json).toMatchObject({
          type: 'error',
          error: {
            type: 'api_error',
            code: 'server_error',
            message: expect.stringMatching(/no engine ready/),
          },
          request_id: res.headers.get('x-request-id'),
        });
      } else {
        expect(json.error).toMatchObject({
          code: 'server_error',
          message: expect.stringMatching(/no engine ready/),
        });
      }
      await h.settled(a.accountId);
      expect(await usageRecords(h.redis.client(), a.accountId, { count: 10 })).toEqual([
        expect.objectContaining({ type: 'topup' }),
      ]);
      await expectLedgerClean(h.redis.client(), [a.accountId]);
    },
  );

  it.each(surfaces)('CAT-6 %s: an unknown model is still a 404', async (_name, path, body) => {
    const { res, json } = await call(path, body('Never/Catalogued'), h.secret);
    expect(res.status).toBe(404);
    expect(JSON.stringify(json)).toMatch(/does not exist/);
  });
});
