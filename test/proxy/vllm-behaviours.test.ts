// Two things a real vLLM does that the proxy must answer right (issue 20), against the simulator
// taught to do them: (1) a request its engine refuses after the stream's 200 head (an error first
// frame with `code: 400`, then [DONE]) is the client's 400 in the dialect's shape — not retried,
// not failed over, not charged, not counted against the endpoint's health (ERR-2, ERR-3); (2) a
// stream cut before its final usage frame, the only one where vLLM reports cached tokens, bills
// its prompt at the uncached rate — the engine reported nothing cached, and hanging up just before
// the end must not buy the discount (BILL-1, BILL-2; proxy/engine/frames/cached-tokens.ts).
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

/** Served by the first simulator only, so the prefix cache a test warms is the one it reads. */
const ONE_ENGINE_MODEL = 'Org/One-Engine';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [
        {
          id: ONE_ENGINE_MODEL,
          kind: 'chat',
          pricing: { USD: { input: '1', cachedInput: '0.5', output: '2' } },
          maxOutputTokens: 256,
          endpoints: [endpoints[0]!],
          created: 1_700_000_000,
        },
      ],
    },
  );
});
afterAll(async () => {
  await h?.stop();
});

const chatRequests = () =>
  h.sims.flatMap((s) => s.received()).filter((r) => r.path === '/v1/chat/completions').length;

describe('a request the engine refuses inside its stream', () => {
  it('ERR-2 ERR-3 OpenAI: the engine’s 400 with its message and param, one engine call, no retry, nothing charged, endpoints healthy', async () => {
    const a = await h.newAccount({ credit: '1' });
    // The SDK retries a 5xx (or a Retry-After) twice here; a 400 it never retries.
    const client = h.client(a.secret, { maxRetries: 2 });
    const refused = [
      { stop_token_ids: [999_999], param: 'stop_token_ids' },
      { logit_bias: { '999999': 5 }, param: 'logit_bias' },
      { stop_token_ids: [151_936], param: 'stop_token_ids' },
    ];
    for (const { param, ...extra } of refused) {
      const before = chatRequests();
      const err = await client.chat.completions
        .create({
          model: CHAT_MODEL,
          messages: [{ role: 'user', content: 'hi' }],
          stream: true,
          max_tokens: 8,
          ...extra,
        } as OpenAI.Chat.ChatCompletionCreateParamsStreaming)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      const e = err as InstanceType<typeof OpenAI.BadRequestError>;
      expect(e.status).toBe(400);
      expect(e.param).toBe(param);
      expect(e.message).toContain(`in ${param} contain out-of-vocab token ids`);
      expect(e.headers?.get('retry-after') ?? null).toBeNull();
      expect(chatRequests() - before).toBe(1); // not retried, not failed over
    }
    // Three refusals in a row would trip an endpoint were they counted as its failures.
    expect(h.proxy.ctx.engine.health.down()).toEqual([]);
    expect(await h.settled(a.accountId)).toMatchObject({ balance: 1_000_000_000, held: 0 });
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 10 })).toEqual([
      expect.objectContaining({ type: 'topup' }),
    ]);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('ERR-2 Messages: the engine’s refusal is a 400 invalid_request_error the SDK does not retry, nothing charged', async () => {
    const a = await h.newAccount({ credit: '1' });
    const anthropic = new Anthropic({
      apiKey: a.secret,
      baseURL: h.baseURL.replace(/\/v1$/, ''),
      maxRetries: 2,
    });
    for (const s of h.sims) s.setOptions({ refuseInEngine: 'first-frame' });
    try {
      for (let i = 0; i < 3; i++) {
        const before = chatRequests();
        const err = await (async () => {
          const stream = anthropic.messages.stream({
            model: CHAT_MODEL,
            max_tokens: 8,
            messages: [{ role: 'user', content: 'hi' }],
          });
          for await (const _ of stream) {
            // nothing comes: the refusal is the answer's status
          }
        })().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(Anthropic.BadRequestError);
        const e = err as InstanceType<typeof Anthropic.BadRequestError>;
        expect(e.status).toBe(400);
        expect(e.error).toMatchObject({
          type: 'error',
          error: { type: 'invalid_request_error', message: expect.stringContaining('out-of-vocab') },
        });
        expect(chatRequests() - before).toBe(1);
      }
    } finally {
      for (const s of h.sims) s.setOptions({ refuseInEngine: false });
    }
    expect(h.proxy.ctx.engine.health.down()).toEqual([]);
    expect(await h.settled(a.accountId)).toMatchObject({ balance: 1_000_000_000, held: 0 });
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('CHAT-4 a refusal frame after content stays the in-band error it is, charged for what was delivered', async () => {
    const a = await h.newAccount({ credit: '1' });
    for (const s of h.sims) s.setOptions({ refuseInEngine: 'after-content' });
    let delivered = 0;
    let err: unknown;
    try {
      const stream = await h.client(a.secret, { maxRetries: 2 }).chat.completions.create({
        model: CHAT_MODEL,
        messages: [{ role: 'user', content: 'hi' }],
        stream: true,
        max_tokens: 40,
        ignore_eos: true,
      } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
      err = await (async () => {
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content) delivered++;
      })().catch((e: unknown) => e);
    } finally {
      for (const s of h.sims) s.setOptions({ refuseInEngine: false });
    }
    // The head went out with status 200: the error arrives in-band, as the SDK raises it.
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBeUndefined();
    expect(delivered).toBeGreaterThan(0);
    await h.settled(a.accountId);
    const [charge] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(charge).toMatchObject({ type: 'charge', outputTokens: delivered });
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});

describe('a cut stream’s cached prompt', () => {
  // 641 one-token words: the engine caches whole 16-token blocks and never the last token, so a
  // warmed prompt has 640 cached tokens — which a cut stream never hears of.
  const words = Array.from({ length: 641 }, () => 'word').join(' ');
  const messages = [{ role: 'user' as const, content: words }];
  const IN = 1_000; // nano per token: input 1, cached 0.5, output 2 USD per 1M
  const CACHED = 500;
  const OUT = 2_000;

  it('BILL-1 BILL-2 a stream the client cuts before the final usage frame is billed at the uncached rate', async () => {
    const a = await h.newAccount({ credit: '1' });
    const client = h.client(a.secret);
    const full = async () => {
      const stream = await client.chat.completions.create({
        model: ONE_ENGINE_MODEL,
        messages,
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: 4,
      });
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      return usage!;
    };
    const warm = await full(); // the engine caches the prompt
    expect(warm.prompt_tokens).toBe(641);

    h.sims[0]!.setOptions({ itlMs: 20 });
    try {
      const stream = await client.chat.completions.create({
        model: ONE_ENGINE_MODEL,
        messages,
        stream: true,
        max_tokens: 200,
        ignore_eos: true,
      } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
      let chunks = 0;
      for await (const _ of stream) if (++chunks === 5) break; // the SDK aborts the request
    } finally {
      h.sims[0]!.setOptions({ itlMs: 1 });
    }
    // What the engine had cached for that prompt, as its final usage frame tells on a whole call.
    const again = await full();
    expect(again.prompt_tokens_details?.cached_tokens).toBe(640);

    await h.settled(a.accountId);
    const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 10 }))
      .filter((r) => r.type === 'charge')
      .reverse();
    expect(charges).toHaveLength(3);
    const cut = charges[1]!;
    expect(cut.outputTokens).toBeGreaterThan(0);
    expect(cut.outputTokens).toBeLessThan(200);
    expect(cut).toMatchObject({ inputTokens: 641, cachedTokens: 0 });
    expect(cut.amount).toBe(641 * IN + cut.outputTokens! * OUT);
    // The whole calls, whose final usage frame reported the cache, paid the cached rate.
    expect(charges[2]).toMatchObject({ inputTokens: 641, cachedTokens: 640 });
    expect(charges[2]!.amount).toBe(1 * IN + 640 * CACHED + charges[2]!.outputTokens! * OUT);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('BILL-2 a Messages stream cut the same way is billed by the same rule', async () => {
    const a = await h.newAccount({ credit: '1' });
    const anthropic = new Anthropic({
      apiKey: a.secret,
      baseURL: h.baseURL.replace(/\/v1$/, ''),
      maxRetries: 0,
    });
    const ask = (max_tokens: number) =>
      anthropic.messages.stream({
        model: ONE_ENGINE_MODEL,
        max_tokens,
        messages: [{ role: 'user', content: words }],
      });
    const warm = await ask(4).finalMessage();
    const prompt = warm.usage.input_tokens + (warm.usage.cache_read_input_tokens ?? 0);
    h.sims[0]!.setOptions({ itlMs: 20 });
    try {
      let deltas = 0;
      for await (const ev of ask(200)) if (ev.type === 'content_block_delta' && ++deltas === 5) break;
    } finally {
      h.sims[0]!.setOptions({ itlMs: 1 });
    }
    await h.settled(a.accountId);
    const [cut] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(cut!.outputTokens).toBeGreaterThan(0);
    expect(cut!.outputTokens).toBeLessThan(200);
    expect(cut).toMatchObject({ type: 'charge', inputTokens: prompt, cachedTokens: 0 });
    expect(cut!.amount).toBe(prompt * IN + cut!.outputTokens! * OUT);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});
