// Numbers bounded by the proxy itself (issue 11, the audit after it): a request past a bound gets a
// 400 naming the field from the proxy — the engine is never asked (the simulator accepts much of
// what is refused here: negative-free token ids of any count, any prompt length, any price) — and
// nothing is charged. The bounds are in /openapi.json too, and the context rule is exact where
// the engine's tokenizer answers: a request that fits to the last token is served.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { EMBED_MODEL, type Harness, startHarness } from './harness.ts';

/** A chat model whose context the tests fill: 64 tokens, at most 48 of them output. */
const SMALL_CHAT = 'Ctx/Small-Chat';
/** An embedding model with a 16-token context. */
const SMALL_EMBED = 'Ctx/Small-Embed';
/** A chat model whose output is so dear that 2 × 1,000,000 tokens of it cost more than 2^53 nano. */
const DEAR = 'Dear/Model';

let h: Harness;
let origin: string;
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [
        {
          id: SMALL_CHAT,
          kind: 'chat',
          pricing: { USD: { input: '1', output: '2' } },
          contextLength: 64,
          maxOutputTokens: 48,
          endpoints,
          created: 1_700_000_000,
        },
        {
          id: SMALL_EMBED,
          kind: 'embedding',
          pricing: { USD: { input: '0.1' } },
          contextLength: 16,
          endpoints,
          created: 1_700_000_000,
        },
        {
          id: DEAR,
          kind: 'chat',
          pricing: { USD: { input: '0', output: '9000000' } },
          maxOutputTokens: 1_000_000,
          endpoints,
          created: 1_700_000_000,
        },
      ],
    },
  );
  origin = h.baseURL.replace(/\/v1$/, '');
});
afterAll(async () => {
  await h?.stop();
});

/** Requests the engines served on /v1 (tokenizer calls are not counted). */
const engineCalls = () => h.sims.reduce((n, s) => n + s.stats().requests, 0);
/** The simulator's tokenizer: one token per word of up to four letters (no template tokens). */
const words = (n: number) => Array.from({ length: n }, () => 'word').join(' ');

/** The parts of an answer these tests read (an error body, or a completion's usage). */
interface Answer {
  type?: string;
  error: { message: string; code?: string; param?: string | null };
  usage: { prompt_tokens: number; completion_tokens: number };
}

async function post(path: string, body: unknown, secret = h.secret) {
  const res = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Answer };
}

/** Sends a request the proxy must refuse alone: a 400 naming `param`, no engine call, no charge. */
async function expectRefused(path: string, body: unknown, param: string, message?: RegExp) {
  const a = await h.newAccount();
  const before = engineCalls();
  const r = await post(path, body, a.secret);
  expect([r.status, r.json]).toEqual([400, expect.anything()]);
  if (path === '/v1/messages') {
    expect(r.json.type).toBe('error');
    expect(r.json.error.message).toContain(param);
  } else expect(r.json.error).toMatchObject({ code: 'invalid_request', param });
  if (message) expect(r.json.error.message).toMatch(message);
  expect(engineCalls()).toBe(before);
  await h.settled(a.accountId);
  expect(await usageRecords(h.redis.client(), a.accountId, { count: 10 })).toEqual([
    expect.objectContaining({ type: 'topup' }),
  ]);
  await expectLedgerClean(h.redis.client(), [a.accountId]);
  return r.json;
}

const chat = (extra: Record<string, unknown>) => ({
  model: SMALL_CHAT,
  messages: [{ role: 'user', content: words(40) }],
  ...extra,
});

describe('the prompt and max_tokens must fit the model context (as OpenAI and vLLM refuse it)', () => {
  it.each([
    ['max_tokens', chat({ max_tokens: 32 }), 'max_tokens'],
    ['max_completion_tokens', chat({ max_completion_tokens: 25 }), 'max_completion_tokens'],
    [
      'no max_tokens, a prompt alone past the context',
      chat({ messages: [{ role: 'user', content: words(70) }] }),
      'messages',
    ],
  ])('ERR-2 %s: 400 naming it, the engine never asked', async (_name, body, param) => {
    await expectRefused('/v1/chat/completions', body, param, /maximum context length is 64 tokens/);
  });

  it('ERR-2 the Messages surface: max_tokens past the context left by the prompt is a 400 naming it', async () => {
    const json = await expectRefused(
      '/v1/messages',
      { model: SMALL_CHAT, max_tokens: 30, messages: [{ role: 'user', content: words(40) }] },
      'max_tokens',
    );
    expect(json.error.message).toMatch(/70 tokens \(40 in the messages, 30 in the completion\)/);
  });

  it('a prompt and max_tokens that fill the context exactly are served (the count is the engine tokenizer’s, not a byte bound)', async () => {
    const r = await post('/v1/chat/completions', chat({ max_tokens: 24 }));
    expect(r.status).toBe(200);
    expect(r.json.usage.prompt_tokens).toBe(40);
  });

  it('without max_tokens, the output bound sent to the engine is what the context leaves', async () => {
    const before = h.sims.map((s) => s.received().length);
    const r = await post('/v1/chat/completions', chat({ ignore_eos: true }));
    expect(r.status).toBe(200);
    const sent = h.sims
      .flatMap((s, i) => s.received().slice(before[i]))
      .filter((x) => x.path === '/v1/chat/completions');
    expect(sent.map((x) => (x.json as { max_tokens: number }).max_tokens)).toEqual([24]);
    expect(r.json.usage.completion_tokens).toBe(24);
  });

  it('min_tokens above max_tokens is refused naming min_tokens', async () => {
    await expectRefused('/v1/chat/completions', chat({ max_tokens: 8, min_tokens: 9 }), 'min_tokens');
  });
});

describe('numbers bounded in the schemas: a 400 naming the field from the proxy', () => {
  const embed = (extra: Record<string, unknown>) => ({ model: EMBED_MODEL, ...extra });
  it.each([
    ['a negative token id', embed({ input: [5, -1] }), 'input[1]'],
    ['a token id past 2^31 − 1', embed({ input: [2 ** 31] }), 'input[0]'],
    ['a negative id in an array of token arrays', embed({ input: [[1], [2, -3]] }), 'input[1][1]'],
    ['2049 texts', embed({ input: Array.from({ length: 2049 }, () => 'x') }), 'input'],
    ['2049 token arrays', embed({ input: Array.from({ length: 2049 }, () => [1]) }), 'input'],
    ['an empty text', embed({ input: '' }), 'input'],
    ['dimensions 0', embed({ input: 'x', dimensions: 0 }), 'dimensions'],
    ['dimensions 8193', embed({ input: 'x', dimensions: 8193 }), 'dimensions'],
    [
      '17 token ids on a 16-token model',
      { model: SMALL_EMBED, input: Array.from({ length: 17 }, () => 1) },
      'input',
    ],
    [
      'a text provably longer than a 16-token context',
      { model: SMALL_EMBED, input: ['short', 'x'.repeat(17 * 256)] },
      'input[1]',
    ],
  ])('ERR-2 embeddings: %s', async (_name, body, param) => {
    await expectRefused('/v1/embeddings', body, param);
  });

  it.each([
    ['max_tokens 1,000,001', { max_tokens: 1_000_001 }, 'max_tokens'],
    ['max_completion_tokens 0', { max_completion_tokens: 0 }, 'max_completion_tokens'],
    ['min_tokens 1,000,001', { max_tokens: 8, min_tokens: 1_000_001 }, 'min_tokens'],
    ['n 17', { max_tokens: 8, n: 17 }, 'n'],
  ])('ERR-2 chat: %s', async (_name, extra, param) => {
    await expectRefused('/v1/chat/completions', chat(extra), param);
  });

  it('ERR-2 a hold past 2^53 nano (a dear model, max_tokens × n within bounds) is a 400 naming max_tokens, not a 500', async () => {
    await expectRefused(
      '/v1/chat/completions',
      { model: DEAR, messages: [{ role: 'user', content: 'hi' }], max_tokens: 1_000_000, n: 2 },
      'max_tokens',
      /too large to be paid for/,
    );
  });

  it('EMB-1 inputs within the bounds are served: 16 token ids, 2048 texts, a long text the engine counts', async () => {
    for (const body of [
      { model: SMALL_EMBED, input: Array.from({ length: 16 }, () => 1) },
      embed({ input: Array.from({ length: 2048 }, () => 'x'), dimensions: 8 }),
      { model: SMALL_EMBED, input: 'word '.repeat(3) },
    ]) {
      const r = await post('/v1/embeddings', body);
      expect([r.status, r.json.error]).toEqual([200, undefined]);
    }
  });

  it('/openapi.json shows the bounds', async () => {
    const doc = JSON.stringify(await (await fetch(`${origin}/openapi.json`)).json());
    const text = (path: string) => {
      const p = JSON.parse(doc).paths[path].post.requestBody.content['application/json'].schema;
      return p.properties as Record<string, Record<string, unknown>>;
    };
    const c = text('/v1/chat/completions');
    for (const k of ['max_tokens', 'max_completion_tokens', 'min_tokens'])
      expect(JSON.stringify(c[k]), k).toContain('"maximum":1000000');
    expect(JSON.stringify(c.n)).toContain('"maximum":16');
    const e = text('/v1/embeddings');
    expect(JSON.stringify(e.input)).toContain('"maxItems":2048');
    expect(JSON.stringify(e.input)).toContain(`"maximum":${2 ** 31 - 1}`);
    expect(JSON.stringify(e.dimensions)).toContain('"maximum":8192');
    const m = text('/v1/messages');
    expect(JSON.stringify(m.max_tokens)).toContain('"maximum":1000000');
  });
});
