import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../server.ts';

let sim: Simulator;
let client: OpenAI;

beforeAll(async () => {
  sim = await startSimulator({ ttftMs: 1, itlMs: 0 });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(() => sim.close());

const user = (content: string) => [{ role: 'user' as const, content }];

async function collect(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>) {
  const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

describe('chat completions (non-stream)', () => {
  it('echoes the model, says it is a simulator, and is deterministic', async () => {
    const req = { model: 'Org/Model-X', messages: user('Tell me about the sea') };
    const a = await client.chat.completions.create(req);
    const b = await client.chat.completions.create(req);
    expect(a.model).toBe('Org/Model-X');
    expect(a.system_fingerprint).toBe('modelplane-simulator (not a real model)');
    expect(a.choices[0]!.message.content).toBe(b.choices[0]!.message.content);
    expect(a.choices[0]!.finish_reason).toBe('stop');
    const other = await client.chat.completions.create({ ...req, messages: user('something else') });
    expect(other.choices[0]!.message.content).not.toBe(a.choices[0]!.message.content);
  });

  it('max_tokens and max_completion_tokens bound the output with finish_reason length', async () => {
    const a = await client.chat.completions.create({ model: 'm', messages: user('hi'), max_tokens: 5 });
    expect(a.usage!.completion_tokens).toBe(5);
    expect(a.choices[0]!.finish_reason).toBe('length');
    const b = await client.chat.completions.create({
      model: 'm',
      messages: user('hi'),
      max_completion_tokens: 3,
    });
    expect(b.usage!.completion_tokens).toBe(3);
  });

  it('usage: prompt tokens never exceed prompt UTF-8 bytes; totals add up; n choices', async () => {
    const prompt = 'naïve café — 日本語 🙂 '.repeat(20);
    const r = await client.chat.completions.create({
      model: 'm',
      messages: user(prompt),
      n: 3,
      max_tokens: 7,
    });
    const u = r.usage!;
    expect(u.prompt_tokens).toBeGreaterThan(0);
    expect(u.prompt_tokens).toBeLessThanOrEqual(Buffer.byteLength(prompt));
    expect(u.total_tokens).toBe(u.prompt_tokens + u.completion_tokens);
    expect(r.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    expect(u.completion_tokens).toBe(21);
  });

  it('imageTokens and templateTokens count images and the chat template as prompt tokens, as vLLM does', async () => {
    const messages = [
      {
        role: 'user' as const,
        content: [
          { type: 'text' as const, text: 'what is in these' },
          { type: 'image_url' as const, image_url: { url: 'https://example.com/a.png' } },
          { type: 'image_url' as const, image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
    ];
    const plain = await client.chat.completions.create({ model: 'v', messages, max_tokens: 1 });
    sim.setOptions({ imageTokens: 576, templateTokens: 5 });
    try {
      const vision = await client.chat.completions.create({ model: 'v', messages, max_tokens: 1 });
      // Two images, and the template around one message and the reply's header.
      expect(vision.usage!.prompt_tokens).toBe(plain.usage!.prompt_tokens + 2 * 576 + 2 * 5);
    } finally {
      sim.setOptions({ imageTokens: 0, templateTokens: 0 });
    }
  });

  it('stop sequences end the output before the match', async () => {
    const full = await client.chat.completions.create({
      model: 'm',
      messages: user('stop test'),
      max_tokens: 30,
    });
    const words = full.choices[0]!.message.content!.split(' ');
    const r = await client.chat.completions.create({
      model: 'm',
      messages: user('stop test'),
      stop: [` ${words[3]}`],
    });
    expect(full.choices[0]!.message.content!.startsWith(r.choices[0]!.message.content!)).toBe(true);
    expect(r.choices[0]!.message.content!.split(' ').length).toBeLessThanOrEqual(3);
    expect(r.choices[0]!.finish_reason).toBe('stop');
  });

  it('cached_tokens grows as a prompt prefix repeats (blocks of 16 tokens)', async () => {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are a careful assistant. '.repeat(30) },
    ];
    const seen: number[] = [];
    for (const question of [
      'first question about the sea',
      'second question about rivers and lakes',
      'third one',
    ]) {
      messages.push({ role: 'user', content: question.repeat(4) });
      const r = await client.chat.completions.create({ model: 'cache-model', messages });
      const cached = r.usage!.prompt_tokens_details!.cached_tokens!;
      expect(cached % 16).toBe(0);
      expect(cached).toBeLessThan(r.usage!.prompt_tokens);
      seen.push(cached);
      messages.push({ role: 'assistant', content: r.choices[0]!.message.content });
    }
    expect(seen[0]).toBe(0);
    expect(seen[1]).toBeGreaterThan(seen[0]!);
    expect(seen[2]).toBeGreaterThan(seen[1]!);
  });

  it.each([
    ['bad JSON', '{"model":', null],
    ['missing messages', '{"model":"m"}', 'messages'],
    ['empty messages', '{"model":"m","messages":[]}', 'messages'],
    ['bad role', '{"model":"m","messages":[{"role":"robot","content":"x"}]}', 'messages[0].role'],
    ['n out of range', '{"model":"m","messages":[{"role":"user","content":"x"}],"n":0}', 'n'],
    [
      'stream_options without stream',
      '{"model":"m","messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}',
      'stream_options',
    ],
  ])('400 with a vLLM error body (type BadRequestError, numeric code) for %s', async (_name, body, param) => {
    const res = await fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(400);
    const json = (await res.json()) as {
      error: { code: number; param: string | null; message: string; type: string };
    };
    expect(json.error).toMatchObject({ code: 400, param, type: 'BadRequestError' });
    expect(json.error.message.length).toBeGreaterThan(0);
  });

  it('a max_tokens past the context is lowered to the room left (200, as vLLM 0.32); a prompt with no room is a 400', async () => {
    const small = await startSimulator({ ttftMs: 0, itlMs: 0, maxModelLen: 40 });
    try {
      const ask = (content: string, max_tokens?: number) =>
        fetch(`${small.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'm', messages: user(content), ignore_eos: true, max_tokens }),
        });
      const words = (n: number) => Array.from({ length: n }, () => 'word').join(' ');
      const trimmed = await ask(words(30), 999_999_999);
      expect(trimmed.status).toBe(200);
      const body = (await trimmed.json()) as OpenAI.ChatCompletion;
      expect(body.usage).toMatchObject({ prompt_tokens: 30, completion_tokens: 10, total_tokens: 40 });
      expect(body.choices[0]!.finish_reason).toBe('length');
      expect((await ask(words(39))).status).toBe(200); // one token of room
      const refused = await ask(words(40), 1);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: unknown }).error).toMatchObject({
        type: 'BadRequestError',
        code: 400,
        param: 'input_tokens',
        message: expect.stringContaining("This model's maximum context length is 40 tokens"),
      });
    } finally {
      await small.close();
    }
  });
});

describe('chat completions (stream)', () => {
  it('streams the same text as non-stream and ends with [DONE]; no usage unless asked', async () => {
    const req = { model: 'm', messages: user('stream me'), max_tokens: 12 };
    const whole = await client.chat.completions.create(req);
    const chunks = await collect(await client.chat.completions.create({ ...req, stream: true }));
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe(
      whole.choices[0]!.message.content,
    );
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('length');
    expect(chunks.every((c) => c.usage === undefined)).toBe(true);
    const raw = await (
      await fetch(`${sim.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...req, stream: true }),
      })
    ).text();
    expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('include_usage: a usage frame with empty choices precedes [DONE]; other chunks carry usage null', async () => {
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'm',
        messages: user('usage please'),
        max_tokens: 6,
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ completion_tokens: 6, prompt_tokens: 4, total_tokens: 10 });
    expect(last.usage!.prompt_tokens_details!.cached_tokens).toBe(0);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('continuous_usage_stats: every chunk carries running usage (vLLM)', async () => {
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'm',
        messages: user('continuous'),
        max_tokens: 5,
        stream: true,
        stream_options: {
          include_usage: true,
          continuous_usage_stats: true,
        } as OpenAI.Chat.ChatCompletionStreamOptions,
      }),
    );
    const running = chunks.map((c) => c.usage!.completion_tokens);
    expect(running[0]).toBe(0);
    expect(running.at(-1)).toBe(5);
    expect([...running].sort((a, b) => a - b)).toEqual(running);
    // As vLLM: only the final usage frame says what was cached; running usage never does.
    expect(chunks.slice(0, -1).every((c) => c.usage!.prompt_tokens_details === undefined)).toBe(true);
    expect(chunks.at(-1)!.usage!.prompt_tokens_details).toEqual({
      cached_tokens: 0,
      created_cache_tokens: 0,
    });
    // Only the final usage frame names the system, too.
    expect(chunks.slice(0, -1).every((c) => c.system_fingerprint === undefined)).toBe(true);
    expect(chunks.at(-1)!.system_fingerprint).toBe('modelplane-simulator (not a real model)');
  });

  it('the last token comes in the frame that carries finish_reason, as vLLM sends it', async () => {
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'm',
        messages: user('last'),
        max_tokens: 4,
        stream: true,
      }),
    );
    const content = chunks.filter((c) => c.choices[0]?.delta.content);
    expect(content).toHaveLength(4);
    expect(chunks.at(-1)).toBe(content.at(-1));
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('length');
  });

  it('--enable-force-include-usage: running usage and the usage frame on every stream, asked or not', async () => {
    const forced = await startSimulator({ ttftMs: 0, itlMs: 0, forceIncludeUsage: true });
    try {
      const c = new OpenAI({ apiKey: 'x', baseURL: `${forced.url}/v1` });
      const chunks = await collect(
        await c.chat.completions.create({
          model: 'm',
          messages: user('forced'),
          max_tokens: 3,
          stream: true,
        }),
      );
      expect(chunks.every((x) => x.usage != null)).toBe(true);
      expect(chunks.at(-1)!.choices).toEqual([]);
      expect(chunks.at(-1)!.usage).toMatchObject({ completion_tokens: 3 });
    } finally {
      await forced.close();
    }
  });
});

describe('refusals after the head (vLLM: out-of-vocabulary token ids)', () => {
  const raw = (body: Record<string, unknown>) =>
    fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: user('hi'), ...body }),
    });
  const refusal = (param: string, ids: string) => ({
    message: `token_id(s) [${ids}] in ${param} contain out-of-vocab token ids. Vocabulary size: 151936`,
    type: 'BadRequestError',
    param,
    code: 400,
  });

  it('a stream gets 200, the error as its first frame (a numeric code), then [DONE]', async () => {
    const res = await raw({ stream: true, stop_token_ids: [2, 999_999] });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(
      `data: ${JSON.stringify({ error: refusal('stop_token_ids', '999999') })}\n\ndata: [DONE]\n\n`,
    );
    const bias = await raw({ stream: true, logit_bias: { '151936': 1, '5': -1 } });
    expect(await bias.text()).toContain(JSON.stringify({ error: refusal('logit_bias', '151936') }));
  });

  it('a non-streamed request gets a 400 naming the parameter; ids in the vocabulary pass', async () => {
    const res = await raw({ stop_token_ids: [999_999] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe('stop_token_ids');
    expect((await raw({ stream: true, stop_token_ids: [151_935], max_tokens: 2 })).status).toBe(200);
  });

  it('refuseInEngine refuses every request: first-frame, or after-content (failure injection)', async () => {
    try {
      sim.setOptions({ refuseInEngine: 'first-frame' });
      const first = await (await raw({ stream: true })).text();
      expect(first.startsWith('data: {"error":')).toBe(true);
      sim.setOptions({ refuseInEngine: 'after-content' });
      const late = await (await raw({ stream: true, max_tokens: 20, ignore_eos: true })).text();
      expect(late).toMatch(/"content":"[^"]+"[\s\S]*data: \{"error":\{"message":"token_id/);
      expect(late.endsWith('data: [DONE]\n\n')).toBe(true);
    } finally {
      sim.setOptions({ refuseInEngine: false });
    }
  });
});

describe('tool calls', () => {
  const tools: OpenAI.Chat.ChatCompletionTool[] = [
    {
      type: 'function',
      function: {
        name: 'get_weather',
        parameters: {
          type: 'object',
          properties: {
            city: { type: 'string' },
            unit: { enum: ['c', 'f'] },
            days: { type: 'integer', minimum: 1, maximum: 7 },
          },
          required: ['city'],
        },
      },
    },
    {
      type: 'function',
      function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
    },
  ];

  it('arguments spelled name="value" in the prompt are used, with the required ones only', async () => {
    const r = await client.chat.completions.create({
      model: 'm',
      messages: user('use get_weather with city="Lima" days="9"'),
      tools,
    });
    const call = r.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    // days is an integer: not a string argument, so neither spelled nor (being optional) sampled.
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Lima' });
  });

  it('calls a tool named in the prompt, with JSON arguments matching the schema', async () => {
    const r = await client.chat.completions.create({
      model: 'm',
      messages: user('use get_weather for Oslo'),
      tools,
    });
    const choice = r.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    expect(call.function.name).toBe('get_weather');
    const args = JSON.parse(call.function.arguments);
    expect(typeof args.city).toBe('string');
    expect(['c', 'f']).toContain(args.unit);
    expect(args.days).toBeGreaterThanOrEqual(1);
    expect(args.days).toBeLessThanOrEqual(7);
  });

  it('answers with text under auto when no tool is named, or after a tool result; required forces a call', async () => {
    const plain = await client.chat.completions.create({ model: 'm', messages: user('just chat'), tools });
    expect(plain.choices[0]!.finish_reason).toBe('stop');
    const forced = await client.chat.completions.create({
      model: 'm',
      messages: user('just chat'),
      tools,
      tool_choice: 'required',
    });
    expect(forced.choices[0]!.message.tool_calls).toHaveLength(1);
    const named = await client.chat.completions.create({
      model: 'm',
      messages: user('anything'),
      tools,
      tool_choice: { type: 'function', function: { name: 'lookup' } },
    });
    expect(
      (named.choices[0]!.message.tool_calls![0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function
        .name,
    ).toBe('lookup');
    const call = forced.choices[0]!.message.tool_calls![0]!;
    const after = await client.chat.completions.create({
      model: 'm',
      tools,
      messages: [
        { role: 'user', content: 'use get_weather' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: '{"temp": 20}' },
      ],
    });
    expect(after.choices[0]!.finish_reason).toBe('stop');
    expect(after.choices[0]!.message.content!.length).toBeGreaterThan(0);
  });

  it('streams tool calls as deltas that reassemble into the non-stream arguments', async () => {
    const req = { model: 'm', messages: user('call get_weather and lookup'), tools };
    const whole = await client.chat.completions.create(req);
    expect(whole.choices[0]!.message.tool_calls).toHaveLength(2);
    const chunks = await collect(await client.chat.completions.create({ ...req, stream: true }));
    const args = ['', ''];
    const names: string[] = [];
    for (const c of chunks) {
      for (const tc of c.choices[0]?.delta.tool_calls ?? []) {
        if (tc.function?.name) names[tc.index] = tc.function.name;
        args[tc.index] += tc.function?.arguments ?? '';
      }
    }
    expect(names).toEqual(['get_weather', 'lookup']);
    const expected = whole.choices[0]!.message.tool_calls!.map(
      (t) => (t as OpenAI.Chat.ChatCompletionMessageFunctionToolCall).function.arguments,
    );
    expect(args).toEqual(expected);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('tool_calls');
  });
});

describe('stop_reason and /tokenize (as vLLM)', () => {
  it('names the stop string that ended a choice, streamed and not; null otherwise', async () => {
    const base = { model: 'm', messages: user('Tell me about the sea'), max_tokens: 40 };
    const whole = await client.chat.completions.create(base);
    const text = whole.choices[0]!.message.content!;
    const stop = text.split(' ').slice(2, 3).join(' ');
    const cut = await client.chat.completions.create({ ...base, stop: ['zzzz-not-there', ` ${stop}`] });
    expect(cut.choices[0]!.finish_reason).toBe('stop');
    expect((cut.choices[0] as unknown as { stop_reason: string }).stop_reason).toBe(` ${stop}`);
    expect((whole.choices[0] as unknown as { stop_reason: unknown }).stop_reason).toBeNull();
    const chunks = await collect(
      await client.chat.completions.create({ ...base, stop: [` ${stop}`], stream: true }),
    );
    const last = chunks.findLast((c) => c.choices[0]?.finish_reason)!;
    expect((last.choices[0] as unknown as { stop_reason: string }).stop_reason).toBe(` ${stop}`);
  });

  it('counts a chat prompt exactly as a completion of it reports prompt_tokens', async () => {
    const messages = [
      { role: 'system' as const, content: 'You are terse.' },
      {
        role: 'user' as const,
        content: [
          { type: 'text' as const, text: 'What is in this picture, in a few words?' },
          { type: 'image_url' as const, image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
    ];
    const done = await client.chat.completions.create({ model: 'm', messages, max_tokens: 3 });
    const res = await fetch(`${sim.url}/tokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages }),
    });
    const counted = (await res.json()) as { count: number; max_model_len: number; tokens: number[] };
    expect(counted.count).toBe(done.usage!.prompt_tokens);
    expect(counted.max_model_len).toBeGreaterThan(0);
    const bare = await fetch(`${sim.url}/tokenize`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', prompt: 'one two six' }),
    });
    expect(((await bare.json()) as { count: number }).count).toBe(3);
  });

  it('continue_final_message continues a prefill: the reply is the rest of what it would have said, even mid-token', async () => {
    const question = user('Tell me about the lighthouse');
    const whole = (await client.chat.completions.create({ model: 'm', messages: question, max_tokens: 100 }))
      .choices[0]!.message.content!;
    const continued = async (prefill: string, stream = false) => {
      const body = {
        model: 'm',
        messages: [...question, { role: 'assistant' as const, content: prefill }],
        max_tokens: 100,
        continue_final_message: true,
        add_generation_prompt: false,
      };
      if (!stream) return (await client.chat.completions.create(body)).choices[0]!.message.content!;
      const chunks = await collect(await client.chat.completions.create({ ...body, stream: true }));
      return chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    };
    const words = whole.split(' ');
    const prefill = `${words[0]} ${words[1]}`;
    expect(prefill + (await continued(prefill))).toBe(whole);
    expect(prefill + (await continued(prefill, true))).toBe(whole);
    const midToken = `${prefill} ${words[2]!.slice(0, 1)}`;
    expect(midToken + (await continued(midToken))).toBe(whole);
    // A prefill the reply would not have started with gets text of its own.
    expect((await continued('Zebra')).length).toBeGreaterThan(0);
  });

  it('continue_final_message: refused beside add_generation_prompt, and without a final assistant message (as vLLM)', async () => {
    const post = (body: Record<string, unknown>) =>
      fetch(`${sim.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', ...body }),
      });
    const both = await post({
      messages: [...user('hi'), { role: 'assistant', content: 'Well' }],
      continue_final_message: true,
    });
    expect(both.status).toBe(400);
    expect(((await both.json()) as { error: { param: string } }).error.param).toBe('continue_final_message');
    const noAssistant = await post({
      messages: user('hi'),
      continue_final_message: true,
      add_generation_prompt: false,
    });
    expect(noAssistant.status).toBe(400);
  });

  it('/tokenize counts without the reply header when add_generation_prompt is false, and can be switched off', async () => {
    sim.setOptions({ templateTokens: 3 });
    try {
      const messages = [...user('hi there'), { role: 'assistant', content: 'Well' }];
      const count = async (extra: Record<string, unknown>) => {
        const res = await fetch(`${sim.url}/tokenize`, {
          method: 'POST',
          body: JSON.stringify({ model: 'm', messages, ...extra }),
        });
        return ((await res.json()) as { count: number }).count;
      };
      const open = await count({});
      const continued = await count({ add_generation_prompt: false, continue_final_message: true });
      expect(open - continued).toBe(3);
      const done = await client.chat.completions.create({
        model: 'm',
        messages: messages as OpenAI.Chat.Completions.ChatCompletionMessageParam[],
        max_tokens: 2,
        // vLLM's own fields, which the openai SDK passes through as sent.
        ...({ add_generation_prompt: false, continue_final_message: true } as object),
      });
      expect(done.usage!.prompt_tokens).toBe(continued);
    } finally {
      sim.setOptions({ templateTokens: 0 });
    }
    sim.setOptions({ tokenizeEndpoint: false });
    try {
      const res = await fetch(`${sim.url}/tokenize`, { method: 'POST', body: '{"prompt":"x"}' });
      expect(res.status).toBe(404);
    } finally {
      sim.setOptions({ tokenizeEndpoint: true });
    }
  });
});
