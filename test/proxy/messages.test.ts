// The Messages dialect end to end (MSG-1..9, AUTH-3, AUTH-4, ERR-1), with the official
// @anthropic-ai/sdk as the client against the real proxy, Redis and simulator engines.
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import {
  CHAT_MODEL,
  chatModelCost,
  generatedUntilAborted,
  type Harness,
  sentDuring as sentEngines,
  startHarness,
} from './harness.ts';

const VISION_MODEL = 'Org/Vision-Chat';
const THINKING_MODEL = 'Org/Thinking-Chat';
const PLAIN_MODEL = 'Org/No-Tools';

let h: Harness;
let base: string;
beforeAll(async () => {
  h = await startHarness(
    { PROXY_MESSAGES_PING_MS: '40' },
    {
      entries: (endpoints) => [
        {
          id: VISION_MODEL,
          kind: 'chat',
          pricing: { USD: { input: '1', cachedInput: '0.5', output: '2' } },
          capabilities: { tools: true, vision: true },
          endpoints,
          created: 1_700_000_000,
        },
        {
          id: THINKING_MODEL,
          kind: 'chat',
          pricing: { USD: { input: '1', output: '2' } },
          capabilities: { tools: true, reasoning: true },
          endpoints,
          created: 1_700_000_000,
        },
        {
          id: PLAIN_MODEL,
          kind: 'chat',
          pricing: { USD: { input: '1', output: '2' } },
          endpoints,
          created: 1_700_000_000,
        },
      ],
    },
  );
  base = h.baseURL.replace(/\/v1$/, '');
});
afterAll(async () => {
  await h?.stop();
});

const anthropic = (apiKey = h.secret, opts: Partial<ConstructorParameters<typeof Anthropic>[0]> = {}) =>
  new Anthropic({ apiKey, baseURL: base, maxRetries: 0, ...opts });

const weatherTool: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const sentDuring = (run: () => Promise<unknown>) => sentEngines(h.sims, run);

/** The events of a raw Messages stream, each with the milliseconds since the request was sent. */
async function timedEvents(body: Record<string, unknown>, apiKey = h.secret) {
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const events: { at: number; type: string; data: Record<string, unknown> }[] = [];
  const decoder = new TextDecoder();
  let buffered = '';
  const reader = res.body!.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    const at = performance.now() - t0;
    buffered += decoder.decode(r.value, { stream: true });
    let cut = buffered.indexOf('\n\n');
    while (cut !== -1) {
      const [ev, data] = buffered.slice(0, cut).split('\n');
      buffered = buffered.slice(cut + 2);
      const parsed = JSON.parse(data!.slice('data: '.length)) as Record<string, unknown>;
      expect(ev).toBe(`event: ${parsed.type as string}`);
      events.push({ at, type: parsed.type as string, data: parsed });
      cut = buffered.indexOf('\n\n');
    }
  }
  return { res, events };
}

async function raw(body: unknown, headers: Record<string, string> = {}, path = '/v1/messages') {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: {
      'x-api-key': h.secret,
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return {
    res,
    json: (await res.json()) as {
      type: string;
      error: { type: string; message: string; code: string };
      request_id: string;
    },
  };
}

describe('Messages: text', () => {
  it('MSG-1 MSG-2 non-streaming text through the SDK: msg_ id, canonical model, text block, usage', async () => {
    const m = await anthropic().messages.create({
      model: 'org/chat-model',
      max_tokens: 12,
      messages: [{ role: 'user', content: 'Tell me about the sea' }],
    });
    expect(m.id).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(m.type).toBe('message');
    expect(m.role).toBe('assistant');
    expect(m.model).toBe(CHAT_MODEL);
    expect(m.content[0]!.type).toBe('text');
    expect((m.content[0] as Anthropic.TextBlock).text.length).toBeGreaterThan(0);
    expect(m.stop_reason).toBe('max_tokens');
    expect(m.usage.output_tokens).toBe(12);
    expect(m.usage.input_tokens).toBeGreaterThan(0);
    expect(m.usage.cache_creation_input_tokens).toBe(0);
    expect(m._request_id).toMatch(/^req_[0-9a-f]{24}$/);
  });

  it('usage billed equals usage reported, not streamed: the record, its cost at the model’s rates', async () => {
    const a = await h.newAccount();
    const m = await anthropic(a.secret).messages.create({
      model: CHAT_MODEL,
      max_tokens: 20,
      messages: [{ role: 'user', content: 'Tell me about rivers' }],
    });
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({ type: 'charge', keyId: a.keyId, model: CHAT_MODEL });
    expect(rec!.inputTokens).toBe(m.usage.input_tokens + m.usage.cache_read_input_tokens!);
    expect(rec!.cachedTokens ?? 0).toBe(m.usage.cache_read_input_tokens);
    expect(rec!.outputTokens).toBe(m.usage.output_tokens);
    expect(rec!.cost).toBe(chatModelCost(rec!));
    expect(rec!.amount).toBe(rec!.cost);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('MSG-7 streams through messages.stream(): finalMessage() equals the streamed text; usage billed equals usage reported', async () => {
    const a = await h.newAccount();
    const stream = anthropic(a.secret).messages.stream({
      model: CHAT_MODEL,
      max_tokens: 40,
      system: 'You are terse.',
      messages: [{ role: 'user', content: 'Describe a lighthouse' }],
    });
    let streamed = '';
    stream.on('text', (t) => {
      streamed += t;
    });
    const final = await stream.finalMessage();
    expect(streamed.length).toBeGreaterThan(0);
    expect((final.content[0] as Anthropic.TextBlock).text).toBe(streamed);
    expect(['end_turn', 'max_tokens']).toContain(final.stop_reason);
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({ type: 'charge', keyId: a.keyId, model: CHAT_MODEL });
    expect(rec!.outputTokens).toBe(final.usage.output_tokens);
    expect(rec!.inputTokens).toBe(final.usage.input_tokens + final.usage.cache_read_input_tokens!);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('MSG-7 the raw event sequence: message_start, block start/delta/stop, message_delta, message_stop, each with its event line', async () => {
    const res = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': h.secret, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: CHAT_MODEL,
        max_tokens: 6,
        stream: true,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = (await res.text())
      .split('\n\n')
      .filter(Boolean)
      .map((e) => {
        const [ev, data] = e.split('\n');
        const parsed = JSON.parse(data!.slice('data: '.length));
        expect(ev).toBe(`event: ${parsed.type}`);
        return parsed.type as string;
      })
      .filter((t) => t !== 'ping');
    expect(events[0]).toBe('message_start');
    expect(events[1]).toBe('content_block_start');
    expect(events.slice(2, -3).every((t) => t === 'content_block_delta')).toBe(true);
    expect(events.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
  });

  it('MSG-2 stop_sequences end the answer with stop_reason stop_sequence naming the one matched', async () => {
    const first = await anthropic().messages.create({
      model: CHAT_MODEL,
      max_tokens: 40,
      messages: [{ role: 'user', content: 'Tell me about the sea' }],
    });
    const words = (first.content[0] as Anthropic.TextBlock).text.split(' ');
    const stop = ` ${words[3]}`;
    const cut = await anthropic().messages.create({
      model: CHAT_MODEL,
      max_tokens: 40,
      stop_sequences: ['never-there', stop],
      messages: [{ role: 'user', content: 'Tell me about the sea' }],
    });
    expect(cut.stop_reason).toBe('stop_sequence');
    expect(cut.stop_sequence).toBe(stop);
    const streamed = await anthropic()
      .messages.stream({
        model: CHAT_MODEL,
        max_tokens: 40,
        stop_sequences: [stop],
        messages: [{ role: 'user', content: 'Tell me about the sea' }],
      })
      .finalMessage();
    expect(streamed.stop_reason).toBe('stop_sequence');
    expect(streamed.stop_sequence).toBe(stop);
  });

  it('MSG-7 a mid-stream engine failure arrives as event: error, which the SDK raises; what was generated is billed', async () => {
    const a = await h.newAccount();
    for (const s of h.sims) s.setOptions({ failMidStream: 1 });
    try {
      const stream = anthropic(a.secret).messages.stream({
        model: CHAT_MODEL,
        max_tokens: 40,
        messages: [{ role: 'user', content: 'Tell me a long story' }],
      });
      await expect(stream.finalMessage()).rejects.toThrow(/engine failed while streaming/);
    } finally {
      for (const s of h.sims) s.setOptions({ failMidStream: 0 });
    }
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec!.outputTokens).toBeGreaterThan(0);
    expect(rec!.outputTokens).toBeLessThan(40);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('MSG-7 a slow engine (time to first token past the ping interval): message_start and pings before the first token, true usage in message_delta, billed as reported', async () => {
    const a = await h.newAccount();
    for (const s of h.sims) s.setOptions({ ttftMs: 400 });
    let timed: Awaited<ReturnType<typeof timedEvents>>;
    let final: Anthropic.Message;
    try {
      const body = {
        model: CHAT_MODEL,
        max_tokens: 8,
        messages: [{ role: 'user' as const, content: 'Think, then answer' }],
      };
      timed = await timedEvents(body, a.secret);
      final = await anthropic(a.secret).messages.stream(body).finalMessage();
    } finally {
      for (const s of h.sims) s.setOptions({ ttftMs: 5 });
    }
    const { res, events } = timed;
    expect(res.status).toBe(200);
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    const first = events.findIndex((e) => e.type === 'content_block_start');
    expect(events[0]!.type).toBe('message_start');
    // The head went out after one to two 40 ms intervals, long before the engine's first token.
    expect(events[0]!.at).toBeLessThan(250);
    expect(events[first]!.at).toBeGreaterThan(380);
    expect(events.slice(1, first).filter((e) => e.type === 'ping').length).toBeGreaterThanOrEqual(3);
    expect(events.slice(1, first).every((e) => e.type === 'ping')).toBe(true);
    const started = (events[0]!.data.message as Anthropic.Message).usage;
    expect(started.input_tokens).toBeGreaterThan(0); // the proxy's estimate at that point
    const delta = events.find((e) => e.type === 'message_delta')!.data.usage as Anthropic.MessageDeltaUsage;
    expect(events.at(-1)!.type).toBe('message_stop');
    await h.settled(a.accountId);
    const [second, firstRec] = await usageRecords(h.redis.client(), a.accountId, { count: 2 });
    // message_delta carries the engine's true counts, exactly what was billed — streamed raw or by the SDK.
    for (const [rec, usage] of [
      [firstRec!, delta],
      [second!, final.usage],
    ] as const) {
      expect(rec.inputTokens).toBe(usage.input_tokens! + usage.cache_read_input_tokens!);
      expect(rec.outputTokens).toBe(usage.output_tokens);
      expect(rec.cost).toBe(chatModelCost(rec));
    }
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('MSG-7 ERR-3 an engine failing before its first token, once the head is out: event: error (api_error), raised by the SDK, nothing charged', async () => {
    const a = await h.newAccount();
    for (const s of h.sims) s.setOptions({ ttftMs: 200, failBeforeFirstByte: 1 });
    let timed: Awaited<ReturnType<typeof timedEvents>>;
    let raised: unknown;
    try {
      const body = { model: CHAT_MODEL, max_tokens: 8, messages: [{ role: 'user' as const, content: 'hi' }] };
      timed = await timedEvents(body, a.secret);
      raised = await anthropic(a.secret)
        .messages.stream(body)
        .finalMessage()
        .catch((e: unknown) => e);
    } finally {
      for (const s of h.sims) s.setOptions({ ttftMs: 5, failBeforeFirstByte: 0 });
    }
    const { res, events } = timed;
    expect(res.status).toBe(200);
    expect(events[0]!.type).toBe('message_start');
    expect(events.slice(1, -1).every((e) => e.type === 'ping')).toBe(true);
    const last = events.at(-1)!;
    expect(last.type).toBe('error');
    expect(last.data).toMatchObject({
      type: 'error',
      error: { type: 'api_error', code: 'server_error' },
      request_id: res.headers.get('x-request-id'),
    });
    expect(raised).toBeInstanceOf(Anthropic.APIError);
    expect(String(raised)).toMatch(/No engine could serve/);
    await h.settled(a.accountId);
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 5 })).toHaveLength(1); // the top-up only
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('ERR-2 ERR-3 engines failing before anything was written → a real 500 api_error, retryable, nothing charged, streamed or not', async () => {
    const a = await h.newAccount();
    for (const s of h.sims) s.setOptions({ ttftMs: 0, failBeforeFirstByte: 1 });
    try {
      for (const stream of [false, true]) {
        const { res, json } = await raw(
          { model: CHAT_MODEL, max_tokens: 8, stream, messages: [{ role: 'user', content: 'hi' }] },
          { 'x-api-key': a.secret },
        );
        expect([stream, res.status]).toEqual([stream, 500]);
        expect(res.headers.get('content-type')).toContain('application/json');
        expect(res.headers.get('x-should-retry')).not.toBe('false');
        expect(json).toMatchObject({ type: 'error', error: { type: 'api_error', code: 'server_error' } });
        expect(json.request_id).toBe(res.headers.get('x-request-id'));
        expect(res.headers.get('request-id')).toBe(json.request_id);
      }
      const err = await anthropic(a.secret)
        .messages.create({ model: CHAT_MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.InternalServerError);
    } finally {
      for (const s of h.sims) s.setOptions({ ttftMs: 5, failBeforeFirstByte: 0 });
    }
    await h.settled(a.accountId);
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 5 })).toHaveLength(1); // the top-up only
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('MSG-7 a client that disconnects mid-stream stops the engine request and pays for what was generated', async () => {
    const a = await h.newAccount();
    const params = {
      model: CHAT_MODEL,
      max_tokens: 200,
      messages: [{ role: 'user' as const, content: 'Write a very long story' }],
    };
    const uncut = await anthropic().messages.create(params);
    const before = h.sims.map((s) => s.stats());
    let seen = 0;
    for (const s of h.sims) s.setOptions({ itlMs: 25 });
    try {
      const stream = await anthropic(a.secret).messages.create({ ...params, stream: true });
      for await (const ev of stream) {
        if (ev.type === 'content_block_delta' && ++seen === 5) break; // the SDK aborts the request
      }
    } finally {
      for (const s of h.sims) s.setOptions({ itlMs: 1 });
    }
    // The engine saw its client (the proxy) go away and stopped generating.
    const generated = await generatedUntilAborted(h.sims, before);
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({ type: 'charge', keyId: a.keyId, model: CHAT_MODEL });
    // Billed the engine's last reported count: at least what the client got, never more than the
    // engine made (tokens still in flight when the proxy cut the engine off are not billed: on a
    // loaded machine that is a frame or two).
    expect(rec!.outputTokens).toBeGreaterThanOrEqual(seen);
    expect(rec!.outputTokens).toBeLessThanOrEqual(generated);
    expect(generated).toBeLessThan(uncut.usage.output_tokens);
    expect(rec!.cost).toBe(chatModelCost(rec!));
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('KEY-5 rotating the key mid-stream ends the Messages stream with event: error (invalid_api_key); what was generated is billed', async () => {
    const a = await h.newAccount();
    for (const s of h.sims) s.setOptions({ itlMs: 20 });
    try {
      const stream = anthropic(a.secret).messages.stream({
        model: CHAT_MODEL,
        max_tokens: 200,
        messages: [{ role: 'user', content: 'Write a long story' }],
      });
      let deltas = 0;
      stream.on('text', () => {
        if (++deltas === 3) void h.keys.rotate(a.accountId, a.keyId);
      });
      const err = await stream.finalMessage().catch((e: unknown) => e);
      expect(String((err as Error).message)).toMatch(/invalid_api_key|API key/);
      expect(deltas).toBeLessThan(100);
    } finally {
      for (const s of h.sims) s.setOptions({ itlMs: 1 });
    }
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({ type: 'charge', keyId: a.keyId, model: CHAT_MODEL });
    expect(rec!.outputTokens).toBeGreaterThan(0);
    expect(rec!.outputTokens).toBeLessThan(200);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('MSG-7 ping events keep a slow stream alive', async () => {
    for (const s of h.sims) s.setOptions({ itlMs: 120 });
    try {
      const res = await fetch(`${base}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': h.secret, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: CHAT_MODEL,
          max_tokens: 3,
          stream: true,
          messages: [{ role: 'user', content: 'Hi' }],
        }),
      });
      const text = await res.text();
      expect(text).toContain('event: ping\ndata: {"type":"ping"}');
      expect(text.trimEnd().endsWith('data: {"type":"message_stop"}')).toBe(true);
    } finally {
      for (const s of h.sims) s.setOptions({ itlMs: 1 });
    }
  });
});

describe('Messages: tool use', () => {
  for (const streaming of [false, true]) {
    it(`MSG-2 a two-step tool-use conversation (tool_use → tool_result → answer), ${streaming ? 'streaming' : 'not streaming'}`, async () => {
      const client = anthropic();
      const ask = (messages: Anthropic.MessageParam[]) => {
        const params = { model: CHAT_MODEL, max_tokens: 64, tools: [weatherTool], messages };
        return streaming ? client.messages.stream(params).finalMessage() : client.messages.create(params);
      };
      const question: Anthropic.MessageParam = { role: 'user', content: 'Please call get_weather for Paris' };
      const first = await ask([question]);
      expect(first.stop_reason).toBe('tool_use');
      const use = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
      expect(use.name).toBe('get_weather');
      expect(typeof use.input).toBe('object');
      expect(Object.keys(use.input as object)).toContain('city');
      let second: Anthropic.Message | undefined;
      const [sent] = (await sentDuring(async () => {
        second = await ask([
          question,
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: use.id, content: '{"temp": 21}' },
              { type: 'text', text: 'Thanks, summarise it.' },
            ],
          },
        ]);
      })) as { messages: { role: string; tool_call_id?: string; content: unknown }[] }[];
      expect(second!.stop_reason).not.toBe('tool_use');
      expect(second!.content[0]!.type).toBe('text');
      // The engine got the tool result as a tool message right after the assistant's call, then the text.
      expect(sent!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
      expect(sent!.messages[2]).toMatchObject({ tool_call_id: use.id, content: '{"temp": 21}' });
    });
  }

  it('MSG-2 tool_choice any forces a call; tool names one; disable_parallel_tool_use reaches the engine', async () => {
    const client = anthropic();
    const lookup: Anthropic.Tool = {
      name: 'lookup',
      input_schema: { type: 'object', properties: { q: { type: 'string' } } },
    };
    let forced: Anthropic.Message | undefined;
    const [sent] = await sentDuring(async () => {
      forced = await client.messages.create({
        model: CHAT_MODEL,
        max_tokens: 64,
        tools: [weatherTool, lookup],
        tool_choice: { type: 'tool', name: 'lookup', disable_parallel_tool_use: true },
        messages: [{ role: 'user', content: 'anything' }],
      });
    });
    const use = forced!.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    expect(use.name).toBe('lookup');
    // The engine finishes a forced call `stop` (vLLM 0.32, as OpenAI); the client still must run it.
    expect(forced!.stop_reason).toBe('tool_use');
    expect(sent!.tool_choice).toEqual({ type: 'function', function: { name: 'lookup' } });
    expect(sent!.parallel_tool_calls).toBe(false);
    const any = await client.messages.create({
      model: CHAT_MODEL,
      max_tokens: 64,
      tools: [weatherTool],
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'just chat' }],
    });
    expect(any.stop_reason).toBe('tool_use');
  });

  it('an editor-style call: ?beta=true, anthropic-version and anthropic-beta, system blocks with cache_control, 40 tools', async () => {
    const tools: Anthropic.Tool[] = Array.from({ length: 40 }, (_, i) => ({
      name: `tool_${i}`,
      description: `Tool number ${i}`,
      input_schema: { type: 'object', properties: { arg: { type: 'string' } } },
    }));
    const client = anthropic(h.secret, { defaultHeaders: { 'anthropic-beta': 'prompt-caching-2024-07-31' } });
    let m: Anthropic.Beta.BetaMessage | undefined;
    const [json] = (await sentDuring(async () => {
      m = await client.beta.messages.create({
        model: CHAT_MODEL,
        max_tokens: 32,
        system: [
          { type: 'text', text: 'You are an editor assistant.' },
          { type: 'text', text: 'Project rules: be brief.', cache_control: { type: 'ephemeral' } },
        ],
        tools,
        metadata: { user_id: 'user-1' },
        messages: [
          {
            role: 'user',
            content: [{ type: 'text', text: 'Hello there', cache_control: { type: 'ephemeral' } }],
          },
        ],
      });
    })) as { tools: unknown[]; messages: { role: string; content: string }[]; user: string }[];
    expect(m!.content.length).toBeGreaterThan(0);
    expect(json!.tools).toHaveLength(40);
    expect(json!.messages[0]).toEqual({
      role: 'system',
      content: 'You are an editor assistant.\n\nProject rules: be brief.',
    });
    expect(json!.user).toBe('user-1');
  });
});

describe('Messages: today’s API (Claude Code’s first request)', () => {
  // The shape Claude Code 2.1.x sends first (issue 25): ?beta=true, seven anthropic-beta values,
  // a system turn inside messages, adaptive thinking, context_management, output_config.effort,
  // metadata.user_id, many custom tools, streamed.
  const betas = [
    'claude-code-20250219',
    'oauth-2025-04-20',
    'interleaved-thinking-2025-05-14',
    'context-management-2025-06-27',
    'prompt-caching-scope-2026-01-05',
    'effort-2025-11-24',
    'fine-grained-tool-streaming-2025-05-14',
  ];
  const tools: Anthropic.Beta.BetaTool[] = Array.from({ length: 21 }, (_, i) => ({
    name: i === 0 ? 'Bash' : `Tool${i}`,
    description: `Tool number ${i}`,
    input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  }));
  const firstRequest = (model: string, maxTokens = 3000) =>
    ({
      model,
      max_tokens: maxTokens,
      stream: true,
      system: [
        { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
        { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Say hello.' }] },
        { role: 'system', content: 'The user is in /work/project.' },
        { role: 'user', content: [{ type: 'text', text: 'Please.', cache_control: { type: 'ephemeral' } }] },
      ],
      tools,
      thinking: { type: 'adaptive' },
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      output_config: { effort: 'xhigh' },
      metadata: { user_id: 'user_abc_account_def_session_ghi' },
    }) as unknown as Anthropic.Beta.MessageCreateParamsStreaming;

  it('MSG-6 MSG-7 a Claude-Code-shaped first request streams through client.beta.messages.stream(); translated as documented; billed as reported', async () => {
    const a = await h.newAccount();
    const client = anthropic(a.secret);
    let final: Anthropic.Beta.BetaMessage | undefined;
    const [sent] = await sentDuring(async () => {
      const stream = client.beta.messages.stream(firstRequest(THINKING_MODEL), {
        headers: { 'anthropic-beta': betas.join(',') },
        query: { beta: 'true' },
      });
      final = await stream.finalMessage();
    });
    expect(final!.content.length).toBeGreaterThan(0);
    expect(final!.usage.output_tokens).toBeGreaterThan(0);
    const messages = sent!.messages as { role: string; content: unknown }[];
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'system', 'user']);
    expect(messages[2]).toEqual({ role: 'system', content: 'The user is in /work/project.' });
    expect(sent!.tools).toHaveLength(21);
    expect(sent!.chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(sent!.reasoning_effort).toBe('high');
    expect(sent!.user).toBe('user_abc_account_def_session_ghi');
    expect(sent).not.toHaveProperty('context_management');
    expect(sent).not.toHaveProperty('output_config');
    const [record] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(record!.outputTokens).toBe(final!.usage.output_tokens);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('the same request on a model that cannot reason: adaptive thinking and effort are advisory there (the model answers directly); enabled thinking is refused by name', async () => {
    const a = await h.newAccount();
    const client = anthropic(a.secret);
    const [sent] = await sentDuring(async () => {
      const m = await client.beta.messages.create({ ...firstRequest(CHAT_MODEL, 200), stream: false });
      expect(m.content.length).toBeGreaterThan(0);
    });
    expect(sent).not.toHaveProperty('reasoning_effort');
    expect(sent).not.toHaveProperty('chat_template_kwargs');
    const refused = await client.beta.messages
      .create({ ...firstRequest(CHAT_MODEL, 200), thinking: { type: 'enabled', budget_tokens: 100 } })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect((refused as InstanceType<typeof Anthropic.BadRequestError>).message).toMatch(/think/);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('output_config.format reaches the engine as response_format json_schema', async () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const [sent] = await sentDuring(() =>
      anthropic().messages.create({
        model: CHAT_MODEL,
        max_tokens: 64,
        output_config: { format: { type: 'json_schema', schema } },
        messages: [{ role: 'user', content: 'Where?' }],
      }),
    );
    expect(sent!.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'output', schema, strict: true },
    });
  });
});

describe('Messages: carried, never dropped', () => {
  it('a final assistant turn is a prefill: the engine continues it and the answer carries on from it, streamed or not', async () => {
    const question: Anthropic.MessageParam = { role: 'user', content: 'Describe the harbour at dawn' };
    const whole = await anthropic().messages.create({
      model: CHAT_MODEL,
      max_tokens: 100,
      messages: [question],
    });
    const text = (whole.content[0] as Anthropic.TextBlock).text;
    const prefill = text.split(' ').slice(0, 2).join(' ');
    const params = {
      model: CHAT_MODEL,
      max_tokens: 100,
      messages: [question, { role: 'assistant' as const, content: prefill }],
    };
    let continued: Anthropic.Message | undefined;
    const [sent] = await sentDuring(async () => {
      continued = await anthropic().messages.create(params);
    });
    expect(sent).toMatchObject({ continue_final_message: true, add_generation_prompt: false });
    expect((sent!.messages as unknown[]).at(-1)).toEqual({ role: 'assistant', content: prefill });
    // Like Anthropic's, the answer holds only the continuation.
    expect(prefill + (continued!.content[0] as Anthropic.TextBlock).text).toBe(text);
    const streamed = await anthropic().messages.stream(params).finalMessage();
    expect(prefill + (streamed.content[0] as Anthropic.TextBlock).text).toBe(text);
    // count_tokens renders the prompt the same way (no reply header), so it still equals the call's.
    const counted = await anthropic().messages.countTokens({ model: CHAT_MODEL, messages: params.messages });
    expect(counted.input_tokens).toBe(
      continued!.usage.input_tokens + continued!.usage.cache_read_input_tokens!,
    );
  });

  it('strict reaches the engine as function.strict, input_examples in its description; eager_input_streaming accepted', async () => {
    const tool = {
      ...weatherTool,
      strict: true,
      input_examples: [{ city: 'Paris' }],
      eager_input_streaming: true,
    } as Anthropic.Tool;
    const [sent] = (await sentDuring(() =>
      anthropic().messages.create({
        model: CHAT_MODEL,
        max_tokens: 64,
        tools: [tool],
        messages: [{ role: 'user', content: 'Please call get_weather for Paris' }],
      }),
    )) as { tools: { function: Record<string, unknown> }[] }[];
    expect(sent!.tools[0]!.function).toMatchObject({
      name: 'get_weather',
      strict: true,
      description: 'Current weather for a city\n\nInput examples:\n{"city":"Paris"}',
    });
  });
});

describe('Messages: caching and counting', () => {
  it('a repeated long system prompt with a cache_control breakpoint earns cached-input pricing on the next calls', async () => {
    const a = await h.newAccount();
    const system = [
      {
        type: 'text' as const,
        text: `Long instructions. ${'Follow the house style carefully. '.repeat(200)}`,
        cache_control: { type: 'ephemeral' as const },
      },
    ];
    const calls: Anthropic.Message[] = [];
    for (let i = 0; i < 4; i++) {
      calls.push(
        await anthropic(a.secret).messages.create({
          model: CHAT_MODEL,
          max_tokens: 4,
          system,
          messages: [{ role: 'user', content: `question ${i}` }],
        }),
      );
    }
    // Without routing by the breakpoint, each call has even odds of the other (cold) engine.
    for (const m of calls.slice(1)) expect(m.usage.cache_read_input_tokens).toBeGreaterThan(1000);
    await h.settled(a.accountId);
    const recs = (await usageRecords(h.redis.client(), a.accountId, { count: 4 })).reverse();
    recs.forEach((r, i) => {
      expect(r.cachedTokens ?? 0).toBe(calls[i]!.usage.cache_read_input_tokens);
      // BILL-1 BILL-2: the cached tokens at the cached-input rate (0.5), the rest of the input at 1.
      expect(r.cost).toBe(chatModelCost(r));
      expect(r.amount).toBe(r.cost);
    });
    // Each later call costs less than its input at the full rate would have.
    for (const r of recs.slice(1))
      expect(r.cost).toBeLessThan(
        chatModelCost({ ...r, cachedTokens: 0 }) - Math.floor((r.cachedTokens! * 1000) / 4),
      );
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('count_tokens matches the engine’s count (the prompt_tokens of the same call) and is free', async () => {
    const a = await h.newAccount();
    const params = {
      model: VISION_MODEL,
      system: 'Be brief.',
      tools: [weatherTool],
      messages: [
        {
          role: 'user' as const,
          content: [
            { type: 'text' as const, text: 'What is in this picture?' },
            {
              type: 'image' as const,
              source: { type: 'base64' as const, media_type: 'image/png' as const, data: 'iVBORw0KGgo=' },
            },
          ],
        },
      ],
    };
    const counted = await anthropic(a.secret).messages.countTokens(params);
    const done = await anthropic(a.secret).messages.create({ ...params, max_tokens: 3 });
    expect(counted.input_tokens).toBe(done.usage.input_tokens + done.usage.cache_read_input_tokens!);
    await h.settled(a.accountId);
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 10 })).toHaveLength(1 + 1); // top-up + the call
    const { res } = await raw(
      { model: CHAT_MODEL, messages: [{ role: 'user', content: 'hi' }] },
      {},
      '/v1/messages/count_tokens',
    );
    expect(res.headers.get('x-token-count-source')).toBe('engine');
  });
});

describe('Messages: count_tokens, the other ways', () => {
  const params = {
    model: CHAT_MODEL,
    system: 'Be brief.',
    messages: [{ role: 'user' as const, content: 'How many tokens is this question, roughly speaking?' }],
  };

  it('falls back to the proxy’s estimate where no engine has /tokenize, and says so; still free', async () => {
    const a = await h.newAccount();
    const engine = await raw(params, { 'x-api-key': a.secret }, '/v1/messages/count_tokens');
    expect(engine.res.headers.get('x-token-count-source')).toBe('engine');
    for (const s of h.sims) s.setOptions({ tokenizeEndpoint: false });
    let estimate: Awaited<ReturnType<typeof raw>>;
    try {
      estimate = await raw(params, { 'x-api-key': a.secret }, '/v1/messages/count_tokens');
    } finally {
      for (const s of h.sims) s.setOptions({ tokenizeEndpoint: true });
    }
    expect(estimate.res.status).toBe(200);
    expect(estimate.res.headers.get('x-token-count-source')).toBe('estimate');
    const counted = (engine.json as unknown as { input_tokens: number }).input_tokens;
    const estimated = (estimate.json as unknown as { input_tokens: number }).input_tokens;
    // About four bytes a token plus the template's share: the same order as the engine's count.
    expect(estimated).toBeGreaterThan(counted / 2);
    expect(estimated).toBeLessThan(counted * 4);
    await h.settled(a.accountId);
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 5 })).toHaveLength(1); // the top-up only
  });

  it('asks /tokenize with the chat template’s switches (thinking), so it counts what the call sends', async () => {
    const before = h.sims.map((s) => s.received().length);
    const counted = await anthropic().messages.countTokens({
      ...params,
      model: THINKING_MODEL,
      thinking: { type: 'enabled', budget_tokens: 1024 },
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    const [sent] = h.sims
      .flatMap((s, i) => s.received().slice(before[i]))
      .filter((r) => r.path === '/tokenize')
      .map((r) => r.json as Record<string, unknown>);
    expect(sent).toMatchObject({
      chat_template_kwargs: { enable_thinking: true },
      add_generation_prompt: true,
    });
  });

  it('AUTH-5 MSG-8 an unknown key is a 401 on count_tokens too, in this dialect’s shape', async () => {
    const { res, json } = await raw(params, { 'x-api-key': 'sk-service-wrong' }, '/v1/messages/count_tokens');
    expect(res.status).toBe(401);
    expect(json).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error', code: 'invalid_api_key' },
    });
    expect(json.request_id).toBe(res.headers.get('x-request-id'));
    expect(res.headers.get('request-id')).toBe(json.request_id);
    const err = await anthropic('sk-service-wrong')
      .messages.countTokens(params)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
  });
});

describe('Messages: authentication and errors', () => {
  it('AUTH-3 x-api-key and Authorization: Bearer both authenticate', async () => {
    const viaKey = await anthropic().messages.create({
      model: CHAT_MODEL,
      max_tokens: 2,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(viaKey.content.length).toBeGreaterThan(0);
    const viaBearer = new Anthropic({ apiKey: null, authToken: h.secret, baseURL: base, maxRetries: 0 });
    const m = await viaBearer.messages.create({
      model: CHAT_MODEL,
      max_tokens: 2,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(m.content.length).toBeGreaterThan(0);
  });

  it('MSG-9 there is no model listing on this surface; the same key lists models on the chat-completions surface', async () => {
    const none = await fetch(`${base}/v1/messages/models`, { headers: { 'x-api-key': h.secret } });
    expect(none.status).toBe(404);
    const listed = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${h.secret}` } });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toContain(CHAT_MODEL);
  });

  it('MSG-8 ERR-1 request-id by the dialect-of-path rule: any spelling of /v1/messages, and a URL the router refused', async () => {
    for (const [path, status] of [
      ['/V1/Messages', 404],
      ['/v1/MESSAGES/count_tokens', 404],
      ['/v1/messages/%zz', 400],
    ] as const) {
      const { res, json } = await raw({}, {}, path);
      expect([path, res.status]).toEqual([path, status]);
      expect(json.type).toBe('error');
      expect(json.request_id).toMatch(/^req_[0-9a-f]{24}$/);
      expect(res.headers.get('x-request-id')).toBe(json.request_id);
      expect(res.headers.get('request-id')).toBe(json.request_id);
    }
    // The chat-completions surface keeps its own shape and no request-id header.
    const chat = await fetch(`${base}/v1/chat/%zz`, { method: 'POST' });
    expect(chat.status).toBe(400);
    expect(chat.headers.get('x-request-id')).toMatch(/^req_/);
    expect(chat.headers.get('request-id')).toBeNull();
  });

  it('AUTH-4 a malformed x-api-key beside a valid Bearer is 401: x-api-key decides', async () => {
    const { res, json } = await raw(
      { model: CHAT_MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] },
      // Pasted with its scheme: malformed as an x-api-key (HTTP trims surrounding whitespace itself).
      { 'x-api-key': `Bearer ${h.secret}`, authorization: `Bearer ${h.secret}` },
    );
    expect(res.status).toBe(401);
    expect(json.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
  });

  it('MSG-8 ERR-1 401, 403, 404 and 429 in the dialect shape, request_id equal to X-Request-Id and request-id', async () => {
    const body = { model: CHAT_MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] };
    const noCurrency = await h.newAccount({ country: null });
    const broke = await h.newAccount({ credit: '0' });
    const cases: [Record<string, string>, unknown, number, string, string][] = [
      [{ 'x-api-key': 'sk-service-wrong' }, body, 401, 'authentication_error', 'invalid_api_key'],
      [{ 'x-api-key': noCurrency.secret }, body, 403, 'permission_error', 'billing_currency_unset'],
      [{}, { ...body, model: 'No/Such-Model' }, 404, 'not_found_error', 'model_not_found'],
      [{ 'x-api-key': broke.secret }, body, 429, 'rate_limit_error', 'insufficient_quota'],
    ];
    for (const [headers, b, status, type, code] of cases) {
      const { res, json } = await raw(b, headers);
      expect(res.status).toBe(status);
      expect(json.type).toBe('error');
      expect(json.error).toMatchObject({ type, code });
      expect(json.request_id).toMatch(/^req_[0-9a-f]{24}$/);
      expect(res.headers.get('x-request-id')).toBe(json.request_id);
      expect(res.headers.get('request-id')).toBe(json.request_id);
      if (status === 429) expect(res.headers.get('x-should-retry')).toBe('false');
    }
    // The SDK surfaces them as its typed errors, with the request id.
    const err = await anthropic('sk-service-wrong')
      .messages.create(body as Anthropic.MessageCreateParamsNonStreaming)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((err as InstanceType<typeof Anthropic.APIError>).requestID).toMatch(/^req_/);
    // Unknown paths under /v1/messages answer in this dialect too.
    const unknown = await raw(body, {}, '/v1/messages/no-such-route');
    expect(unknown.res.status).toBe(404);
    expect(unknown.json.request_id).toBe(unknown.res.headers.get('x-request-id'));
  });

  const user = (content: unknown) => [{ role: 'user', content }];
  const ask = { model: CHAT_MODEL, max_tokens: 5, messages: user('hi') };
  const serverTools: [string, string][] = [
    ['web search', 'web_search_20250305'],
    ['web fetch', 'web_fetch_20250910'],
    ['code execution', 'code_execution_20250522'],
    ['computer use', 'computer_20250124'],
    ['text editor', 'text_editor_20250728'],
    ['bash', 'bash_20250124'],
    ['memory', 'memory_20250818'],
  ];
  const rejections: [string, Record<string, unknown>, RegExp][] = [
    ['MSG-3 max_tokens missing', { model: CHAT_MODEL, messages: user('hi') }, /'max_tokens'/],
    ['model missing', { max_tokens: 5, messages: user('hi') }, /Missing required parameter: 'model'/],
    ['messages missing', { model: CHAT_MODEL, max_tokens: 5 }, /Missing required parameter: 'messages'/],
    ...serverTools.map(([what, type]): [string, Record<string, unknown>, RegExp] => [
      `MSG-4 a server-side tool (${what}, ${type})`,
      // With the fields such a tool has (display size, max uses): the type is what is named.
      { ...ask, tools: [{ type, name: what.replace(' ', '_'), max_uses: 2, display_width_px: 1024 }] },
      new RegExp(`'tools\\[0\\]\\.type'.*server-side tool "${type}"`),
    ]),
    [
      'MSG-5 a thinking block in a user turn',
      { ...ask, messages: user([{ type: 'thinking', thinking: 'hmm', signature: 's' }]) },
      /thinking block cannot appear in a user turn/,
    ],
    [
      'MSG-5 a redacted_thinking block in a user turn',
      { ...ask, messages: user([{ type: 'redacted_thinking', data: 'xyz' }]) },
      /redacted_thinking block cannot appear in a user turn/,
    ],
    [
      'MSG-5 an unknown key inside a block, named by its path',
      {
        ...ask,
        messages: user([
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b', foo: 1 },
        ]),
      },
      /messages\[0\]\.content\[1\]\.foo/,
    ],
    [
      'an unknown tool_choice type',
      { ...ask, tools: [weatherTool], tool_choice: { type: 'sometimes' } },
      /'tool_choice\.type'.*tool_choice type "sometimes" is not supported/,
    ],
    [
      'an unknown thinking type',
      { ...ask, thinking: { type: 'deep', budget_tokens: 2048 } },
      /'thinking\.type'.*thinking type "deep" is not supported/,
    ],
    [
      'a deferred tool (it needs the server-side tool search)',
      { ...ask, tools: [{ ...weatherTool, defer_loading: true }] },
      /'tools\[0\]\.defer_loading'.*tool search/,
    ],
    [
      'citations pointing at documents',
      {
        ...ask,
        messages: [
          { role: 'user', content: 'hi' },
          {
            role: 'assistant',
            content: [{ type: 'text', text: 'Yes', citations: [{ type: 'char_location' }] }],
          },
          { role: 'user', content: 'more' },
        ],
      },
      /'messages\[1\]\.content\[0\]\.citations'/,
    ],
    [
      'a prefill ending in whitespace',
      {
        ...ask,
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'Well, ' },
        ],
      },
      /trailing whitespace/,
    ],
    [
      'MSG-6 an unknown role',
      { model: CHAT_MODEL, max_tokens: 5, messages: [{ role: 'developer', content: 'x' }] },
      /messages\[0\]\.role.*unknown role "developer"/,
    ],
    [
      'an image in a system turn (system turns are text)',
      {
        model: VISION_MODEL,
        max_tokens: 5,
        messages: [
          {
            role: 'system',
            content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }],
          },
          { role: 'user', content: 'hi' },
        ],
      },
      /image block cannot appear in a system turn/,
    ],
    [
      'a context edit that would clear tool results (not done here)',
      {
        ...ask,
        context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
      },
      /context_management edit "clear_tool_uses_20250919" is not supported/,
    ],
    ['speed "fast" (one speed is served)', { ...ask, speed: 'fast' }, /speed "fast" is not served/],
    [
      'inference_geo (a region per request cannot be promised)',
      { ...ask, inference_geo: 'us' },
      /inference_geo/,
    ],
    [
      'an effort beyond the API’s scale',
      { ...ask, output_config: { effort: 'extreme' } },
      /output_config\.effort/,
    ],
    [
      'MSG-5 an unknown block type',
      { model: CHAT_MODEL, max_tokens: 5, messages: user([{ type: 'hologram', text: 'x' }]) },
      /messages\[0\]\.content\[0\]\.type.*"hologram"/,
    ],
    [
      'MSG-5 a document block',
      {
        model: CHAT_MODEL,
        max_tokens: 5,
        messages: user([{ type: 'document', source: { type: 'text', data: 'x', media_type: 'text/plain' } }]),
      },
      /"document" is not supported/,
    ],
    [
      'an unknown top-level parameter',
      { model: CHAT_MODEL, max_tokens: 5, messages: user('hi'), mcp_servers: [] },
      /mcp_servers/,
    ],
    [
      'a tool_result in an assistant turn',
      {
        model: CHAT_MODEL,
        max_tokens: 5,
        messages: [{ role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'y' }] }],
      },
      /tool_result block cannot appear in an assistant turn/,
    ],
    [
      'an image for a model that cannot read images',
      {
        model: CHAT_MODEL,
        max_tokens: 5,
        messages: user([
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
        ]),
      },
      /cannot read images/,
    ],
    [
      'an image inside a tool_result',
      {
        model: VISION_MODEL,
        max_tokens: 5,
        messages: user([
          {
            type: 'tool_result',
            tool_use_id: 't',
            content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }],
          },
        ]),
      },
      /image inside a tool_result/,
    ],
    [
      'thinking on a model that cannot reason',
      {
        model: CHAT_MODEL,
        max_tokens: 200,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: user('hi'),
      },
      /thinking/,
    ],
    [
      'tools for a model without tool calling',
      { model: PLAIN_MODEL, max_tokens: 5, tools: [weatherTool], messages: user('hi') },
      /cannot call tools/,
    ],
    [
      'tool_choice naming a missing tool',
      {
        model: CHAT_MODEL,
        max_tokens: 5,
        tools: [weatherTool],
        tool_choice: { type: 'tool', name: 'nope' },
        messages: user('hi'),
      },
      /tool_choice/,
    ],
    [
      'an image source of an unknown type',
      {
        model: VISION_MODEL,
        max_tokens: 5,
        messages: user([{ type: 'image', source: { type: 'file', file_id: 'f' } }]),
      },
      /image source type "file"/,
    ],
  ];
  it.each(rejections)('%s → 400 naming it, nothing charged', async (_name, body, message) => {
    const a = await h.newAccount();
    const { res, json } = await raw(body, { 'x-api-key': a.secret });
    expect(res.status).toBe(400);
    expect(json.type).toBe('error');
    expect(json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request' });
    expect(json.error.message).toMatch(message);
    expect(json.request_id).toMatch(/^req_[0-9a-f]{24}$/);
    expect(res.headers.get('x-request-id')).toBe(json.request_id);
    expect(res.headers.get('request-id')).toBe(json.request_id);
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 5 })).toHaveLength(1); // the top-up only
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('thinking maps to the engine where it can reason (chat_template_kwargs.enable_thinking)', async () => {
    const [sent] = await sentDuring(async () => {
      const m = await anthropic().messages.create({
        model: THINKING_MODEL,
        max_tokens: 2000,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'hi' }],
      });
      expect(m.content.length).toBeGreaterThan(0);
    });
    expect(sent!.chat_template_kwargs).toEqual({ enable_thinking: true });
    expect(sent!.thinking_token_budget).toBe(1024);
    await expectLedgerClean(h.redis.client());
  });
});
