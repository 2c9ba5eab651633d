// The proxy's engine-facing suite, run twice: against the simulator and against a real llama.cpp
// server (./server.ts, the tiny model of ./write_tiny_gguf.py) — chat, streams with and without
// usage, a client abort, tools, Messages streamed and not, embeddings, and each call's charge
// checked against its usage record and the ledger; on llama.cpp alone, issue 20's two defects as
// this engine shows them (a refusal, a cut stream with a cached prompt). Only what is about the
// proxy is here; the simulator's failure injection stays in test/proxy/. Assertions hold for both
// engines: counts come from the engine's usage, never from what the simulator alone would say.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { CLIENT_FIELDS } from '../../proxy/engine/frames/members.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { CHAT_MODEL, chatModelCost, EMBED_MODEL, type Harness, startHarness } from '../proxy/harness.ts';
import { type LlamaServer, startLlamaServer } from './server.ts';

const user = (content: string) => [{ role: 'user' as const, content }];
const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', enum: ['Paris', 'Rome'] } },
      required: ['city'],
    },
  },
};

describe.each(['simulator', 'llamacpp'] as const)('%s behind the proxy', (engine) => {
  let h: Harness;
  let base: string;
  const servers: LlamaServer[] = [];
  beforeAll(async () => {
    let engines: Record<string, { url: string }[]> | undefined;
    if (engine === 'llamacpp') {
      const [chat, embed] = await Promise.all([
        startLlamaServer({ servedName: CHAT_MODEL }),
        startLlamaServer({ servedName: EMBED_MODEL, embeddings: true, parallel: 1 }),
      ]);
      servers.push(chat, embed);
      engines = { [CHAT_MODEL]: [chat], [EMBED_MODEL]: [embed] };
    }
    h = await startHarness({}, engines ? { engines } : {});
    base = h.baseURL.replace(/\/v1$/, '');
  });
  afterAll(async () => {
    await h?.stop();
    await Promise.all(servers.map((s) => s.stop()));
  });

  /** The account's one charge, checked against the price list and the usage the client saw. */
  async function oneCharge(accountId: string, usage?: { prompt_tokens: number; completion_tokens: number }) {
    await h.settled(accountId);
    const records = (await usageRecords(h.redis.client(), accountId, { count: 10 })).filter(
      (r) => r.type === 'charge',
    );
    expect(records).toHaveLength(1);
    const rec = records[0]!;
    if (usage)
      expect(rec).toMatchObject({ inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens });
    expect(rec.amount).toBe(chatModelCost(rec));
    await expectLedgerClean(h.redis.client(), [accountId]);
    return rec;
  }

  it('CHAT-1 BILL-5 a completion names the canonical model, generates max_tokens, is charged its usage', async () => {
    const a = await h.newAccount({ credit: '1' });
    const r = await h
      .client(a.secret)
      .chat.completions.create({ model: 'org/chat-model', messages: user('Hello there'), max_tokens: 8 });
    expect(r.model).toBe(CHAT_MODEL);
    expect(r.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(r.usage).toMatchObject({ completion_tokens: 8 });
    expect(r.usage!.prompt_tokens).toBeGreaterThan(0);
    for (const k of Object.keys(r)) expect(CLIENT_FIELDS.has(k), k).toBe(true);
    await oneCharge(a.accountId, r.usage);
  });

  it('CHAT-2 CHAT-3 a stream with include_usage: text, one usage frame before [DONE], only OpenAI fields', async () => {
    const a = await h.newAccount({ credit: '1' });
    const res = await fetch(`${h.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: CHAT_MODEL,
        messages: user('Tell me something'),
        stream: true,
        max_tokens: 12,
        stream_options: { include_usage: true },
      }),
    });
    expect(res.status).toBe(200);
    const frames = (await res.text()).split('\n\n').filter(Boolean);
    expect(frames.at(-1)).toBe('data: [DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.slice(6)) as Record<string, unknown>);
    const usageFrame = chunks.at(-1) as {
      choices: unknown[];
      usage: { prompt_tokens: number; completion_tokens: number };
    };
    expect(usageFrame.choices).toEqual([]);
    expect(usageFrame.usage.completion_tokens).toBe(12);
    let text = '';
    for (const c of chunks) {
      expect(c.model).toBe(CHAT_MODEL);
      for (const k of Object.keys(c)) expect(CLIENT_FIELDS.has(k), k).toBe(true);
      if (c !== usageFrame) expect(c.usage).toBeNull();
      text += (c.choices as { delta?: { content?: string | null } }[])[0]?.delta?.content ?? '';
    }
    expect(text.length).toBeGreaterThan(0);
    await oneCharge(a.accountId, usageFrame.usage);
  });

  it('CHAT-3 a stream without include_usage carries no usage; it is still charged its tokens', async () => {
    const a = await h.newAccount({ credit: '1' });
    const stream = await h.client(a.secret).chat.completions.create({
      model: CHAT_MODEL,
      messages: user('Hi'),
      stream: true,
      max_tokens: 6,
    });
    let chunks = 0;
    for await (const c of stream) {
      chunks++;
      expect('usage' in c).toBe(false);
    }
    expect(chunks).toBeGreaterThan(1);
    const rec = await oneCharge(a.accountId);
    expect(rec.outputTokens).toBe(6);
  });

  it('BILL-5 a stream the client aborts is charged for what was generated, never past max_tokens', async () => {
    const a = await h.newAccount({ credit: '1' });
    const ac = new AbortController();
    const stream = await h
      .client(a.secret)
      .chat.completions.create(
        { model: CHAT_MODEL, messages: user('Write a long story'), stream: true, max_tokens: 256 },
        { signal: ac.signal },
      );
    let seen = 0;
    for await (const c of stream) {
      if (c.choices[0]?.delta?.content) seen++;
      if (seen === 2) {
        ac.abort();
        break;
      }
    }
    expect(seen).toBe(2);
    const rec = await oneCharge(a.accountId);
    expect(rec.outputTokens).toBeGreaterThanOrEqual(seen);
    expect(rec.outputTokens).toBeLessThanOrEqual(256);
  });

  it('CHAT-4 tools: a request with tools and tool_choice required is relayed, streamed and not', async () => {
    const a = await h.newAccount({ credit: '1' });
    const r = await h.client(a.secret).chat.completions.create({
      model: CHAT_MODEL,
      messages: user('What is the weather in Paris?'),
      tools: [weather],
      tool_choice: 'required',
      max_tokens: 64,
    });
    const stream = await h.client(a.secret).chat.completions.create({
      model: CHAT_MODEL,
      messages: user('And in Rome?'),
      tools: [weather],
      tool_choice: 'required',
      max_tokens: 64,
      stream: true,
    });
    let name = '';
    let finish: string | null = null;
    for await (const c of stream) {
      name += c.choices[0]?.delta?.tool_calls?.[0]?.function?.name ?? '';
      finish = c.choices[0]?.finish_reason ?? finish;
    }
    if (engine === 'simulator') {
      const call = r.choices[0]!.message.tool_calls?.[0];
      expect(call?.type === 'function' && call.function.name).toBe('get_weather');
      const args = JSON.parse(call?.type === 'function' ? call.function.arguments : '{}') as {
        city?: string;
      };
      expect(['Paris', 'Rome']).toContain(args.city);
      expect(r.choices[0]!.finish_reason).toBe('tool_calls');
      expect(name).toBe('get_weather');
      expect(finish).toBe('tool_calls');
    } else {
      // This llama.cpp (0.5.0-dev, as llama-cpp-python 0.3.36 vendors it) renders the tools into
      // the prompt (--jinja) but put no grammar on tool_choice required for the tiny model's
      // template (a Qwen3-Coder-shaped one got a grammar-less "peg-native" parser that then refused
      // plain answers), so the random weights answer in text: what is checked here is that the
      // proxy relays that answer whole (docs/engines.md "Real engines").
      expect(r.choices[0]!.finish_reason).toBe('length');
      expect(r.usage!.completion_tokens).toBe(64);
      expect(finish).toBe('length');
    }
  });

  it('MSG-1 Messages, not streamed and streamed, through the Anthropic SDK; each charged its usage', async () => {
    const a = await h.newAccount({ credit: '1' });
    const anthropic = new Anthropic({ apiKey: a.secret, baseURL: base, maxRetries: 0 });
    const m = await anthropic.messages.create({ model: CHAT_MODEL, max_tokens: 8, messages: user('Hello') });
    expect(m.model).toBe(CHAT_MODEL);
    expect(m.content[0]?.type).toBe('text');
    expect(m.usage.output_tokens).toBe(8);
    const first = await oneCharge(a.accountId);
    expect(first.outputTokens).toBe(8);

    const b = await h.newAccount({ credit: '1' });
    const streamed = new Anthropic({ apiKey: b.secret, baseURL: base, maxRetries: 0 }).messages.stream({
      model: CHAT_MODEL,
      max_tokens: 10,
      messages: user('Hello again'),
    });
    const final = await streamed.finalMessage();
    expect(final.content[0]?.type === 'text' && final.content[0].text.length).toBeGreaterThan(0);
    expect(final.usage.output_tokens).toBe(10);
    const rec = await oneCharge(b.accountId);
    expect(rec.outputTokens).toBe(10);
  });

  // Defect 2 of issue 20 on a real engine. llama.cpp reports the prompt tokens it reused from its
  // slot's cache as timings.cache_n, and its prompt count as usage, on the last frame only (unless
  // the request asks timings_per_token), so a stream the client cuts carries neither: the proxy
  // bills its own prompt estimate (from the prompt's bytes), none of it cached — the engine reported
  // no cache, and hanging up before the last frame buys no discount (proxy/engine/frames/cached-tokens.ts,
  // issue 40). Checked here against what llama-server itself reports for the same prompt. Known gap: with this tiny model's byte-level vocabulary the estimate is far below
  // llama.cpp's real count (under-billed, never over): the proxy does not ask llama.cpp for
  // timings_per_token, which would give prompt_n + cache_n on every frame.
  it.runIf(engine === 'llamacpp')(
    'BILL-1 BILL-2 a cut stream whose prompt llama.cpp had cached: no cache_n reported, so the uncached rate',
    async () => {
      const prompt = Array.from({ length: 300 }, (_, i) => `w${i}`).join(' ');
      const warm = await h.newAccount({ credit: '1' });
      const first = await h
        .client(warm.secret)
        .chat.completions.create({ model: CHAT_MODEL, messages: user(prompt), max_tokens: 2 });
      expect(first.usage!.prompt_tokens).toBeGreaterThan(100);
      await oneCharge(warm.accountId, first.usage);

      const a = await h.newAccount({ credit: '1' });
      const ac = new AbortController();
      const stream = await h
        .client(a.secret)
        .chat.completions.create(
          { model: CHAT_MODEL, messages: user(prompt), stream: true, max_tokens: 256 },
          { signal: ac.signal },
        );
      let seen = 0;
      for await (const c of stream) {
        if (c.choices[0]?.delta?.content) seen++;
        if (seen === 3) {
          ac.abort();
          break;
        }
      }
      expect(seen).toBe(3);
      const rec = await oneCharge(a.accountId);
      expect(rec.outputTokens).toBeGreaterThanOrEqual(seen);
      expect(rec.outputTokens).toBeLessThan(256);

      // The same prompt straight to llama-server: what it says it had cached (the cut call left the
      // prompt and a few generated tokens in the slot, so the hit is the same as the cut call's).
      // Once the cut call's slot is free, so that llama-server picks it (the most similar prompt).
      const deadline = Date.now() + 30_000;
      const busy = async () =>
        (
          (await fetch(`${servers[0]!.url}/slots`).then((r) => r.json())) as { is_processing: boolean }[]
        ).some((slot) => slot.is_processing);
      while ((await busy()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const direct = (await fetch(`${servers[0]!.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: CHAT_MODEL, messages: user(prompt), max_tokens: 1 }),
      }).then((r) => r.json())) as { usage: { prompt_tokens: number }; timings: { cache_n: number } };
      expect(direct.usage.prompt_tokens).toBe(first.usage!.prompt_tokens);
      expect(direct.timings.cache_n).toBe(direct.usage.prompt_tokens - 1);
      // Billed: the estimate, never more input than llama.cpp counted, at the uncached rate (the
      // cut stream never carried cache_n).
      expect(rec.inputTokens).toBeGreaterThan(1);
      expect(rec.inputTokens).toBeLessThanOrEqual(direct.usage.prompt_tokens);
      expect(rec.cachedTokens).toBe(0);
      // Price list (harness): input 1, cached input 0.5, output 2 USD per 1M tokens = 1000, 500
      // and 2000 nano a token; oneCharge checked amount against chatModelCost, this spells it out.
      expect(rec.amount).toBe(
        (rec.inputTokens! - rec.cachedTokens!) * 1000 + rec.cachedTokens! * 500 + rec.outputTokens! * 2000,
      );
      await expectLedgerClean(h.redis.client(), [warm.accountId, a.accountId]);
    },
  );

  // Defect 1 of issue 20 on a real engine. What this llama.cpp does with requests it cannot serve
  // (probed on the built server): a grammar that does not parse, or a json_schema it cannot turn
  // into a grammar, is refused with HTTP 400 {error: {code: 400, message, type:
  // "invalid_request_error"}} BEFORE any stream head — even with stream: true — so there is no
  // in-stream error frame to meet (vLLM's case, test/proxy/vllm-behaviours.test.ts). Out-of-vocab
  // logit_bias ids are ignored, n_probs/top_logprobs are clamped and n > 1 is ignored: 200 streams.
  it.runIf(engine === 'llamacpp')(
    'ERR-2 ERR-3 llama.cpp refuses an unusable json_schema with a 400 before its stream: the client gets that 400, nothing charged',
    async () => {
      const a = await h.newAccount({ credit: '1' });
      const client = h.client(a.secret, { maxRetries: 2 });
      const errorsBefore = await engineErrors();
      for (const stream of [true, false]) {
        const err = await client.chat.completions
          .create({
            model: CHAT_MODEL,
            messages: user('hi'),
            max_tokens: 8,
            stream,
            response_format: {
              type: 'json_schema',
              json_schema: { name: 'broken', schema: { type: 'nonsense' } },
            },
          })
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(OpenAI.BadRequestError);
        const e = err as InstanceType<typeof OpenAI.BadRequestError>;
        expect(e.status).toBe(400);
        expect(e.error).toMatchObject({ type: 'invalid_request_error' });
        expect(e.message).toContain('unrecognized type nonsense');
        expect(e.headers?.get('retry-after') ?? null).toBeNull();
      }
      // A 4xx is the engine's answer, not its failure: not retried, not counted, endpoint up.
      expect(await engineErrors()).toBe(errorsBefore);
      expect(h.proxy.ctx.engine.health.down()).toEqual([]);
      expect(await h.settled(a.accountId)).toMatchObject({ balance: 1_000_000_000, held: 0 });
      expect(await usageRecords(h.redis.client(), a.accountId, { count: 10 })).toEqual([
        expect.objectContaining({ type: 'topup' }),
      ]);
      await expectLedgerClean(h.redis.client(), [a.accountId]);
    },
  );

  /** The proxy's count of engine failures (a retried or failed-over call adds to it). */
  async function engineErrors(): Promise<number> {
    const text = await fetch(h.metricsURL).then((r) => r.text());
    return text
      .split('\n')
      .filter((l) => l.startsWith('mp_proxy_engine_errors_total{'))
      .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
  }

  it('EMB-1 BILL-1 embeddings: one vector per input, charged per input token', async () => {
    const a = await h.newAccount({ credit: '1' });
    const r = await h
      .client(a.secret)
      .embeddings.create({ model: EMBED_MODEL, input: ['one short text', 'and a second, longer one'] });
    expect(r.model).toBe(EMBED_MODEL);
    expect(r.data).toHaveLength(2);
    expect(r.data[0]!.embedding.length).toBeGreaterThan(0);
    expect(r.data[0]!.embedding).not.toEqual(r.data[1]!.embedding);
    const tokens = r.usage.prompt_tokens;
    expect(tokens).toBeGreaterThan(0);
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    // The harness prices the embedding model at 0.1 USD per 1M input tokens: 100 nano per token.
    expect(rec).toMatchObject({
      type: 'charge',
      model: EMBED_MODEL,
      amount: tokens * 100,
      inputTokens: tokens,
    });
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});
