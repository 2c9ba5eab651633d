// `make e2e-vllm`: the proxy's engine-facing suite against a real vLLM (its CPU build, a tiny Llama
// with random weights, the operator's flags for a `vllm` Model; vllm-server.ts). Each call's
// charge is checked to the nano against the price list and the token counts the engine reported
// (or, where the client saw none, the engine's own tokenizer), and every account ends with the
// ledger check. Opt-in: the install is about 6 GB and the engine takes a minute or more to start.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type UsageEntry, usageRecords } from '../../../core/usage/usage.ts';
import { expectLedgerClean } from '../../helpers/ledger.ts';
import { type Harness, startHarness } from '../../proxy/harness.ts';
import { runningVllm, startVllm, VLLM_CONTEXT, type VllmServer } from './vllm-server.ts';

const MODEL = 'Tiny/Llama-2L';
const IN = 1_000; // nano per token: input 1, cached input 0.5, output 2 USD per 1M tokens
const CACHED = 500;
const OUT = 2_000;

let vllm: VllmServer;
let h: Harness;
const startedAt = Date.now();

beforeAll(async () => {
  // E2E_VLLM_URL: a vLLM already serving (test/engines/vllm/serve.ts), to iterate on the suite
  // without a start of minutes each run.
  vllm = process.env.E2E_VLLM_URL ? runningVllm(process.env.E2E_VLLM_URL) : await startVllm();
  console.log(
    `vLLM ${vllm.version} ready after ${Math.round((Date.now() - startedAt) / 1000)} s: ${vllm.args.join(' ')}`,
  );
  h = await startHarness(
    {},
    {
      entries: () => [
        {
          id: MODEL,
          kind: 'chat',
          pricing: { USD: { input: '1', cachedInput: '0.5', output: '2' } },
          capabilities: { tools: true },
          contextLength: VLLM_CONTEXT,
          // Room for a stream long enough to be cut: the tiny model makes hundreds of tokens a second.
          maxOutputTokens: 1000,
          endpoints: [{ url: vllm.url }],
          created: 1_700_000_000,
        },
      ],
    },
  );
});
afterAll(async () => {
  await h?.stop();
  await vllm?.stop();
});

const user = (content: string) => [{ role: 'user' as const, content }];
const messagesApi = (apiKey: string) =>
  new Anthropic({ apiKey, baseURL: h.baseURL.replace(/\/v1$/, ''), maxRetries: 0 });

/** What the engine's own tokenizer makes of a chat (vLLM's /tokenize, as the proxy asks it). */
async function enginePromptTokens(messages: { role: string; content: string }[]): Promise<number> {
  const res = await fetch(`${vllm.url}/tokenize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages }),
  });
  return ((await res.json()) as { count: number }).count;
}

/** The account's charges, oldest first, once every hold has settled. */
async function charges(accountId: string): Promise<UsageEntry[]> {
  await h.settled(accountId);
  return (await usageRecords(h.redis.client(), accountId, { count: 100 }))
    .filter((r) => r.type === 'charge')
    .reverse();
}

/** The price list applied to a charge's own counts: what it must cost, to the nano. */
function priced(r: UsageEntry): number {
  const cached = r.cachedTokens ?? 0;
  return (r.inputTokens! - cached) * IN + cached * CACHED + r.outputTokens! * OUT;
}

describe(`the proxy in front of a real vLLM`, () => {
  it('CHAT-1 a completion is billed the usage vLLM reported, to the nano', async () => {
    const a = await h.newAccount({ credit: '1' });
    const done = await h.client(a.secret).chat.completions.create({
      model: MODEL,
      messages: user('Hello'),
      max_tokens: 8,
      ignore_eos: true, // vLLM's: exactly max_tokens, whatever the random weights say
    } as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming);
    expect(done.model).toBe(MODEL);
    expect(done.usage).toMatchObject({
      completion_tokens: 8,
      prompt_tokens: await enginePromptTokens(user('Hello')),
    });
    const [c] = await charges(a.accountId);
    expect(c).toMatchObject({ inputTokens: done.usage!.prompt_tokens, outputTokens: 8, model: MODEL });
    expect(c!.amount).toBe(priced(c!));
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('CHAT-2 CHAT-3 a stream without include_usage: no usage reaches the client, the charge is exact', async () => {
    const a = await h.newAccount({ credit: '1' });
    const res = await fetch(`${h.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: MODEL,
        messages: user('Hi'),
        stream: true,
        max_tokens: 6,
        ignore_eos: true,
      }),
    });
    expect(res.status).toBe(200);
    const frames = (await res.text()).split('\n\n').filter(Boolean);
    expect(frames.at(-1)).toBe('data: [DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.slice(6)));
    for (const c of chunks) {
      expect(c.model).toBe(MODEL);
      expect(c.usage ?? null).toBeNull(); // --enable-force-include-usage sends it; the client did not ask
    }
    expect(chunks.at(-1).choices[0].finish_reason).toBe('length');
    const [c] = await charges(a.accountId);
    expect(c).toMatchObject({ inputTokens: await enginePromptTokens(user('Hi')), outputTokens: 6 });
    expect(c!.amount).toBe(priced(c!));
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('CHAT-3 a stream with include_usage: the SDK reads the usage frame, billed exactly that', async () => {
    const a = await h.newAccount({ credit: '1' });
    const stream = await h.client(a.secret).chat.completions.create({
      model: MODEL,
      messages: user('Tell me something'),
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 12,
      ignore_eos: true,
    } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    expect(usage?.completion_tokens).toBe(12);
    const [c] = await charges(a.accountId);
    expect(c).toMatchObject({
      inputTokens: usage!.prompt_tokens,
      cachedTokens: usage!.prompt_tokens_details?.cached_tokens ?? 0,
      outputTokens: 12,
    });
    expect(c!.amount).toBe(priced(c!));
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('a stream the client aborts is billed what was generated, and vLLM stops generating', async () => {
    const a = await h.newAccount({ credit: '1' });
    const stream = await h.client(a.secret).chat.completions.create({
      model: MODEL,
      messages: user('Write a long story'),
      stream: true,
      max_tokens: 990,
      ignore_eos: true,
    } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
    let chunks = 0;
    for await (const _ of stream) if (++chunks === 4) break; // the SDK aborts the request
    const [c] = await charges(a.accountId);
    expect(c!.outputTokens).toBeGreaterThan(0);
    expect(c!.outputTokens).toBeLessThan(990);
    expect(c!.inputTokens).toBe(await enginePromptTokens(user('Write a long story')));
    expect(c!.amount).toBe(priced(c!));
    // vLLM saw the disconnect: nothing of it is still running.
    for (let i = 0; i < 600; i++) {
      const metrics = await fetch(`${vllm.url}/metrics`).then((r) => r.text());
      const running = /^vllm:num_requests_running\{[^}]*\} (\S+)/m.exec(metrics)?.[1];
      if (Number(running) === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const metrics = await fetch(`${vllm.url}/metrics`).then((r) => r.text());
    expect(Number(/^vllm:num_requests_running\{[^}]*\} (\S+)/m.exec(metrics)?.[1])).toBe(0);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('CHAT-1 tools: a forced call, then the tool result, billed exactly', async () => {
    const a = await h.newAccount({ credit: '1' });
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: {
            type: 'object',
            properties: { city: { type: 'string' } },
            required: ['city'],
          },
        },
      },
    ];
    const client = h.client(a.secret);
    const messages: OpenAI.ChatCompletionMessageParam[] = user('Use get_weather for Paris');
    // Random weights make the arguments noise: vLLM 0.32 holds a forced call to its frame
    // (`<tool_call>{"name": …, "arguments": …}`) but not the arguments to the schema ("-Infinity"
    // and runaway numbers were seen), so a call may run out of tokens unparsed. A few tries get a
    // whole one; each try is charged, and checked.
    const tries: OpenAI.ChatCompletion[] = [];
    for (let i = 0; i < 8 && !tries.at(-1)?.choices[0]?.message.tool_calls?.length; i++)
      tries.push(
        await client.chat.completions.create({
          model: MODEL,
          messages,
          tools,
          tool_choice: { type: 'function', function: { name: 'get_weather' } },
          max_tokens: 128,
        }),
      );
    const first = tries.at(-1)!;
    const call = first.choices[0]!.message.tool_calls?.[0];
    expect(call?.type === 'function' && call.function.name, `a whole call in ${tries.length} tries`).toBe(
      'get_weather',
    );
    expect(first.choices[0]!.finish_reason).toBe('stop'); // forced: vLLM says stop, as OpenAI does
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: call!.id,
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: call!.id, content: '{"temp":21}' },
    );
    const second = await client.chat.completions.create({ model: MODEL, messages, tools, max_tokens: 8 });
    expect(second.choices[0]!.message.role).toBe('assistant');
    // Streamed, the forced call arrives as tool-call deltas.
    const stream = await client.chat.completions.create({
      model: MODEL,
      messages: messages.slice(0, 1),
      tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      max_tokens: 64,
      stream: true,
    });
    const names: string[] = [];
    let argText = '';
    for await (const chunk of stream)
      for (const tc of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (tc.function?.name) names.push(tc.function.name);
        argText += tc.function?.arguments ?? '';
      }
    expect(names).toEqual(['get_weather']);
    expect(argText.length).toBeGreaterThan(0);
    const recs = await charges(a.accountId);
    expect(recs).toHaveLength(tries.length + 2);
    for (const [i, t] of tries.entries())
      expect(recs[i]).toMatchObject({
        inputTokens: t.usage!.prompt_tokens,
        outputTokens: t.usage!.completion_tokens,
      });
    expect(recs[tries.length]).toMatchObject({
      inputTokens: second.usage!.prompt_tokens,
      outputTokens: second.usage!.completion_tokens,
    });
    for (const r of recs) expect(r.amount).toBe(priced(r));
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('MSG-1 Messages, streamed and not, billed the engine’s usage; count_tokens is the engine’s count and free', async () => {
    const a = await h.newAccount({ credit: '1' });
    const anthropic = messagesApi(a.secret);
    const params = { model: MODEL, messages: user('Hello there') };
    const counted = await anthropic.messages.countTokens(params);
    const done = await anthropic.messages.create({ ...params, max_tokens: 5 });
    expect(done.usage.output_tokens).toBeGreaterThan(0);
    expect(counted.input_tokens).toBe(done.usage.input_tokens + (done.usage.cache_read_input_tokens ?? 0));
    const streamed = await anthropic.messages.stream({ ...params, max_tokens: 5 }).finalMessage();
    expect(streamed.usage.output_tokens).toBeGreaterThan(0);
    const recs = await charges(a.accountId);
    expect(recs).toHaveLength(2); // count_tokens is free
    expect(recs[0]).toMatchObject({
      inputTokens: counted.input_tokens,
      outputTokens: done.usage.output_tokens,
    });
    expect(recs[1]).toMatchObject({
      inputTokens: counted.input_tokens,
      outputTokens: streamed.usage.output_tokens,
    });
    for (const r of recs) expect(r.amount).toBe(priced(r));
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('MSG-2 a tool forced through Messages: vLLM finishes it `stop`, the client gets tool_use and stop_reason tool_use', async () => {
    const a = await h.newAccount({ credit: '1' });
    const anthropic = messagesApi(a.secret);
    const params = {
      model: MODEL,
      max_tokens: 128,
      tools: [
        { name: 'lookup', input_schema: { type: 'object' as const, properties: { q: { type: 'string' } } } },
      ],
      tool_choice: { type: 'tool' as const, name: 'lookup' },
      messages: user('Look it up'),
    };
    // As above, a few tries for a whole call (the arguments are noise, and may run out of tokens).
    const tries: Anthropic.Message[] = [];
    for (let i = 0; i < 8 && !tries.at(-1)?.content.some((b) => b.type === 'tool_use'); i++)
      tries.push(await anthropic.messages.create(params));
    const done = tries.at(-1)!;
    expect(
      done.content.find((b) => b.type === 'tool_use'),
      `a whole call in ${tries.length} tries`,
    ).toMatchObject({
      type: 'tool_use',
      name: 'lookup',
    });
    expect(done.stop_reason).toBe('tool_use');
    // Streamed, read as events: the SDK's own accumulator parses the noise as JSON and throws.
    let streamedTool = false;
    let streamedStop: string | null = null;
    let streams = 0;
    for (; streams < 8 && !(streamedTool && streamedStop === 'tool_use'); streams++) {
      streamedTool = false;
      for await (const ev of await anthropic.messages.create({ ...params, stream: true })) {
        if (ev.type === 'content_block_start' && ev.content_block.type === 'tool_use') streamedTool = true;
        if (ev.type === 'message_delta') streamedStop = ev.delta.stop_reason;
      }
    }
    expect(streamedTool).toBe(true);
    expect(streamedStop).toBe('tool_use');
    const recs = await charges(a.accountId);
    expect(recs).toHaveLength(tries.length + streams);
    for (const [i, t] of tries.entries()) expect(recs[i]!.outputTokens).toBe(t.usage.output_tokens);
    for (const r of recs) expect(r.amount).toBe(priced(r));
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('BILL-1 prefix caching: a repeated long prompt reports cached tokens, billed at the cached rate', async () => {
    const a = await h.newAccount({ credit: '1' });
    const client = h.client(a.secret);
    // About 320 tokens: several of vLLM's KV blocks (VLLM_BLOCK) and then some, inside the context.
    const messages = user(Array.from({ length: 300 }, () => 'word').join(' '));
    const ask = async () => {
      const stream = await client.chat.completions.create({
        model: MODEL,
        messages,
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: 4,
        ignore_eos: true,
      } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
      return usage!;
    };
    await ask();
    const warm = await ask();
    const cached = warm.prompt_tokens_details?.cached_tokens ?? 0;
    expect(cached).toBeGreaterThan(0);
    expect(cached).toBeLessThan(warm.prompt_tokens);
    const [, second] = await charges(a.accountId);
    expect(second).toMatchObject({ inputTokens: warm.prompt_tokens, cachedTokens: cached, outputTokens: 4 });
    expect(second!.amount).toBe((warm.prompt_tokens - cached) * IN + cached * CACHED + 4 * OUT);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('ERR-2 ERR-3 a refusal inside vLLM’s stream (out-of-vocabulary stop token) is the client’s 400, not retried, not charged', async () => {
    const a = await h.newAccount({ credit: '1' });
    const client = h.client(a.secret, { maxRetries: 2 });
    for (let i = 0; i < 3; i++) {
      const err = await client.chat.completions
        .create({
          model: MODEL,
          messages: user('hi'),
          stream: true,
          max_tokens: 8,
          stop_token_ids: [999_999],
        } as OpenAI.Chat.ChatCompletionCreateParamsStreaming)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect((err as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('stop_token_ids');
    }
    expect(h.proxy.ctx.engine.health.down()).toEqual([]);
    expect(await h.settled(a.accountId)).toMatchObject({ balance: 1_000_000_000, held: 0 });
    expect(await charges(a.accountId)).toEqual([]);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});
