// `make e2e-vllm`, issue 33: the proxy's prefix index against a real vLLM publishing its KV events
// with the operator's --kv-events-config (vllm-server.ts: on loopback ports), its tokenizer the
// tiny model's own files; and issue 31's drain: the operator's --shutdown-timeout lets a stream
// finish after SIGTERM. One vLLM for the file; the drain test stops it, so it runs last.
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CatalogueEntryInput, catalogueEntrySchema } from '../../../core/catalogue/index.ts';
import { usageRecords } from '../../../core/usage/usage.ts';
import { toChatRequest } from '../../../proxy/dialects/messages/request.ts';
import { type Prediction, PrefixRouting } from '../../../proxy/engine/kv-index/prefix-routing.ts';
import { type ChatPrompt, loadPromptTokenizer } from '../../../proxy/engine/kv-index/prompt-tokens.ts';
import { messagesRequest } from '../../../proxy/schemas/messages.ts';
import { expectLedgerClean } from '../../helpers/ledger.ts';
import { type Harness, startHarness } from '../../proxy/harness.ts';
import { startVllm, VLLM_BLOCK, VLLM_CONTEXT, VLLM_MODEL, type VllmServer } from './vllm-server.ts';

let vllm: VllmServer;
let h: Harness;
let entry: CatalogueEntryInput;
/** The proxy's own routing code, beside the harness's proxy, so the test can read its predictions. */
let routing: PrefixRouting;
const startedAt = Date.now();

beforeAll(async () => {
  vllm = await startVllm();
  console.log(`vLLM ${vllm.version} ready after ${Math.round((Date.now() - startedAt) / 1000)} s`);
  if (!vllm.kvEvents) throw new Error('the operator gave this vLLM no --kv-events-config');
  entry = {
    id: VLLM_MODEL,
    kind: 'chat',
    pricing: { USD: { input: '1', cachedInput: '0.5', output: '2' } },
    capabilities: { tools: true },
    contextLength: VLLM_CONTEXT,
    maxOutputTokens: 1000,
    endpoints: [{ url: vllm.url, kvEvents: vllm.kvEvents }],
    tokenizer: vllm.modelDir,
    created: 1_700_000_000,
  };
  h = await startHarness({}, { entries: () => [entry] });
  routing = new PrefixRouting({
    weights: { prefillUsPerToken: 100, loadMs: 100, waitingMs: 100, kvFullMs: 100 },
    maxBlocksPerModel: 100_000,
    log: { warn: (obj, msg) => console.warn(msg, obj) },
    tokenize: { budgetMs: 10_000 },
  });
  routing.sync([catalogueEntrySchema.parse(entry)]);
});
afterAll(async () => {
  routing?.close();
  await h?.stop();
  await vllm?.stop();
});

const parsed = () => catalogueEntrySchema.parse(entry);
const predict = (prompt: ChatPrompt) => routing.predict(parsed(), prompt);

async function until<T>(what: string, check: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** vLLM's own token ids for a chat (its /tokenize, the template rendered as for a completion). */
async function vllmTokens(prompt: ChatPrompt): Promise<number[]> {
  const res = await fetch(`${vllm.url}/tokenize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model: VLLM_MODEL,
      messages: prompt.messages,
      ...(prompt.tools ? { tools: prompt.tools } : {}),
      add_generation_prompt: true,
      add_special_tokens: false,
    }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { tokens: number[] }).tokens;
}

const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];

describe('prefix routing against a real vLLM publishing KV events', () => {
  it('Chat Completions and Messages requests tokenize as vLLM’s /tokenize says; the Messages call’s engine-reported input is that count', async () => {
    const tokenize = await loadPromptTokenizer(vllm.modelDir);
    const chat: ChatPrompt = {
      messages: [
        { role: 'system', content: 'You are terse.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather in Paris?' },
            { type: 'text', text: 'In celsius.' },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: '21 degrees, clear' },
      ],
      tools,
    };
    expect(tokenize(chat)).toEqual(await vllmTokens(chat));

    const anthropic = {
      model: VLLM_MODEL,
      max_tokens: 4,
      system: 'You are terse.',
      tools: [
        {
          name: 'get_weather',
          description: 'The weather in a city',
          input_schema: {
            type: 'object' as const,
            properties: { city: { type: 'string' } },
            required: ['city'],
          },
        },
      ],
      messages: [
        { role: 'user' as const, content: 'Weather in Berlin?' },
        {
          role: 'assistant' as const,
          content: [{ type: 'tool_use' as const, id: 't1', name: 'get_weather', input: { city: 'Berlin' } }],
        },
        {
          role: 'user' as const,
          content: [{ type: 'tool_result' as const, tool_use_id: 't1', content: '18 degrees' }],
        },
      ],
    };
    const form = toChatRequest(messagesRequest.parse(anthropic), {
      tools: true,
      vision: false,
      reasoning: false,
    });
    const asSent: ChatPrompt = { messages: form.messages, tools: form.fields.tools };
    const ids = tokenize(asSent);
    expect(ids).toEqual(await vllmTokens(asSent));
    const a = await h.newAccount({ credit: '1' });
    const client = new Anthropic({
      apiKey: a.secret,
      baseURL: h.baseURL.replace(/\/v1$/, ''),
      maxRetries: 0,
    });
    const res = await client.messages.create(anthropic);
    expect(res.usage.input_tokens).toBe(ids.length);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('a multi-turn session: the predicted cached tokens for the endpoint match vLLM’s cached_tokens within one block', async () => {
    const a = await h.newAccount({ credit: '1' });
    const client = h.client(a.secret);
    // Until the proxy's SUB socket has joined and the tokenizer is loaded: a throwaway prompt's
    // blocks show up in the index.
    for (let n = 0; ; n++) {
      const m = [{ role: 'user', content: `warm up ${n} ${'the quick brown fox '.repeat(20)}` }];
      await fetch(`${vllm.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: VLLM_MODEL, messages: m, max_tokens: 1 }),
      }).then((r) => r.text());
      const deadline = Date.now() + 2_000;
      const held = async () => ((await predict({ messages: m }))?.cached.get(vllm.url) ?? 0) > 0;
      while (Date.now() < deadline && !(await held())) await new Promise((r) => setTimeout(r, 50));
      if (await held()) break;
      if (n > 30) throw new Error('the index never learnt a block from vLLM’s events');
    }
    const history: { role: string; content: string }[] = [
      {
        role: 'system',
        content: `You are a helpful agent. ${'Use the tools when the user asks. '.repeat(12)}`,
      },
    ];
    const seen: { predicted: number; reported: number; prompt: number }[] = [];
    for (let turn = 0; turn < 5; turn++) {
      history.push({ role: 'user', content: `Turn ${turn}: tell me about the weather in Paris and Berlin.` });
      // The previous turn's blocks (prompt and generated) reach the index as events: wait until the
      // prediction stops growing.
      let last: Prediction | undefined;
      const p = await until('a settled prediction', async () => {
        const now = await predict({ messages: history });
        const settled = now && last && now.cached.get(vllm.url) === last.cached.get(vllm.url);
        last = now;
        return settled ? now : undefined;
      });
      await new Promise((r) => setTimeout(r, 300));
      const final = (await predict({ messages: history })) ?? p;
      const res = await client.chat.completions.create({
        model: VLLM_MODEL,
        messages: history as OpenAI.Chat.ChatCompletionMessageParam[],
        max_tokens: 40,
        temperature: 0,
      });
      const reported = res.usage?.prompt_tokens_details?.cached_tokens ?? 0;
      seen.push({
        predicted: final.cached.get(vllm.url) ?? 0,
        reported,
        prompt: res.usage?.prompt_tokens ?? 0,
      });
      expect(final.promptTokens).toBe(res.usage?.prompt_tokens);
      history.push({ role: 'assistant', content: res.choices[0]?.message.content ?? '' });
    }
    console.log(`turns (predicted, vLLM cached, prompt tokens): ${JSON.stringify(seen)}`);
    for (const s of seen) expect(Math.abs(s.predicted - s.reported)).toBeLessThanOrEqual(VLLM_BLOCK);
    // Later turns do hit the cache: the check above is not 0 against 0.
    expect(seen.slice(1).every((s) => s.reported > 0)).toBe(true);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('issue 31 drain: with the operator’s --shutdown-timeout, SIGTERM mid-stream lets the stream finish and be billed, then vLLM exits', async () => {
    expect(vllm.args.join(' ')).toContain('--shutdown-timeout 40');
    const a = await h.newAccount({ credit: '1' });
    const client = h.client(a.secret);
    const stream = await client.chat.completions.create({
      model: VLLM_MODEL,
      messages: [{ role: 'user', content: 'Write a long story about the weather.' }],
      max_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
      ignore_eos: true,
    } as OpenAI.Chat.ChatCompletionCreateParamsStreaming);
    let exit: Promise<number> | undefined;
    let finish: string | null | undefined;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      exit ??= vllm.signal('SIGTERM');
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(finish).toBe('length');
    expect(usage?.completion_tokens).toBe(50);
    await h.settled(a.accountId);
    const [charge] = (await usageRecords(h.redis.client(), a.accountId, { count: 10 })).filter(
      (r) => r.type === 'charge',
    );
    expect(charge).toMatchObject({ outputTokens: 50 });
    console.log(`vLLM exited with ${await exit} after draining`);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });
});
