// POST /v1/responses end to end (issue 25), through the official openai SDK's responses.create and
// responses.stream against the real proxy, Redis and simulator engines: billed exactly as chat
// completions (one metered call, the same usage record and ledger), the chat surface's errors,
// and stored responses (GET, DELETE, previous_response_id) per account.
import { readFileSync } from 'node:fs';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ErrorCode, errorCatalogue } from '../../core/errors.ts';
import { type UsageEntry, usageRecords } from '../../core/usage/usage.ts';
import { responseErrorCode } from '../../proxy/dialects/responses/error-code.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import {
  CHAT_MODEL,
  chatModel,
  chatModelCost,
  generatedUntilAborted,
  type Harness,
  sentDuring as sentEngines,
  startHarness,
} from './harness.ts';

const VISION_MODEL = 'Org/Vision-Chat';
const THINKING_MODEL = 'Org/Thinking-Chat';

let h: Harness;
beforeAll(async () => {
  h = await startHarness(
    // Small bounds, so the tests can reach them (docs/api.md "The Responses API", State).
    { PROXY_RESPONSES_MAX_STORED_PER_ACCOUNT: '5', PROXY_RESPONSES_MAX_STORED_BYTES: '8192' },
    {
      entries: (endpoints) => [
        chatModel(VISION_MODEL, endpoints, { tools: true, vision: true }),
        chatModel(THINKING_MODEL, endpoints, { tools: true, reasoning: true }),
      ],
    },
  );
});
afterAll(async () => {
  await h?.stop();
});

const weatherTool: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

const sentDuring = (run: () => Promise<unknown>) => sentEngines(h.sims, run);

async function lastRecord(accountId: string): Promise<UsageEntry> {
  await h.settled(accountId);
  const [rec] = await usageRecords(h.redis.client(), accountId, { count: 1 });
  return rec!;
}

async function raw(
  body: unknown,
  secret = h.secret,
): Promise<{
  res: Response;
  json: { error: { type: string; code: string; message: string; param: string | null } };
}> {
  const res = await fetch(`${h.baseURL}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { res, json: await res.json() };
}

describe('Responses: text', () => {
  it('responses.create: resp_ id, canonical model, output_text, usage billed = usage reported (one usage record, kind chat, the key)', async () => {
    const a = await h.newAccount();
    const r = await h.client(a.secret).responses.create({
      model: 'org/chat-model',
      input: 'Hello there',
      instructions: 'Be brief.',
      max_output_tokens: 16,
      store: false,
    });
    expect(r.id).toMatch(/^resp_[0-9a-f]{24}$/);
    expect(r.object).toBe('response');
    expect(r.model).toBe(CHAT_MODEL);
    expect(['completed', 'incomplete']).toContain(r.status);
    expect(r.output_text.length).toBeGreaterThan(0);
    expect(r.output[0]).toMatchObject({ type: 'message', role: 'assistant' });
    const rec = await lastRecord(a.accountId);
    expect(rec).toMatchObject({ type: 'charge', keyId: a.keyId, model: CHAT_MODEL });
    expect(rec.inputTokens).toBe(r.usage!.input_tokens);
    expect(rec.outputTokens).toBe(r.usage!.output_tokens);
    expect(r.usage!.total_tokens).toBe(r.usage!.input_tokens + r.usage!.output_tokens);
    expect(rec.cost).toBe(chatModelCost(rec));
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('the engine is sent the chat form: instructions as a system message, developer as system, sampling and user carried', async () => {
    const [sent] = await sentDuring(() =>
      h.client().responses.create({
        model: CHAT_MODEL,
        instructions: 'Sys',
        input: [
          { role: 'developer', content: 'Dev rules' },
          { role: 'user', content: [{ type: 'input_text', text: 'Hi' }] },
        ],
        temperature: 0.5,
        top_p: 0.9,
        user: 'u-1',
        max_output_tokens: 8,
        store: false,
      }),
    );
    expect(sent!.messages).toEqual([
      { role: 'system', content: 'Sys' },
      { role: 'system', content: 'Dev rules' },
      { role: 'user', content: 'Hi' },
    ]);
    expect(sent).toMatchObject({ temperature: 0.5, top_p: 0.9, user: 'u-1', max_tokens: 8 });
  });

  it('responses.stream: the SDK’s helper accumulates the final response; sequence numbers run 0,1,2…; usage billed = usage reported', async () => {
    const a = await h.newAccount();
    const stream = h.client(a.secret).responses.stream({
      model: CHAT_MODEL,
      input: 'Tell me a story',
      max_output_tokens: 40,
      store: false,
    });
    const types: string[] = [];
    const seqs: number[] = [];
    let deltas = '';
    stream.on('event', (e) => {
      types.push(e.type);
      seqs.push(e.sequence_number);
    });
    stream.on('response.output_text.delta', (e) => {
      deltas += e.delta;
    });
    const final = await stream.finalResponse();
    expect(final.output_text).toBe(deltas);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      final.status === 'incomplete' ? 'response.incomplete' : 'response.completed',
    ]);
    const rec = await lastRecord(a.accountId);
    expect(rec.outputTokens).toBe(final.usage!.output_tokens);
    expect(rec.inputTokens).toBe(final.usage!.input_tokens);
    expect(rec.cost).toBe(chatModelCost(rec));
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('max_output_tokens reached: status incomplete with reason max_output_tokens, streamed (response.incomplete) or not', async () => {
    const params = {
      model: CHAT_MODEL,
      input: 'Write a very long story',
      max_output_tokens: 5,
      store: false,
    };
    const r = await h.client().responses.create(params);
    expect(r.status).toBe('incomplete');
    expect(r.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(r.usage!.output_tokens).toBe(5);
    const final = await h.client().responses.stream(params).finalResponse();
    expect(final.status).toBe('incomplete');
    expect(final.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });

  it('a reasoning model: reasoning.effort reaches the engine as reasoning_effort; its reasoning arrives as a reasoning item', async () => {
    const [sent] = await sentDuring(async () => {
      const r = await h.client().responses.create({
        model: THINKING_MODEL,
        input: 'Think about it',
        reasoning: { effort: 'high' },
        max_output_tokens: 200,
        store: false,
      });
      const reasoning = r.output[0] as OpenAI.Responses.ResponseReasoningItem;
      expect(reasoning.type).toBe('reasoning');
      expect(reasoning.content![0]!.text.length).toBeGreaterThan(0);
      expect(r.output[1]).toMatchObject({ type: 'message' });
    });
    expect(sent!.reasoning_effort).toBe('high');
  });

  it('an image input on a vision model reaches the engine as an image_url part', async () => {
    const url = 'data:image/png;base64,iVBORw0KGgo=';
    const [sent] = await sentDuring(async () => {
      const r = await h.client().responses.create({
        model: VISION_MODEL,
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_text', text: 'What is in this image?' },
              { type: 'input_image', image_url: url, detail: 'low' },
            ],
          },
        ],
        max_output_tokens: 16,
        store: false,
      });
      expect(r.output_text.length).toBeGreaterThan(0);
    });
    expect(sent!.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this image?' },
          { type: 'image_url', image_url: { url, detail: 'low' } },
        ],
      },
    ]);
  });

  it('text.format json_schema reaches the engine as response_format json_schema; the answer parses against it', async () => {
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer' } },
      required: ['city', 'days'],
      additionalProperties: false,
    };
    const [sent] = await sentDuring(async () => {
      const r = await h.client().responses.create({
        model: CHAT_MODEL,
        input: 'Plan a trip',
        text: { format: { type: 'json_schema', name: 'trip', schema, strict: true } },
        max_output_tokens: 100,
        store: false,
      });
      const parsed = JSON.parse(r.output_text) as { city: unknown; days: unknown };
      expect(typeof parsed.city).toBe('string');
      expect(Number.isInteger(parsed.days)).toBe(true);
    });
    expect(sent!.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'trip', schema, strict: true },
    });
  });
});

describe('Responses: function tools', () => {
  for (const streaming of [false, true]) {
    it(`a round trip (function_call → function_call_output → answer), ${streaming ? 'streamed' : 'not streamed'}`, async () => {
      const client = h.client();
      const ask = async (input: OpenAI.Responses.ResponseInput) => {
        const params = {
          model: CHAT_MODEL,
          input,
          tools: [weatherTool],
          max_output_tokens: 100,
          store: false,
        };
        return streaming
          ? client.responses.stream(params).finalResponse()
          : client.responses.create({ ...params, stream: false });
      };
      const first = await ask([{ role: 'user', content: 'Use get_weather for Paris' }]);
      const call = first.output.find(
        (o) => o.type === 'function_call',
      ) as OpenAI.Responses.ResponseFunctionToolCall;
      expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', status: 'completed' });
      expect(call.id).toMatch(/^fc_/);
      expect(typeof JSON.parse(call.arguments)).toBe('object');
      const [sent] = await sentDuring(async () => {
        const second = await ask([
          { role: 'user', content: 'Use get_weather for Paris' },
          ...first.output.map((o) => o as OpenAI.Responses.ResponseInputItem),
          { type: 'function_call_output', call_id: call.call_id, output: '{"temp": 21}' },
        ]);
        expect(second.output_text.length).toBeGreaterThan(0);
        expect(second.output.some((o) => o.type === 'function_call')).toBe(false);
      });
      const messages = sent!.messages as Record<string, unknown>[];
      expect(messages[1]).toEqual({
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: call.call_id,
            type: 'function',
            function: { name: 'get_weather', arguments: call.arguments },
          },
        ],
      });
      expect(messages[2]).toEqual({ role: 'tool', tool_call_id: call.call_id, content: '{"temp": 21}' });
    });
  }

  it('a namespace tool (as Codex sends one): its functions reach the engine as <namespace>__<name>; the call comes back with its name and namespace, and goes back the same way', async () => {
    const ns = {
      type: 'namespace',
      name: 'crm',
      description: 'Customer records',
      tools: [
        {
          type: 'function',
          name: 'lookup',
          description: 'Find a customer',
          parameters: { type: 'object', properties: { q: { type: 'string' } } },
        },
      ],
    } as unknown as OpenAI.Responses.Tool;
    const client = h.client();
    let call: OpenAI.Responses.ResponseFunctionToolCall | undefined;
    const [first] = await sentDuring(async () => {
      const r = await client.responses.create({
        model: CHAT_MODEL,
        input: 'Please use crm__lookup',
        tools: [ns],
        max_output_tokens: 60,
        store: false,
      });
      call = r.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    });
    expect(first!.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'crm__lookup',
          description: 'Customer records\n\nFind a customer',
          parameters: { type: 'object', properties: { q: { type: 'string' } } },
        },
      },
    ]);
    expect(call).toMatchObject({ name: 'lookup', namespace: 'crm' });
    const [second] = await sentDuring(() =>
      client.responses.create({
        model: CHAT_MODEL,
        tools: [ns],
        store: false,
        max_output_tokens: 20,
        input: [
          { role: 'user', content: 'Please use crm__lookup' },
          call!,
          { type: 'function_call_output', call_id: call!.call_id, output: 'found' },
        ],
      }),
    );
    const assistant = (second!.messages as { tool_calls?: { function: { name: string } }[] }[])[1]!;
    expect(assistant.tool_calls![0]!.function.name).toBe('crm__lookup');
  });

  it('a custom (freeform) tool, alone or in a namespace added in the conversation (additional_tools, as Codex sends them): offered as a function of one string `input`, called back as custom_tool_call with that text, streamed and not; passed back and replayed from a stored response', async () => {
    const client = h.client();
    const patch = {
      type: 'custom',
      name: 'apply_patch',
      description: 'Apply a patch',
      format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' },
    } as unknown as OpenAI.Responses.Tool;
    let plain: OpenAI.Responses.Response | undefined;
    const [first] = await sentDuring(async () => {
      plain = await client.responses.create({
        model: CHAT_MODEL,
        input: 'Please use apply_patch with input="*** Begin Patch"',
        tools: [patch],
        max_output_tokens: 60,
        store: false,
      });
    });
    const offered = (
      first!.tools as { function: { name: string; description: string; parameters: unknown } }[]
    )[0]!.function;
    expect(offered).toMatchObject({
      name: 'apply_patch',
      parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
    });
    expect(offered.description).toContain('start: /.+/');
    expect(plain!.output.find((o) => o.type === 'custom_tool_call')).toMatchObject({
      type: 'custom_tool_call',
      name: 'apply_patch',
      input: '*** Begin Patch',
    });

    // Streamed, the tools added in the conversation, stored for the next turn.
    const added = {
      type: 'additional_tools',
      role: 'developer',
      tools: [
        { type: 'namespace', name: 'functions', description: '', tools: [{ type: 'custom', name: 'exec' }] },
      ],
    } as unknown as OpenAI.Responses.ResponseInputItem;
    const events: { type: string; input?: string; response?: OpenAI.Responses.Response }[] = [];
    await sentDuring(async () => {
      const stream = await client.responses.create({
        model: CHAT_MODEL,
        input: [added, { role: 'user', content: 'Use functions__exec with input="1+1"' }],
        max_output_tokens: 60,
        stream: true,
      });
      for await (const e of stream) events.push(e as (typeof events)[number]);
    });
    expect(events.find((e) => e.type === 'response.custom_tool_call_input.done')?.input).toBe('1+1');
    const done = events.find((e) => e.type === 'response.completed')!.response!;
    const call = done.output.find(
      (o) => o.type === 'custom_tool_call',
    ) as OpenAI.Responses.ResponseCustomToolCall;
    expect(call).toMatchObject({ name: 'exec', namespace: 'functions', input: '1+1' });

    // The next turn: the call's output passed back; the stored turn (its added tools, the call) replayed.
    const [next] = await sentDuring(() =>
      client.responses.create({
        model: CHAT_MODEL,
        previous_response_id: done.id,
        input: [{ type: 'custom_tool_call_output', call_id: call.call_id, output: '2' }],
        max_output_tokens: 20,
        store: false,
      }),
    );
    expect((next!.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual([
      'functions__exec',
    ]);
    const messages = next!.messages as { role: string; tool_calls?: unknown[]; content?: unknown }[];
    expect(messages.find((m) => m.tool_calls)?.tool_calls).toEqual([
      {
        id: call.call_id,
        type: 'function',
        function: { name: 'functions__exec', arguments: '{"input":"1+1"}' },
      },
    ]);
    expect(messages.at(-1)).toEqual({ role: 'tool', tool_call_id: call.call_id, content: '2' });
  });

  it('tool_choice allowed_tools offers the engine only the tools it names, auto or required among them', async () => {
    const clockTool = { ...weatherTool, name: 'get_time', description: 'The time in a city' };
    for (const mode of ['auto', 'required'] as const) {
      const [sent] = await sentDuring(() =>
        h.client().responses.create({
          model: CHAT_MODEL,
          input: 'hi',
          tools: [weatherTool, clockTool],
          tool_choice: { type: 'allowed_tools', mode, tools: [{ type: 'function', name: 'get_time' }] },
          max_output_tokens: 20,
          store: false,
        }),
      );
      expect((sent!.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual([
        'get_time',
      ]);
      expect(sent!.tool_choice).toBe(mode);
    }
  });

  it('tool_choice and parallel_tool_calls are carried as chat names them', async () => {
    const [sent] = await sentDuring(() =>
      h.client().responses.create({
        model: CHAT_MODEL,
        input: 'hi',
        tools: [weatherTool],
        tool_choice: { type: 'function', name: 'get_weather' },
        parallel_tool_calls: false,
        max_output_tokens: 50,
        store: false,
      }),
    );
    expect(sent!.tool_choice).toEqual({ type: 'function', function: { name: 'get_weather' } });
    expect(sent!.parallel_tool_calls).toBe(false);
  });
});

describe('Responses: what OpenAI allows is accepted', () => {
  it('explicit nulls OpenAI allows (max_tool_calls, prompt, moderation, conversation, context_management), max_tool_calls set, an assistant message’s phase and reasoning.effort max are served', async () => {
    const [sent] = await sentDuring(() =>
      h.client().responses.create({
        model: THINKING_MODEL,
        input: [
          { role: 'user', content: 'hi' },
          { type: 'message', role: 'assistant', content: 'Looking.', phase: 'commentary' },
          { role: 'assistant', content: 'Hello!', phase: 'final_answer' },
          { role: 'user', content: 'again' },
        ],
        max_tool_calls: null,
        prompt: null,
        conversation: null,
        context_management: null,
        moderation: null,
        reasoning: { effort: 'max' },
        max_output_tokens: 20,
        store: false,
      } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming),
    );
    expect(sent!.reasoning_effort).toBe('high');
    expect((sent!.messages as { role: string }[]).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'assistant',
      'user',
    ]);
    const { res } = await raw({ model: CHAT_MODEL, input: 'hi', max_output_tokens: 5, max_tool_calls: 3 });
    expect(res.status).toBe(200);
  });
});

describe('Responses: money and errors as chat completions', () => {
  it('a client that cancels a stream pays for what was generated, not more; the ledger balances', async () => {
    const a = await h.newAccount();
    const params = {
      model: CHAT_MODEL,
      input: 'Write a very long story',
      max_output_tokens: 200,
      store: false,
    };
    const uncut = await h.client().responses.create(params);
    const before = h.sims.map((s) => s.stats());
    let seen = 0;
    for (const s of h.sims) s.setOptions({ itlMs: 25 });
    try {
      const stream = await h.client(a.secret).responses.create({ ...params, stream: true });
      for await (const ev of stream) {
        if (ev.type === 'response.output_text.delta' && ++seen === 5) break; // the SDK aborts the request
      }
    } finally {
      for (const s of h.sims) s.setOptions({ itlMs: 1 });
    }
    // The engine saw its client (the proxy) go away and stopped generating.
    const generated = await generatedUntilAborted(h.sims, before);
    const rec = await lastRecord(a.accountId);
    expect(rec).toMatchObject({ type: 'charge', keyId: a.keyId, model: CHAT_MODEL });
    expect(rec.outputTokens).toBeGreaterThanOrEqual(seen);
    expect(rec.outputTokens).toBeLessThanOrEqual(generated);
    expect(generated).toBeLessThan(uncut.usage!.output_tokens);
    expect(rec.cost).toBe(chatModelCost(rec));
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  const ask = { model: CHAT_MODEL, input: 'hi', max_output_tokens: 5 };
  const rejections: [string, unknown, RegExp, string | null][] = [
    ['an unknown parameter', { ...ask, frobnicate: 1 }, /frobnicate/, null],
    [
      'a hosted tool (web_search) forced through tool_choice',
      { ...ask, tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } },
      /forces the hosted tool "web_search"/,
      'tool_choice',
    ],
    [
      'a hosted tool (mcp) forced by tool_choice required',
      { ...ask, tools: [{ type: 'mcp', server_label: 'x' }], tool_choice: 'required' },
      /mcp/,
      'tool_choice',
    ],
    [
      'a tool type that is none of function, custom, namespace or those left out (teleport)',
      { ...ask, tools: [{ type: 'teleport' }] },
      /tool type "teleport" is not supported/,
      'tools[0].type',
    ],
    [
      'an item_reference input item (items are not looked up by id here)',
      { ...ask, input: [{ type: 'item_reference', id: 'x' }] },
      /input item type "item_reference" is not supported here: items are not looked up by id/,
      null,
    ],
    [
      'an unknown input item type',
      { ...ask, input: [{ type: 'teleport', id: 'x' }] },
      /input item type "teleport" is not supported/,
      null,
    ],
    [
      'an input_file part in a message without type: named as the part, not "input item type null"',
      {
        ...ask,
        input: [
          { role: 'user', content: [{ type: 'input_file', file_data: 'JVBERi0=', filename: 'a.pdf' }] },
        ],
      },
      /content part type "input_file" is not supported here: files are not read/,
      null,
    ],
    ...(
      [
        ['prompt', { id: 'pmpt_1' }, /reusable prompts are not stored here/],
        ['conversation', 'conv_1', /conversations are not stored here/],
        [
          'context_management',
          [{ type: 'compaction', compact_threshold: 1000 }],
          /compaction is not run here/,
        ],
        ['moderation', { mode: 'on' }, /moderated completions are not run here/],
      ] as const
    ).map(([field, value, message]): [string, unknown, RegExp, string] => [
      `${field} with a value (null is accepted)`,
      { ...ask, [field]: value },
      message,
      field,
    ]),
    [
      'allowed_tools naming a tool not in tools',
      {
        ...ask,
        tools: [weatherTool],
        tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'nope' }] },
      },
      /tool_choice.tools\[0\] names the function tool "nope", which is not in tools/,
      'tool_choice.tools[0]',
    ],
    // max_output_tokens past the model's limit is served at the limit: ./output-limit.test.ts.
    [
      'tool_choice naming a missing tool',
      { ...ask, tools: [weatherTool], tool_choice: { type: 'function', name: 'nope' } },
      /not in tools/,
      'tool_choice.name',
    ],
    [
      'an image on a model that cannot read images',
      {
        ...ask,
        input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x.test/a.png' }] }],
      },
      /cannot read images/,
      null,
    ],
    [
      'background: true without store',
      { ...ask, background: true, store: false },
      /background/,
      'background',
    ],
  ];
  it.each(rejections)(
    'ERR-1 %s → 400 naming it in the chat surface’s shape, X-Request-Id, nothing charged',
    async (_n, body, message, param) => {
      const a = await h.newAccount();
      const { res, json } = await raw(body, a.secret);
      expect(res.status).toBe(400);
      expect(json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request' });
      expect(json.error.message).toMatch(message);
      if (param !== null) expect(json.error.param).toBe(param);
      expect(res.headers.get('x-request-id')).toMatch(/^req_/);
      expect(await usageRecords(h.redis.client(), a.accountId, { count: 5 })).toHaveLength(1); // the top-up only
      await expectLedgerClean(h.redis.client(), [a.accountId]);
    },
  );

  it('ERR-1 403 billing_currency_unset, and X-Request-Id on every error', async () => {
    const noCurrency = await h.newAccount({ country: null });
    const { res, json } = await raw({ ...ask }, noCurrency.secret);
    expect(res.status).toBe(403);
    expect(json.error).toMatchObject({ type: 'permission_error', code: 'billing_currency_unset' });
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('ERR-2 ERR-3 engines failing before anything was written → a real, retryable 500, nothing charged, streamed or not', async () => {
    const a = await h.newAccount();
    for (const s of h.sims) s.setOptions({ ttftMs: 0, failBeforeFirstByte: 1 });
    try {
      for (const stream of [false, true]) {
        const { res, json } = await raw({ ...ask, stream }, a.secret);
        expect([stream, res.status]).toEqual([stream, 500]);
        expect(res.headers.get('content-type')).toContain('application/json');
        expect(json.error).toMatchObject({ code: 'server_error' });
      }
    } finally {
      for (const s of h.sims) s.setOptions({ ttftMs: 5, failBeforeFirstByte: 0 });
    }
    await h.settled(a.accountId);
    expect(await usageRecords(h.redis.client(), a.accountId, { count: 5 })).toHaveLength(1); // the top-up only
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('a mid-stream engine failure ends the stream with error then response.failed; what was generated is billed', async () => {
    const a = await h.newAccount();
    const types: string[] = [];
    let failed: OpenAI.Responses.Response | undefined;
    for (const s of h.sims) s.setOptions({ failMidStream: 1 });
    try {
      const stream = await h.client(a.secret).responses.create({
        model: CHAT_MODEL,
        input: 'Tell me a long story',
        max_output_tokens: 40,
        store: false,
        stream: true,
      });
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === 'response.failed') failed = ev.response;
      }
    } finally {
      for (const s of h.sims) s.setOptions({ failMidStream: 0 });
    }
    expect(types.slice(-2)).toEqual(['error', 'response.failed']);
    expect(failed!.status).toBe('failed');
    expect(failed!.error).toMatchObject({ code: 'server_error' });
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec!.outputTokens).toBeGreaterThan(0);
    expect(rec!.outputTokens).toBeLessThan(40);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('AUTH-5 ERR-1 401, 404 and 429 through the SDK, as chat completions gives them', async () => {
    const bad = h.client('sk-nope-0000000000000000000000000000');
    await expect(bad.responses.create({ model: CHAT_MODEL, input: 'hi' })).rejects.toMatchObject({
      status: 401,
      code: 'invalid_api_key',
    });
    await expect(h.client().responses.create({ model: 'no/such-model', input: 'hi' })).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
    });
    const broke = await h.newAccount({ credit: '0' });
    await expect(
      h.client(broke.secret).responses.create({ model: CHAT_MODEL, input: 'hi', max_output_tokens: 5 }),
    ).rejects.toMatchObject({ status: 429, code: 'insufficient_quota' });
    await expectLedgerClean(h.redis.client(), [broke.accountId]);
  });
});

describe('Responses: stored', () => {
  it('store (the default) keeps it: GET returns it, previous_response_id continues it (the engine gets the whole conversation), DELETE removes it', async () => {
    const client = h.client();
    const first = await client.responses.create({
      model: CHAT_MODEL,
      input: 'My name is Ada.',
      max_output_tokens: 12,
    });
    const got = await client.responses.retrieve(first.id);
    expect(got.id).toBe(first.id);
    expect(got.output_text).toBe(first.output_text);
    const [sent] = await sentDuring(async () => {
      const second = await client.responses.create({
        model: CHAT_MODEL,
        input: 'What is my name?',
        previous_response_id: first.id,
        max_output_tokens: 12,
      });
      expect(second.previous_response_id).toBe(first.id);
    });
    expect(sent!.messages).toEqual([
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: first.output_text },
      { role: 'user', content: 'What is my name?' },
    ]);
    await client.responses.delete(first.id);
    await expect(client.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
  });

  it('another account’s id is a 404 for GET and DELETE, and a 400 previous_response_not_found as previous_response_id (as OpenAI answers); store: false keeps nothing', async () => {
    const first = await h
      .client()
      .responses.create({ model: CHAT_MODEL, input: 'secret', max_output_tokens: 5 });
    const other = await h.newAccount();
    const theirs = h.client(other.secret);
    await expect(theirs.responses.retrieve(first.id)).rejects.toMatchObject({ status: 404 });
    await expect(theirs.responses.delete(first.id)).rejects.toMatchObject({ status: 404 });
    await expect(
      theirs.responses.create({
        model: CHAT_MODEL,
        input: 'x',
        previous_response_id: first.id,
        max_output_tokens: 5,
      }),
    ).rejects.toMatchObject({
      status: 400,
      code: 'previous_response_not_found',
      param: 'previous_response_id',
      type: 'invalid_request_error',
    });
    await expect(
      h.client().responses.create({
        model: CHAT_MODEL,
        input: 'x',
        previous_response_id: 'resp_0123456789abcdef01234567',
        max_output_tokens: 5,
      }),
    ).rejects.toMatchObject({ status: 400, code: 'previous_response_not_found' });
    await expectLedgerClean(h.redis.client(), [other.accountId]);
    const unstored = await h.client().responses.create({
      model: CHAT_MODEL,
      input: 'x',
      store: false,
      max_output_tokens: 5,
    });
    await expect(h.client().responses.retrieve(unstored.id)).rejects.toMatchObject({ status: 404 });
  });

  it('the bounds: an account keeps its newest PROXY_RESPONSES_MAX_STORED_PER_ACCOUNT, the oldest go; a conversation over PROXY_RESPONSES_MAX_STORED_BYTES is a 400 with store: true (nothing charged), served with store: false', async () => {
    const a = await h.newAccount();
    const c = h.client(a.secret);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++)
      ids.push((await c.responses.create({ model: CHAT_MODEL, input: `n ${i}`, max_output_tokens: 4 })).id);
    await expect(c.responses.retrieve(ids[0]!)).rejects.toMatchObject({ status: 404 });
    for (const id of ids.slice(1)) expect((await c.responses.retrieve(id)).id).toBe(id);
    expect(await h.redis.client().zcard(`responses:{${a.accountId}}:index`)).toBe(5);
    const big = 'word '.repeat(2000); // 10 kB of input
    const refused = await raw({ model: CHAT_MODEL, input: big, max_output_tokens: 4 }, a.secret);
    expect(refused.res.status).toBe(400);
    expect(refused.json.error.param).toBe('store');
    expect(refused.json.error.message).toMatch(/8192 bytes/);
    const served = await c.responses.create({
      model: CHAT_MODEL,
      input: big,
      max_output_tokens: 4,
      store: false,
    });
    expect(served.output_text.length).toBeGreaterThan(0);
    await h.settled(a.accountId);
    const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 20 })).filter(
      (r) => r.type === 'charge',
    );
    expect(charges).toHaveLength(7); // six stored, one served unstored; the refused one not
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('a streamed response is stored too, as its final response.completed says', async () => {
    const final = await h
      .client()
      .responses.stream({ model: CHAT_MODEL, input: 'Stream and keep', max_output_tokens: 12 })
      .finalResponse();
    const got = await h.client().responses.retrieve(final.id);
    expect(got.output_text).toBe(final.output_text);
    expect(got.usage).toEqual(final.usage);
  });
});

/**
 * The SDK's own declarations: for a `type` value, the keys of the top-level interface that has
 * it (an event or an output item), and the keys of the Response interface.
 */
const typesOf = (pkg: string) =>
  readFileSync(
    new URL(`../../node_modules/${pkg}/resources/responses/responses.d.ts`, import.meta.url),
    'utf8',
  );
const sdkTypes = typesOf('openai');
/** Both majors users have (6.x is `openai` here, 7.x the `openai-v7` alias). */
const sdkMajors: [string, string][] = [
  ['openai 6.x', sdkTypes],
  ['openai 7.x', typesOf('openai-v7')],
];
function sdkKeys(
  match: (body: string, name: string) => boolean,
  types: string = sdkTypes,
): Set<string> | null {
  for (const m of types.matchAll(/^export interface (\w+) \{\n([\s\S]*?)^\}/gm)) {
    const body = m[2]!;
    if (match(body, m[1]!)) return new Set([...body.matchAll(/^ {4}([a-z_]+)\??:/gm)].map((k) => k[1]!));
  }
  return null;
}
const keysOfType = (type: string) => sdkKeys((body) => body.includes(`\n    type: '${type}';`));

/** The values an interface's `code` may take in an SDK's declarations (`code: 'a' | 'b';`). */
function sdkCodes(types: string, name: string): string[] {
  const body = new RegExp(`^export interface ${name} \\{\\n([\\s\\S]*?)^\\}`, 'm').exec(types)?.[1];
  const union = /^ {4}code: (.*);$/m.exec(body ?? '')?.[1] ?? '';
  return [...union.matchAll(/'([^']+)'/g)].map((m) => m[1]!);
}

function expectSdkShaped(value: Record<string, unknown>, keys: Set<string> | null, at: string): void {
  expect(keys, `the SDK declares ${at}`).not.toBeNull();
  for (const k of Object.keys(value)) expect(keys!.has(k), `${at}.${k} is in the SDK's type`).toBe(true);
}

function expectResponseShaped(r: Record<string, unknown>, at: string): void {
  expectSdkShaped(
    r,
    sdkKeys((_b, name) => name === 'Response'),
    at,
  );
  for (const [i, item] of (r.output as Record<string, unknown>[]).entries())
    expectSdkShaped(item, keysOfType(item.type as string), `${at}.output[${i}]`);
}

describe('Responses: what the SDK’s types declare, nothing else', () => {
  it('every code of the error catalogue becomes, in a failed response, a code both SDK majors’ ResponseError declares', () => {
    for (const [sdk, types] of sdkMajors) {
      const codes = sdkCodes(types, 'ResponseError');
      for (const code of Object.keys(errorCatalogue) as ErrorCode[])
        expect(codes, `${sdk}: ${code}`).toContain(responseErrorCode(code));
    }
  });

  it('KEY-5 a key rotated mid-stream: the error event says invalid_api_key (as ResponseErrorEvent types it), response.failed an error code both SDK majors’ ResponseError allows; what was generated is billed', async () => {
    const a = await h.newAccount();
    let text = '';
    for (const s of h.sims) s.setOptions({ itlMs: 20 });
    try {
      const res = await fetch(`${h.baseURL}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: CHAT_MODEL,
          input: 'Write a long story',
          max_output_tokens: 200,
          store: false,
          stream: true,
        }),
      });
      const decoder = new TextDecoder();
      let rotated = false;
      const reader = res.body!.getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) {
        text += decoder.decode(r.value, { stream: true });
        if (!rotated && (text.match(/event: response\.output_text\.delta/g)?.length ?? 0) >= 3) {
          rotated = true;
          await h.keys.rotate(a.accountId, a.keyId);
        }
      }
    } finally {
      for (const s of h.sims) s.setOptions({ itlMs: 1 });
    }
    const events = text
      .split('\n\n')
      .filter(Boolean)
      .map((block) => JSON.parse(block.split('\n')[1]!.slice('data: '.length)) as Record<string, unknown>);
    const [error, failed] = events.slice(-2) as [
      Record<string, unknown>,
      { type: string; response: { status: string; error: Record<string, unknown> } },
    ];
    expect(error).toMatchObject({ type: 'error', code: 'invalid_api_key', param: null });
    expect(failed.type).toBe('response.failed');
    expect(failed.response.status).toBe('failed');
    expect(String(failed.response.error.message)).toMatch(/API key/);
    for (const [sdk, types] of sdkMajors) {
      expectSdkShaped(
        error,
        sdkKeys((b) => b.includes("\n    type: 'error';"), types),
        `${sdk} error event`,
      );
      expectSdkShaped(
        failed.response.error,
        sdkKeys((_b, n) => n === 'ResponseError', types),
        `${sdk} ResponseError`,
      );
      const codes = sdkCodes(types, 'ResponseError');
      expect(codes.length, `${sdk} ResponseError codes`).toBeGreaterThan(5);
      expect(codes, `${sdk}: response.failed's error.code`).toContain(failed.response.error.code);
    }
    await h.settled(a.accountId);
    const [rec] = await usageRecords(h.redis.client(), a.accountId, { count: 1 });
    expect(rec).toMatchObject({ type: 'charge', keyId: a.keyId, model: CHAT_MODEL });
    expect(rec!.outputTokens).toBeGreaterThan(0);
    expect(rec!.outputTokens).toBeLessThan(200);
    await expectLedgerClean(h.redis.client(), [a.accountId]);
  });

  it('every key of a response, its output items and every streamed event is one the SDK’s TypeScript types declare', async () => {
    const body = {
      model: THINKING_MODEL,
      input: 'Use get_weather for Paris, thinking first',
      tools: [weatherTool],
      reasoning: { effort: 'low' },
      max_output_tokens: 300,
      store: false,
    };
    const { res, json } = await raw(body);
    expect(res.status).toBe(200);
    expectResponseShaped(json as unknown as Record<string, unknown>, 'response');
    const text = await (
      await fetch(`${h.baseURL}/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...body, stream: true }),
      })
    ).text();
    const events = text
      .split('\n\n')
      .filter(Boolean)
      .map((block) => {
        const [ev, data] = block.split('\n');
        const e = JSON.parse(data!.slice('data: '.length)) as Record<string, unknown>;
        expect(ev).toBe(`event: ${e.type}`);
        return e;
      });
    const types = new Set(events.map((e) => e.type));
    for (const t of ['response.function_call_arguments.delta', 'response.reasoning_text.delta'])
      expect(types.has(t)).toBe(true);
    for (const e of events) {
      expectSdkShaped(e, keysOfType(e.type as string), e.type as string);
      if (typeof e.response === 'object')
        expectResponseShaped(e.response as Record<string, unknown>, `${e.type}.response`);
      if (typeof e.item === 'object') {
        const item = e.item as Record<string, unknown>;
        expectSdkShaped(item, keysOfType(item.type as string), `${e.type}.item`);
      }
    }
  });
});
