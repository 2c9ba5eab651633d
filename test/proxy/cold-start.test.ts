// Scale to zero and back, the proxy's half (issue 32 item 2): a model the operator scales keeps its
// catalogue entry with no endpoint; a call for it is held (published to Redis as `held` demand, the
// operator's signal to wake it) and sent the moment the catalogue shows an endpoint. Both dialects
// and the Responses API, streamed and not, succeed through the official SDKs; streamed callers see
// keep-alives in their dialect while they wait (SSE comments; Messages `ping` events); a held call
// past the model's coldStartTimeout is a 503 with Retry-After and nothing charged.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CatalogueEntryInput } from '../../core/catalogue/index.ts';
import { DemandStore } from '../../core/demand/demand.ts';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

const COLD = 'Sleepy/Chat';
const BRIEF = 'Sleepy/Brief';
const cold = (id: string, endpoints: { url: string }[], timeoutMs: number): CatalogueEntryInput => ({
  id,
  kind: 'chat',
  servedName: CHAT_MODEL,
  pricing: { USD: { input: '1', output: '2' } },
  endpoints,
  coldStartTimeoutMs: timeoutMs,
  created: 1_700_000_000,
});

let h: Harness;
let demand: DemandStore;
beforeAll(async () => {
  h = await startHarness(
    { PROXY_DEMAND_PUBLISH_MS: '100', PROXY_MESSAGES_PING_MS: '100' },
    { entries: () => [cold(COLD, [], 60_000), cold(BRIEF, [], 1_500)] },
  );
  demand = new DemandStore(h.redis.client());
});
afterAll(async () => {
  await h?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the proxies' published demand shows `n` calls held for COLD. */
async function heldInRedis(n: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const { byModel } = await demand.read();
    if ((byModel.get(COLD)?.held ?? 0) === n) return;
    await sleep(25);
  }
  throw new Error(`never saw ${n} held call(s) for ${COLD} in Redis`);
}

/** Runs `call` against the sleeping model, wakes it once the call is held, and puts it back to sleep. */
async function wakeDuring<T>(call: () => Promise<T>): Promise<T> {
  const pending = call();
  pending.catch(() => {});
  await heldInRedis(1);
  // Held a while longer, so streamed calls see keep-alives before the first token.
  await sleep(350);
  await h.catalogue.put(cold(COLD, [{ url: h.sims[0]!.url }], 60_000));
  try {
    return await pending;
  } finally {
    await h.catalogue.put(cold(COLD, [], 60_000));
    await heldInRedis(0);
  }
}

const anthropic = () =>
  new Anthropic({ apiKey: h.secret, baseURL: h.baseURL.replace(/\/v1$/, ''), maxRetries: 0 });
const user = [{ role: 'user' as const, content: 'wake up' }];

describe('a call for a model scaled to zero is held until it wakes, then answered', () => {
  it('chat completions, whole', async () => {
    const r = await wakeDuring(() =>
      h.client().chat.completions.create({ model: COLD, messages: user, max_tokens: 4 }),
    );
    expect(r.model).toBe(COLD);
    expect(r.choices[0]?.message.content).toBeTruthy();
  });

  it('chat completions, streamed', async () => {
    const text = await wakeDuring(async () => {
      const s = await h.client().chat.completions.create({
        model: COLD,
        messages: user,
        max_tokens: 4,
        stream: true,
      });
      let out = '';
      for await (const c of s) out += c.choices[0]?.delta.content ?? '';
      return out;
    });
    expect(text.length).toBeGreaterThan(0);
  });

  it('Messages, whole and streamed', async () => {
    const whole = await wakeDuring(() =>
      anthropic().messages.create({ model: COLD, messages: user, max_tokens: 4 }),
    );
    expect(whole.content[0]).toMatchObject({ type: 'text' });
    const streamed = await wakeDuring(() =>
      anthropic().messages.stream({ model: COLD, messages: user, max_tokens: 4 }).finalMessage(),
    );
    expect(streamed.stop_reason).toBeTruthy();
  });

  it('Responses, whole and streamed', async () => {
    const whole = await wakeDuring(() =>
      h.client().responses.create({ model: COLD, input: 'wake up', max_output_tokens: 16 }),
    );
    // The simulator talks past 16 tokens: `incomplete` (max_output_tokens) is an answer too.
    expect(['completed', 'incomplete']).toContain(whole.status);
    expect(whole.output_text.length).toBeGreaterThan(0);
    const streamed = await wakeDuring(async () => {
      const s = await h.client().responses.create({
        model: COLD,
        input: 'wake up',
        max_output_tokens: 16,
        stream: true,
      });
      let last = '';
      for await (const e of s) last = e.type;
      return last;
    });
    expect(['response.completed', 'response.incomplete']).toContain(streamed);
  });

  it('streamed callers get keep-alives in their dialect while held: SSE comments, Messages pings', async () => {
    const raw = (path: string, body: object) =>
      fetch(`${h.baseURL.replace(/\/v1$/, '')}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: COLD, messages: user, max_tokens: 4, stream: true, ...body }),
      }).then((r) => r.text());
    const chat = await wakeDuring(() => raw('/v1/chat/completions', {}));
    expect(chat).toMatch(/^: keep-alive\n\n/);
    expect(chat).toMatch(/data: \[DONE\]\n\n$/);
    const messages = await wakeDuring(() => raw('/v1/messages', {}));
    expect(messages).toMatch(/^event: message_start\n/);
    expect(messages).toContain('event: ping\n');
    expect(messages).toContain('event: message_stop\n');
  });

  it('a held call past coldStartTimeout is a 503 with Retry-After, and nothing is charged', async () => {
    const a = await h.newAccount();
    const started = Date.now();
    const res = await fetch(`${h.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: BRIEF, messages: user, max_tokens: 4 }),
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_400);
    expect(res.status).toBe(503);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('model_cold_start_timeout');
    await h.settled(a.accountId);
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 10 })).toEqual([
      expect.objectContaining({ type: 'topup' }),
    ]);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('a streamed call past coldStartTimeout: keep-alives, then the error in-band, and nothing is charged', async () => {
    const a = await h.newAccount();
    const res = await fetch(`${h.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: BRIEF, messages: user, max_tokens: 4, stream: true }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/^: keep-alive\n\n/);
    expect(text).toContain('"code":"model_cold_start_timeout"');
    await h.settled(a.accountId);
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 10 })).toEqual([
      expect.objectContaining({ type: 'topup' }),
    ]);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});
