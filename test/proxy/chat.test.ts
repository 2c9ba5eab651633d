// Chat completions and embeddings through the proxy (CHAT-1..4, EMB-1, EMB-2, KEY-5 mid-stream),
// with the official openai SDK against the real proxy, Redis and simulator.
import { request as httpRequest } from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { ALIAS_MODEL, CHAT_MODEL, EMBED_MODEL, type Harness, startHarness } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const user = (content: string) => [{ role: 'user' as const, content }];

async function rawStream(body: object): Promise<string> {
  const res = await fetch(`${h.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${h.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  return res.text();
}

describe('chat completions', () => {
  it('CHAT-1 generates text for a catalogue id given in any case; the canonical id is echoed', async () => {
    const r = await h
      .client()
      .chat.completions.create({ model: 'org/chat-MODEL', messages: user('Hello'), max_tokens: 8 });
    expect(r.model).toBe(CHAT_MODEL);
    expect(r.choices[0]!.message.content!.length).toBeGreaterThan(0);
    expect(r.usage).toMatchObject({ completion_tokens: 8 });
  });

  it('CHAT-2 CHAT-3 stream without include_usage: chunks, no usage anywhere, [DONE] last', async () => {
    const text = await rawStream({ model: CHAT_MODEL, messages: user('Hi'), stream: true, max_tokens: 5 });
    const frames = text.split('\n\n').filter(Boolean);
    expect(frames.at(-1)).toBe('data: [DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.slice('data: '.length)));
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) {
      expect(c.model).toBe(CHAT_MODEL);
      expect('usage' in c).toBe(false);
      expect(c.choices.length).toBeGreaterThan(0);
    }
  });

  it('CHAT-3 with include_usage a usage frame precedes [DONE]', async () => {
    const text = await rawStream({
      model: CHAT_MODEL,
      messages: user('Hi'),
      stream: true,
      max_tokens: 5,
      stream_options: { include_usage: true },
    });
    const frames = text.split('\n\n').filter(Boolean);
    expect(frames.at(-1)).toBe('data: [DONE]');
    const usageFrame = JSON.parse(frames.at(-2)!.slice(6));
    expect(usageFrame.choices).toEqual([]);
    expect(usageFrame.usage).toMatchObject({ completion_tokens: 5 });
    for (const f of frames.slice(0, -2)) expect(JSON.parse(f.slice(6)).usage).toBeNull();
  });

  it('CHAT-2 CHAT-3 the SDK streams text and reads the usage frame', async () => {
    const stream = await h.client().chat.completions.create({
      model: CHAT_MODEL,
      messages: user('Tell me something'),
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 12,
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.length).toBeGreaterThan(0);
    expect(usage?.completion_tokens).toBe(12);
  });

  it('CHAT-1 tools round-trip: a tool call, then the tool result, then an answer', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    const c = h.client();
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Use get_weather for Paris' },
    ];
    const first = await c.chat.completions.create({ model: CHAT_MODEL, messages, tools, max_tokens: 64 });
    const call = first.choices[0]!.message.tool_calls?.[0];
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call?.type === 'function' && call.function.name).toBe('get_weather');
    messages.push(first.choices[0]!.message, {
      role: 'tool',
      tool_call_id: call!.id,
      content: '{"temp":21}',
    });
    const second = await c.chat.completions.create({ model: CHAT_MODEL, messages, tools, max_tokens: 16 });
    expect(second.choices[0]!.message.content?.length).toBeGreaterThan(0);
    // Streamed tool calls come through too.
    const stream = await c.chat.completions.create({
      model: CHAT_MODEL,
      messages: messages.slice(0, 1),
      tools,
      stream: true,
    });
    const names: string[] = [];
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta.tool_calls ?? [])
        if (tc.function?.name) names.push(tc.function.name);
    }
    expect(names).toEqual(['get_weather']);
  });

  it('CHAT-4 a stream failing after its first frame keeps 200 and the SDK raises the in-band error', async () => {
    for (const s of h.sims) s.setOptions({ failMidStream: 1 });
    try {
      const { data: stream, response } = await h
        .client()
        .chat.completions.create({
          model: CHAT_MODEL,
          messages: user('A long answer please'),
          stream: true,
          max_tokens: 40,
        })
        .withResponse();
      expect(response.status).toBe(200);
      let chunks = 0;
      const err = await (async () => {
        for await (const _ of stream) chunks++;
      })().catch((e: unknown) => e);
      expect(chunks).toBeGreaterThan(0);
      expect(err).toBeInstanceOf(OpenAI.APIError);
      expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('server_error');
    } finally {
      for (const s of h.sims) s.setOptions({ failMidStream: 0 });
    }
  });

  it('ERR-3 a catalogued model with no ready engine (restarting) answers a retryable 500 with Retry-After; an unknown one is 404', async () => {
    await h.catalogue.put({
      id: 'Org/Restarting',
      kind: 'chat',
      pricing: { USD: { input: '1', output: '1' } },
      endpoints: [],
      created: 1_700_000_000,
    });
    const call = (model: string) =>
      fetch(`${h.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: user('hi'), max_tokens: 3 }),
      });
    let res = await call('Org/Restarting');
    for (let i = 0; i < 100 && res.status === 404; i++) {
      await new Promise((r) => setTimeout(r, 20)); // the snapshot learns of the new entry
      res = await call('Org/Restarting');
    }
    expect(res.status).toBe(500);
    expect(res.headers.get('retry-after')).toBe('2');
    expect(res.headers.get('x-should-retry')).toBeNull();
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'server_error',
      message: expect.stringMatching(/no engine ready/),
    });
    expect((await call('Org/Never-Catalogued')).status).toBe(404);
  });

  it('KEY-5 rotating the key mid-stream ends that stream with invalid_api_key; what was generated is billed', async () => {
    const a = await h.newAccount();
    for (const s of h.sims) s.setOptions({ itlMs: 20 });
    try {
      const stream = await h.client(a.secret).chat.completions.create({
        model: CHAT_MODEL,
        messages: user('Write a long story'),
        stream: true,
        max_tokens: 200,
      });
      let chunks = 0;
      const err = await (async () => {
        for await (const _ of stream) {
          if (++chunks === 3) await h.keys.rotate(a.accountId, a.keyId);
        }
      })().catch((e: unknown) => e);
      expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe('invalid_api_key');
      expect(chunks).toBeLessThan(100);
    } finally {
      for (const s of h.sims) s.setOptions({ itlMs: 1 });
    }
    const b = await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({ type: 'charge', keyId: a.keyId, model: CHAT_MODEL });
    expect(rec!.outputTokens).toBeGreaterThan(0);
    expect(rec!.outputTokens).toBeLessThan(200);
    expect(b.balance).toBe(100_000_000_000 - rec!.amount);
  });

  it('a client that stops reading mid-stream is billed for what was generated, not the whole hold', async () => {
    const a = await h.newAccount();
    for (const s of h.sims) s.setOptions({ itlMs: 10 });
    try {
      const stream = await h.client(a.secret).chat.completions.create({
        model: CHAT_MODEL,
        messages: user('Write a long story'),
        stream: true,
        max_tokens: 200,
      });
      let chunks = 0;
      for await (const _ of stream) if (++chunks === 5) break; // the SDK aborts the request
    } finally {
      for (const s of h.sims) s.setOptions({ itlMs: 1 });
    }
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec!.outputTokens).toBeGreaterThan(0);
    expect(rec!.outputTokens).toBeLessThan(200);
  });
});

describe('relaying', () => {
  it('CHAT-1 CHAT-3 a model the engine serves under another name is echoed by its catalogue id, streamed or not', async () => {
    const plain = await h
      .client()
      .chat.completions.create({ model: ALIAS_MODEL, messages: user('Hi'), max_tokens: 4 });
    expect(plain.model).toBe(ALIAS_MODEL);
    for (const stream_options of [
      undefined,
      { include_usage: true },
      { include_usage: true, continuous_usage_stats: true },
    ]) {
      const text = await rawStream({
        model: ALIAS_MODEL,
        messages: user('Hi'),
        stream: true,
        max_tokens: 4,
        stream_options,
      });
      const chunks = text
        .split('\n\n')
        .filter((f) => f && f !== 'data: [DONE]')
        .map((f) => JSON.parse(f.slice(6)));
      expect(chunks.length).toBeGreaterThan(2);
      for (const c of chunks) expect(c.model).toBe(ALIAS_MODEL);
      const withUsage = chunks.filter((c) => c.usage != null);
      if (stream_options === undefined) expect(chunks.some((c) => 'usage' in c)).toBe(false);
      else if (stream_options.continuous_usage_stats) expect(withUsage.length).toBe(chunks.length);
      else expect(withUsage.length).toBe(1);
    }
  });

  it('CHAT-2 a client that stops reading for a while still gets every frame in order, billed exactly', async () => {
    const a = await h.newAccount();
    for (const s of h.sims) s.setOptions({ itlMs: 0 });
    let text = '';
    try {
      // About 1,000 frames generated at once while the client reads nothing for 300 ms: the
      // proxy's socket fills and it must pause the engine, then resume it, losing nothing.
      const body = JSON.stringify({
        model: CHAT_MODEL,
        messages: user('Tell a long story'),
        stream: true,
        n: 4,
        max_tokens: 256,
        ignore_eos: true,
        stream_options: { include_usage: true },
      });
      text = await new Promise<string>((resolve, reject) => {
        const req = httpRequest(
          `${h.baseURL}/chat/completions`,
          {
            method: 'POST',
            headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
          },
          (res) => {
            res.pause();
            setTimeout(() => res.resume(), 300);
            let out = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => {
              out += c;
            });
            res.on('end', () => resolve(out));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    } finally {
      for (const s of h.sims) s.setOptions({ itlMs: 1 });
    }
    const frames = text.split('\n\n').filter(Boolean);
    expect(frames.at(-1)).toBe('data: [DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.slice(6)));
    const usage = chunks.at(-1).usage;
    expect(usage.completion_tokens).toBe(4 * 256);
    const content = chunks.filter((c) => c.choices[0]?.delta?.content);
    expect(content.length).toBe(4 * 256);
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec!.outputTokens).toBe(4 * 256);
  });
});

describe('embeddings', () => {
  it('EMB-1 EMB-2 float and base64 (little-endian float32) carry the same vectors', async () => {
    const c = h.client();
    const input = ['first text', 'second text'];
    const asFloat = await c.embeddings.create({ model: 'embed/small-V1', input, encoding_format: 'float' });
    expect(asFloat.model).toBe(EMBED_MODEL);
    expect(asFloat.data).toHaveLength(2);
    const res = await fetch(`${h.baseURL}/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: EMBED_MODEL, input, encoding_format: 'base64' }),
    });
    const asB64 = (await res.json()) as { data: { embedding: string }[] };
    for (let i = 0; i < 2; i++) {
      const buf = Buffer.from(asB64.data[i]!.embedding, 'base64');
      const decoded = Array.from({ length: buf.length / 4 }, (_, j) => buf.readFloatLE(j * 4));
      expect(decoded).toEqual(Array.from(Float32Array.from(asFloat.data[i]!.embedding)));
    }
    // The SDK's default asks for base64 and decodes it itself.
    const viaSdk = await c.embeddings.create({ model: EMBED_MODEL, input });
    expect(viaSdk.data[0]!.embedding).toEqual(Array.from(Float32Array.from(asFloat.data[0]!.embedding)));
  });

  it('EMB-1 a chat model on /v1/embeddings is a 400 naming model', async () => {
    const err = await h
      .client()
      .embeddings.create({ model: CHAT_MODEL, input: 'x' })
      .catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((err as InstanceType<typeof OpenAI.APIError>).param).toBe('model');
    expect((err as InstanceType<typeof OpenAI.APIError>).message).toContain(
      `The model '${CHAT_MODEL}' is a chat model; call it with /v1/chat/completions.`,
    );
  });

  it('EMB-1 an embedding model on /v1/chat/completions is a 400 that names it as such', async () => {
    const err = await h
      .client()
      .chat.completions.create({ model: EMBED_MODEL, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((err as InstanceType<typeof OpenAI.APIError>).message).toContain(
      `The model '${EMBED_MODEL}' is an embedding model; call it with /v1/embeddings.`,
    );
  });
});
