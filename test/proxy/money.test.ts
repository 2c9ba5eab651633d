// A call's money through the real proxy at its edges (issue "Money that cannot leak"): holds that
// outlive their ttl, holds voided under a running call, vision prompts whose tokens their bytes do
// not bound, other replicas' idle leases, near-limit reruns, engines that misreport usage, streams
// that fail half-way. Each test ends with the ledger check.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatNano, parseDecimalToNano } from '../../core/money.ts';
import { usageRecords } from '../../core/usage/usage.ts';
import { DEFAULT_PROMPT_BOUNDS } from '../../proxy/billing/text-quote.ts';
import { type FixedEngine, startFixedEngine } from '../helpers/fixed-engine.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { until } from '../helpers/until.ts';
import {
  ALIAS_MODEL,
  CHAT_MODEL,
  EMBED_MODEL,
  type Harness,
  secondReplica,
  startHarness,
} from './harness.ts';

const messages = [{ role: 'user' as const, content: 'hi' }];
const IN = 1_000; // nano per input token (harness prices: 1 / 2 USD per 1M tokens, cached 0.5)
const CACHED = 500;
const OUT = 2_000;
const { perMessage, perRequest } = DEFAULT_PROMPT_BOUNDS;
const promptBound = (Buffer.byteLength(JSON.stringify(messages)) + 2 * perMessage + perRequest) * IN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Usage = {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
};
const costOf = (u: Usage) => {
  const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
  return (u.prompt_tokens - cached) * IN + cached * CACHED + u.completion_tokens * OUT;
};

/** The harness's chat model on one engine only. */
const ONE_ENGINE = 'Org/One-Engine';
const VISION = 'Org/Vision';
const STINGY = 'Org/Vision-Stingy-Bounds';
const FIXED = 'Fixed/Engine';

let short: Harness; // leases off, holds of 600 ms, a fast sweeper
let fixed: FixedEngine;
beforeAll(async () => {
  short = await startHarness({
    PROXY_LEASES: 'false',
    HOLD_TTL_MS: '600',
    HOLD_SWEEP_INTERVAL_MS: '50',
    HOLD_SWEEPER_LOCK_MS: '300',
  });
  fixed = await startFixedEngine({});
  const created = 1_700_000_000;
  const usd = { USD: { input: '1', cachedInput: '0.5', output: '2' } };
  await short.catalogue.put({
    id: ONE_ENGINE,
    kind: 'chat',
    pricing: usd,
    endpoints: [{ url: short.sims[0]!.url }],
    created,
  });
  await short.catalogue.put({
    id: FIXED,
    kind: 'chat',
    contextLength: 8_192,
    pricing: usd,
    endpoints: [{ url: fixed.url }],
    created,
  });
  await short.snapshot.refresh();
});
afterAll(async () => {
  await short?.stop();
  await fixed?.close();
});

describe('holds live as long as their calls', () => {
  it('BILL-5 a stream that outlives its hold ttl keeps its hold (its proxy renews it) and is charged in full', async () => {
    const a = await short.newAccount({ credit: '1' });
    const c = short.client(a.secret);
    for (const s of short.sims) s.setOptions({ itlMs: 10 });
    let usage: Usage | undefined;
    let requestId: string | null = null;
    try {
      const { data: stream, response } = await c.chat.completions
        .create({
          model: CHAT_MODEL,
          messages,
          stream: true,
          stream_options: { include_usage: true },
          max_tokens: 150,
          ignore_eos: true, // vLLM: run to max_tokens, ~1.5 s at 10 ms a token
        } as OpenAI.Chat.ChatCompletionCreateParamsStreaming)
        .withResponse();
      requestId = response.headers.get('x-request-id');
      // Meanwhile the account keeps reserving (a reserve voids expired holds on its way) and the
      // sweeper runs every 50 ms: a hold left to its 600 ms ttl would be voided twice over.
      const others = (async () => {
        for (let i = 0; i < 6; i++) {
          await c.embeddings.create({ model: EMBED_MODEL, input: `other ${i}` });
          await sleep(250);
        }
      })();
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      await others;
    } finally {
      for (const s of short.sims) s.setOptions({ itlMs: 1 });
    }
    expect(usage?.completion_tokens).toBe(150);
    await short.settled(a.accountId);
    const entries = await usageRecords(short.redis.client(), a.accountId, { count: 50 });
    expect(entries.filter((e) => e.type === 'void')).toEqual([]);
    const charge = entries.find((e) => e.requestId === requestId);
    expect(charge).toMatchObject({ type: 'charge', amount: costOf(usage!), short: 0, source: 'hold' });
    await expectLedgerClean(short.redis.client(), [a.accountId]);
  });

  it('BILL-6 near the limit, a reserve made alongside the call that comes back short reruns lowered on any endpoint: a shortened answer, never a 500', async () => {
    const a = await short.newAccount({ credit: '1' });
    const c = short.client(a.secret);
    await c.chat.completions.create({ model: ONE_ENGINE, messages, max_tokens: 5 }); // the proxy now knows a big balance
    await short.quiesce(); // its settlement landed
    // Another party (another replica's calls) takes all but the prompt and 50 output tokens.
    const { available } = await short.metering.balance(a.accountId);
    const others = available - (promptBound + 50 * OUT);
    expect(
      (
        await short.metering.reserve({
          accountId: a.accountId,
          holdId: 'other',
          min: others,
          max: others,
          ttlMs: 60_000,
        })
      ).ok,
    ).toBe(true);
    // So the proxy reserves alongside the engine call, the reserve comes back short, the call is
    // cancelled and runs again with max_tokens 50 — on the model's only engine, already tried once.
    const r = await c.chat.completions
      .create({
        model: ONE_ENGINE,
        messages,
        max_tokens: 100,
        ignore_eos: true,
      } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming)
      .withResponse();
    expect(r.response.status).toBe(200);
    expect(r.data.usage!.completion_tokens).toBe(50);
    const sent = short.sims[0]!.received().filter((x) => x.path === '/v1/chat/completions');
    expect(sent.slice(-2).map((x) => (x.json as { max_tokens: number }).max_tokens)).toEqual([100, 50]);
    await short.metering.release(a.accountId, 'other');
    await short.settled(a.accountId);
    await expectLedgerClean(short.redis.client(), [a.accountId]);
  });
});

describe('engines that misreport usage', () => {
  const completion = (usage: unknown) => ({
    id: 'chatcmpl-fixed',
    object: 'chat.completion',
    created: 1,
    model: FIXED,
    choices: [{ index: 0, message: { role: 'assistant', content: 'twelve bytes' }, finish_reason: 'stop' }],
    ...(usage === undefined ? {} : { usage }),
  });

  it('absurd usage (10^12 tokens) is billed no further than the model allows, and leaves no hold behind', async () => {
    const a = await short.newAccount({ credit: '1' });
    fixed.answer(completion({ prompt_tokens: 1e12, completion_tokens: 1e12, total_tokens: 2e12 }));
    const r = await short
      .client(a.secret)
      .chat.completions.create({ model: FIXED, messages, max_tokens: 10 });
    expect(r.choices[0]!.message.content).toBe('twelve bytes');
    const b = await short.settled(a.accountId);
    const [charge] = await usageRecords(short.redis.client(), a.accountId, { count: 1 });
    // Input at most the context length (8192), output at most max_tokens.
    expect(charge).toMatchObject({ inputTokens: 8_192, outputTokens: 10, amount: 8_192 * IN + 10 * OUT });
    expect(b).toMatchObject({ balance: 1e9 - (8_192 * IN + 10 * OUT), held: 0 });
    // Negative counts are no usage at all: the proxy counts for itself.
    fixed.answer(completion({ prompt_tokens: -5, completion_tokens: -1, total_tokens: -6 }));
    await short.client(a.secret).chat.completions.create({ model: FIXED, messages, max_tokens: 10 });
    await short.settled(a.accountId);
    const [counted] = await usageRecords(short.redis.client(), a.accountId, { count: 1 });
    expect(counted!.outputTokens).toBeGreaterThan(0);
    await expectLedgerClean(short.redis.client(), [a.accountId]);
  });

  it('BILL-1 BILL-7 a non-streaming answer without usage is billed from the proxy’s own count, output included, and says so', async () => {
    const a = await short.newAccount({ credit: '1' });
    fixed.answer(completion(undefined));
    const r = await short
      .client(a.secret)
      .chat.completions.create({ model: FIXED, messages, max_tokens: 10 });
    // The engine reported none: the answer carries the counts it was billed for, and what that cost
    // (BILL-7: every response says what it cost).
    expect(r.usage).toMatchObject({
      prompt_tokens: 8,
      completion_tokens: 3,
      cost: formatNano(8 * IN + 3 * OUT),
      currency: 'USD',
    });
    await short.settled(a.accountId);
    const [charge] = await usageRecords(short.redis.client(), a.accountId, { count: 1 });
    // About four bytes a token: the prompt's JSON (32 bytes) and 'twelve bytes' (12).
    expect(charge).toMatchObject({ inputTokens: 8, outputTokens: 3, amount: 8 * IN + 3 * OUT });
    await expectLedgerClean(short.redis.client(), [a.accountId]);
  });
});

describe('streams that fail half-way', () => {
  it('CHAT-4 BILL-5 a stream that fails mid-way is charged for exactly what it delivered', async () => {
    const a = await short.newAccount({ credit: '1' });
    for (const s of short.sims) s.setOptions({ failMidStream: 1 });
    let delivered = 0;
    try {
      const stream = await short.client(a.secret).chat.completions.create({
        model: CHAT_MODEL,
        messages,
        stream: true,
        max_tokens: 60,
        ignore_eos: true,
      } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
      const err = await (async () => {
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content) delivered++;
      })().catch((e: unknown) => e);
      expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('server_error');
    } finally {
      for (const s of short.sims) s.setOptions({ failMidStream: 0 });
    }
    await short.settled(a.accountId);
    const [charge] = await usageRecords(short.redis.client(), a.accountId, { count: 1 });
    expect(delivered).toBeGreaterThan(0);
    expect(delivered).toBeLessThan(60);
    expect(charge!.outputTokens).toBe(delivered);
    await expectLedgerClean(short.redis.client(), [a.accountId]);
  });
});

describe('vision prompts', () => {
  let v: Harness;
  const IMAGE_TOKENS = 1_601; // a Llama-3.2-Vision tile
  const TEMPLATE = 5;
  const image = { type: 'image_url' as const, image_url: { url: 'https://images.example.com/cat.png' } };
  const prompt = [
    {
      role: 'user' as const,
      content: [{ type: 'text' as const, text: 'what differs between these' }, image, image, image, image],
    },
  ];
  beforeAll(async () => {
    v = await startHarness();
    for (const s of v.sims) s.setOptions({ imageTokens: IMAGE_TOKENS, templateTokens: TEMPLATE });
    const base = {
      kind: 'chat' as const,
      pricing: { USD: { input: '1', cachedInput: '0.5', output: '2' } },
      capabilities: { tools: false, vision: true, edit: false, imageToVideo: false },
      endpoints: v.sims.map((s) => ({ url: s.url })),
      created: 1,
    };
    await v.catalogue.put({ ...base, id: VISION, promptBounds: { perImage: 1_601, perMessage: 8 } });
    await v.catalogue.put({
      ...base,
      id: STINGY,
      promptBounds: { perImage: 10, perMessage: 0, perRequest: 0 },
    });
    await v.snapshot.refresh();
  });
  afterAll(async () => v?.stop());

  it('BILL-1 a four-image prompt: the hold bounds the cost, and the charge is the true cost (reserved and leased alike)', async () => {
    const a = await v.newAccount({ credit: '1' });
    const c = v.client(a.secret);
    // The first call reserves in Redis; later ones carve from the lease it started.
    const calls = [];
    for (let i = 0; i < 3; i++) {
      calls.push(
        await c.chat.completions.create({ model: VISION, messages: prompt, max_tokens: 20 }).withResponse(),
      );
      // The lease starts and grows in the background: the next call carves from it once it holds money.
      await until(() => v.proxy.ctx.billing.leases!.freeOf(a.accountId) > 0, 'the lease holds money');
    }
    await v.settled(a.accountId);
    const entries = await usageRecords(v.redis.client(), a.accountId, { count: 5 });
    for (const r of calls) {
      expect(r.data.usage!.prompt_tokens).toBeGreaterThan(4 * IMAGE_TOKENS); // far beyond its ~400 bytes
      const charge = entries.find((e) => e.requestId === r.response.headers.get('x-request-id'));
      expect(charge).toMatchObject({ amount: costOf(r.data.usage!), cost: costOf(r.data.usage!), short: 0 });
      expect(charge!.held).toBeGreaterThanOrEqual(charge!.amount);
    }
    const sources = (await usageRecords(v.redis.client(), a.accountId, { count: 5 })).map((e) => e.source);
    expect(sources).toContain('hold');
    expect(sources).toContain('lease');
    await expectLedgerClean(v.redis.client(), [a.accountId]);
  });

  it('BILL-5 a hold that falls short of the cost (promptBounds set too low) still charges the true cost, from the spare balance', async () => {
    const a = await v.newAccount({ credit: '1' });
    const r = await v
      .client(a.secret)
      .chat.completions.create({ model: STINGY, messages: prompt, max_tokens: 20 });
    await v.settled(a.accountId);
    const [charge] = await usageRecords(v.redis.client(), a.accountId, { count: 1 });
    expect(charge).toMatchObject({ amount: costOf(r.usage!), cost: costOf(r.usage!), short: 0 });
    expect(charge!.held).toBeLessThan(charge!.amount);
    await expectLedgerClean(v.redis.client(), [a.accountId]);
  });
});

describe('two replicas', () => {
  let pair: Harness;
  let second: Awaited<ReturnType<typeof secondReplica>>;
  let viaSecond: (secret: string) => OpenAI;
  beforeAll(async () => {
    // Leases stay until the test is done with them (no idle release).
    pair = await startHarness({ PROXY_LEASE_IDLE_MS: '60000' });
    second = await secondReplica(pair);
    viaSecond = (secret) => new OpenAI({ apiKey: secret, baseURL: second.baseURL, maxRetries: 0 });
  });
  afterAll(async () => {
    await second?.stop();
    await pair?.stop();
  });

  /** An account on which the second replica holds an idle lease. */
  async function leasedBySecond() {
    const a = await pair.newAccount({ credit: '0.01' });
    for (let i = 0; i < 4; i++)
      await viaSecond(a.secret).chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 5 });
    // Its four settlements land (waited for, not slept on: on a loaded machine 100 ms was not
    // always enough, and a stale balance made this test's arithmetic wrong); its lease stays.
    const charged = async () =>
      (await usageRecords(pair.redis.client(), a.accountId, { count: 20 })).filter((r) => r.type === 'charge')
        .length;
    for (const until = Date.now() + 10_000; (await charged()) < 4 && Date.now() < until; ) await sleep(20);
    expect(await charged()).toBe(4);
    const b = await pair.metering.balance(a.accountId);
    expect(b.held).toBeGreaterThan(0); // the second replica's lease, unused
    return { a, b };
  }

  // ALIAS_MODEL: priced as CHAT_MODEL but with no output bound of its own, so the call may ask for
  // every token the balance covers.
  it('BILL-6 another replica’s idle lease never lowers max_tokens the balance covers', async () => {
    const { a, b } = await leasedBySecond();
    const maxTokens = Math.floor((b.balance - promptBound) / OUT);
    expect(promptBound + maxTokens * OUT).toBeGreaterThan(b.available); // the lease sits on what it needs
    const r = await pair
      .client(a.secret)
      .chat.completions.create({ model: ALIAS_MODEL, messages, max_tokens: maxTokens });
    expect(r.choices[0]!.finish_reason).toBeDefined();
    // The engine was asked for every token the balance covers (the other calls asked for 5).
    const asked = pair.sims
      .flatMap((s) => s.received())
      .filter((x) => x.path === '/v1/chat/completions')
      .map((x) => (x.json as { max_tokens: number }).max_tokens)
      .filter((m) => m !== 5);
    expect(asked).toEqual([maxTokens]);
    await second.proxy.ctx.billing.quiesce();
    await pair.settled(a.accountId);
    await expectLedgerClean(pair.redis.client(), [a.accountId]);
  });

  it('BILL-6 another replica’s idle lease never turns a call the balance covers into a 429', async () => {
    const { a, b } = await leasedBySecond();
    // Someone else holds everything but the lease and this call's prompt.
    const others = b.available - promptBound + 1;
    if (others > 0)
      await pair.metering.reserve({
        accountId: a.accountId,
        holdId: 'other',
        min: others,
        max: others,
        ttlMs: 60_000,
      });
    const r = await pair
      .client(a.secret)
      .chat.completions.create({ model: CHAT_MODEL, messages, max_tokens: 1 });
    expect(r.usage!.completion_tokens).toBe(1);
    if (others > 0) await pair.metering.release(a.accountId, 'other');
    await second.proxy.ctx.billing.quiesce();
    await pair.settled(a.accountId);
    await expectLedgerClean(pair.redis.client(), [a.accountId]);
  });
});

describe('a replica cut off from Redis', () => {
  let cut: Harness;
  beforeAll(async () => {
    cut = await startHarness({
      PROXY_LEASES: 'false',
      HOLD_TTL_MS: '600',
      HOLD_SWEEP_INTERVAL_MS: '50',
      HOLD_SWEEPER_LOCK_MS: '300',
    });
  });
  afterAll(async () => cut?.stop());

  it('a hold its owner could not renew is voided in the ledger; its late settlement charges what the balance still has and records the rest', async () => {
    const a = await cut.newAccount({ credit: '1' });
    // The replica's renewals stop reaching Redis (as when it is cut off longer than the ttl).
    cut.proxy.ctx.billing.renewer.stop();
    for (const s of cut.sims) s.setOptions({ itlMs: 10 });
    let usage: Usage | undefined;
    try {
      const stream = await cut.client(a.secret).chat.completions.create({
        model: CHAT_MODEL,
        messages,
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: 150,
        ignore_eos: true,
      } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
      let n = 0;
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        if (++n === 100) {
          // By now (~1 s) the sweeper voided the hold; someone else takes the whole balance meanwhile.
          const { available } = await cut.metering.balance(a.accountId);
          await cut.metering.reserve({
            accountId: a.accountId,
            holdId: 'other',
            min: available,
            max: available,
            ttlMs: 60_000,
          });
        }
      }
    } finally {
      for (const s of cut.sims) s.setOptions({ itlMs: 1 });
    }
    await cut.quiesce();
    const entries = await usageRecords(cut.redis.client(), a.accountId, { count: 10 });
    const voided = entries.find((e) => e.type === 'void');
    expect(voided).toMatchObject({ reason: 'hold_expired' });
    const charge = entries.find((e) => e.type === 'charge');
    expect(charge).toMatchObject({ amount: 0, cost: costOf(usage!), short: costOf(usage!), source: 'none' });
    const metrics = await (await fetch(cut.metricsURL)).text();
    expect(metrics).toMatch(/mp_proxy_holds_voided_total\{reason="hold_expired"\} 1\b/);
    expect(metrics).toMatch(
      new RegExp(
        `mp_proxy_credits_uncollected_nano_total\\{model="${CHAT_MODEL}",currency="USD"\\} ${costOf(usage!)}\\b`,
      ),
    );
    await cut.metering.release(a.accountId, 'other');
    expect(await cut.metering.balance(a.accountId)).toEqual({
      balance: parseDecimalToNano('1'),
      held: 0,
      available: parseDecimalToNano('1'),
    });
    await expectLedgerClean(cut.redis.client(), [a.accountId]);
  });
});
