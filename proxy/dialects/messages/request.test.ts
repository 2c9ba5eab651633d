// Messages → chat, row by row (issue "Messages dialect" item 4). Each row: a Messages body, what
// the engine is sent.
import { describe, expect, it } from 'vitest';
import { zodToApiError } from '../../../http/validation.ts';
import { messagesRequest } from '../../schemas/messages.ts';
import {
  cachePrefixOf,
  chatTurn,
  type EngineAbilities,
  samplingFields,
  systemMessage,
  thinkingFields,
  toChatRequest,
  toolChoiceFields,
} from './request.ts';

const all: EngineAbilities = { tools: true, vision: true, reasoning: true };
const parse = (body: Record<string, unknown>) =>
  messagesRequest.parse({ model: 'm', max_tokens: 10, ...body }) as Parameters<typeof toChatRequest>[0];
const chat = (body: Record<string, unknown>, can = all) => toChatRequest(parse(body), can);
const weather = { name: 'get_weather', description: 'Weather', input_schema: { type: 'object' } };
const toolUse = (extra: Record<string, unknown> = {}) => ({
  type: 'tool_use',
  id: 't',
  name: 'f',
  input: {},
  ...extra,
});

describe('Messages request → chat request', () => {
  it.each<[string, Record<string, unknown>, unknown[]]>([
    [
      'a string user turn',
      { messages: [{ role: 'user', content: 'hi' }] },
      [{ role: 'user', content: 'hi' }],
    ],
    [
      'system string first',
      { system: 'be brief', messages: [{ role: 'user', content: 'hi' }] },
      [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
    ],
    [
      'system text blocks joined',
      {
        system: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
        messages: [{ role: 'user', content: 'hi' }],
      },
      [
        { role: 'system', content: 'a\n\nb' },
        { role: 'user', content: 'hi' },
      ],
    ],
    [
      'text blocks of a user turn → one string',
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a' },
              { type: 'text', text: 'b' },
            ],
          },
        ],
      },
      [{ role: 'user', content: 'a\nb' }],
    ],
    [
      'images → image_url parts (base64 → data URL; url as is)',
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'look' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'QUJD' } },
              { type: 'image', source: { type: 'url', url: 'https://x.test/a.jpg' } },
            ],
          },
        ],
      },
      [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,QUJD' } },
            { type: 'image_url', image_url: { url: 'https://x.test/a.jpg' } },
          ],
        },
      ],
    ],
    [
      'tool_use → tool_calls with JSON arguments; thinking dropped; text kept',
      {
        messages: [
          { role: 'user', content: 'weather?' },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'hmm', signature: 's' },
              { type: 'text', text: 'Let me look.' },
              { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Paris' } },
              { type: 'tool_use', id: 'toolu_2', name: 'get_weather', input: { city: 'Oslo' } },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '21C' }] },
        ],
      },
      [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: 'Let me look.',
          tool_calls: [
            {
              id: 'toolu_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
            {
              id: 'toolu_2',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Oslo"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: '21C' },
      ],
    ],
    [
      'an assistant turn of tool calls only has null content',
      {
        messages: [
          { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'ok' }] },
        ],
      },
      [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 't', content: 'ok' },
      ],
    ],
    [
      'tool_result → tool messages in order, then the text beside them; is_error and block content',
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: '21C' },
              {
                type: 'tool_result',
                tool_use_id: 'toolu_2',
                content: [{ type: 'text', text: 'no data' }],
                is_error: true,
              },
              { type: 'text', text: 'summarise' },
            ],
          },
        ],
      },
      [
        { role: 'tool', tool_call_id: 'toolu_1', content: '21C' },
        { role: 'tool', tool_call_id: 'toolu_2', content: 'Error: no data' },
        { role: 'user', content: 'summarise' },
      ],
    ],
  ])('%s', (_name, body, messages) => {
    expect(chat(body).messages).toEqual(messages);
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    [
      'tools → functions',
      { tools: [weather] },
      {
        tools: [
          {
            type: 'function',
            function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object' } },
          },
        ],
      },
    ],
    ['tool_choice auto', { tools: [weather], tool_choice: { type: 'auto' } }, { tool_choice: 'auto' }],
    [
      'tool_choice any → required',
      { tools: [weather], tool_choice: { type: 'any' } },
      { tool_choice: 'required' },
    ],
    ['tool_choice none', { tools: [weather], tool_choice: { type: 'none' } }, { tool_choice: 'none' }],
    [
      'tool_choice tool → function, disable_parallel_tool_use → parallel_tool_calls false',
      {
        tools: [weather],
        tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
      },
      { tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false },
    ],
    ['stop_sequences → stop', { stop_sequences: ['END', '##'] }, { stop: ['END', '##'] }],
    [
      'sampling passes through',
      { temperature: 0.5, top_p: 0.9, top_k: 40 },
      { temperature: 0.5, top_p: 0.9, top_k: 40 },
    ],
    ['metadata.user_id → user', { metadata: { user_id: 'u1' } }, { user: 'u1' }],
    [
      'thinking enabled → chat template switch; budget_tokens → thinking_token_budget',
      { max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024, display: 'summarized' } },
      { chat_template_kwargs: { enable_thinking: true }, thinking_token_budget: 1024 },
    ],
    [
      'thinking adaptive → chat template switch, no budget',
      { thinking: { type: 'adaptive' } },
      { chat_template_kwargs: { enable_thinking: true } },
    ],
    [
      'thinking disabled → chat template switch off',
      { thinking: { type: 'disabled' } },
      { chat_template_kwargs: { enable_thinking: false } },
    ],
    [
      'strict → function.strict; input_examples → the description; transport hints need nothing',
      {
        tools: [
          {
            ...weather,
            strict: true,
            input_examples: [{ city: 'Paris' }, { city: 'Oslo' }],
            eager_input_streaming: true,
            defer_loading: false,
            allowed_callers: ['direct'],
            cache_control: { type: 'ephemeral', ttl: '1h' },
          },
        ],
      },
      {
        tools: [
          {
            type: 'function',
            function: {
              name: 'get_weather',
              description: 'Weather\n\nInput examples:\n{"city":"Paris"}\n{"city":"Oslo"}',
              parameters: { type: 'object' },
              strict: true,
            },
          },
        ],
      },
    ],
  ])('%s', (_name, body, fields) => {
    expect(chat({ messages: [{ role: 'user', content: 'x' }], ...body }).fields).toMatchObject(fields);
  });

  it('adaptive thinking sets no budget: the model decides', () => {
    const fields = chat({
      thinking: { type: 'adaptive' },
      messages: [{ role: 'user', content: 'x' }],
    }).fields;
    expect(fields).not.toHaveProperty('thinking_token_budget');
  });

  it('a final assistant turn is a prefill the engine continues (vLLM continue_final_message)', () => {
    const prefilled = chat({
      messages: [
        { role: 'user', content: 'JSON please' },
        { role: 'assistant', content: [{ type: 'text', text: '{"a":', citations: null }] },
      ],
    });
    expect(prefilled.messages.at(-1)).toEqual({ role: 'assistant', content: '{"a":' });
    expect(prefilled.fields).toMatchObject({ continue_final_message: true, add_generation_prompt: false });
    const open = chat({ messages: [{ role: 'user', content: 'x' }] }).fields;
    expect(open).not.toHaveProperty('continue_final_message');
    expect(open).not.toHaveProperty('add_generation_prompt');
    // An answer echoed back as Anthropic returns it (caller, toolset_name) is accepted.
    const echoed = chat({
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: [toolUse({ caller: { type: 'direct' }, toolset_name: null })],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't', content: 'ok', toolset_name: null }],
        },
      ],
    });
    expect(echoed.fields).not.toHaveProperty('continue_final_message');
  });

  it('the cache prefix is the rendered prompt up to the last breakpoint (tools, system, messages)', () => {
    const cc = { type: 'ephemeral' };
    const a = chat({
      system: [{ type: 'text', text: 'long rules', cache_control: cc }],
      messages: [{ role: 'user', content: 'question one' }],
    });
    const b = chat({
      system: [{ type: 'text', text: 'long rules', cache_control: cc }],
      messages: [{ role: 'user', content: 'question two' }],
    });
    expect(a.cachePrefix).toBe(JSON.stringify([{ role: 'system', content: 'long rules' }]));
    expect(b.cachePrefix).toBe(a.cachePrefix);
    const later = chat({
      system: 'rules',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'doc', cache_control: cc }] },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'q' },
      ],
    });
    expect(later.cachePrefix).toBe(JSON.stringify(later.messages.slice(0, 2)));
    expect(chat({ messages: [{ role: 'user', content: 'no breakpoint' }] }).cachePrefix).toBeNull();
  });

  it.each<[string, Record<string, unknown>, EngineAbilities, RegExp, string]>([
    [
      'thinking for a model that cannot reason',
      {
        max_tokens: 2000,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'x' }],
      },
      { ...all, reasoning: false },
      /cannot think/,
      'thinking',
    ],
    [
      'tool_use in a user turn',
      { messages: [{ role: 'user', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] }] },
      all,
      /tool_use block cannot appear in a user turn/,
      'messages[0].content[0].type',
    ],
    [
      'an image in an assistant turn',
      {
        messages: [
          {
            role: 'assistant',
            content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }],
          },
        ],
      },
      all,
      /image block cannot appear in an assistant turn/,
      'messages[0].content[0].type',
    ],
    [
      'tool_choice any without tools',
      { tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'x' }] },
      all,
      /needs tools/,
      'tool_choice',
    ],
    [
      'a prefill with thinking on',
      {
        max_tokens: 2000,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: 'Well' },
        ],
      },
      all,
      /cannot be continued with thinking/,
      'messages[1]',
    ],
    [
      'a prefill ending in whitespace',
      {
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: [{ type: 'text', text: 'Well ' }] },
        ],
      },
      all,
      /trailing whitespace/,
      'messages[1].content',
    ],
    [
      'a final assistant turn that calls a tool',
      {
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Calling' },
              { type: 'tool_use', id: 't', name: 'f', input: {} },
            ],
          },
        ],
      },
      all,
      /send its tool_result/,
      'messages[1].content[1]',
    ],
  ])('refuses %s, naming it', (_name, body, can, message, param) => {
    expect(() => chat(body, can)).toThrow(message);
    try {
      chat(body, can);
    } catch (err) {
      expect((err as { param: string }).param).toBe(param);
    }
  });

  const user = (content: unknown[]) => [{ role: 'user', content }];
  const text = { type: 'text', text: 'x' };
  it.each<[string, Record<string, unknown>, string, RegExp]>([
    [
      'an unknown key in a text block',
      { messages: user([text, { ...text, foo: 1 }]) },
      'messages[0].content[1].foo',
      /Unrecognized/,
    ],
    [
      'an unknown key in an image source',
      {
        messages: user([
          { type: 'image', source: { type: 'url', url: 'https://x.test/a.png', detail: 'hi' } },
        ]),
      },
      'messages[0].content[0].source.detail',
      /Unrecognized/,
    ],
    [
      'image transformations (not carried)',
      {
        messages: user([
          { type: 'image', source: { type: 'url', url: 'https://x.test/a.png' }, transformations: {} },
        ]),
      },
      'messages[0].content[0].transformations',
      /Unrecognized/,
    ],
    [
      'an unknown key in a message',
      { messages: [{ role: 'user', content: 'x', name: 'bob' }] },
      'messages[0].name',
      /Unrecognized/,
    ],
    [
      'an unknown key in a tool_result',
      { messages: user([{ type: 'tool_result', tool_use_id: 't', content: 'x', extra: true }]) },
      'messages[0].content[0].extra',
      /Unrecognized/,
    ],
    [
      'citations on a text block',
      { messages: user([{ ...text, citations: [{ type: 'char_location' }] }]) },
      'messages[0].content[0].citations',
      /document or search_result/,
    ],
    [
      'a tool_use made by a server-side tool',
      {
        messages: [
          {
            role: 'assistant',
            content: [toolUse({ caller: { type: 'code_execution_20250825', tool_id: 'c' } })],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't' }] },
        ],
      },
      'messages[0].content[0].caller.type',
      /server-side tool/,
    ],
    [
      'a toolset name',
      { messages: user([{ type: 'tool_result', tool_use_id: 't', toolset_name: 'browser' }]) },
      'messages[0].content[0].toolset_name',
      /null/,
    ],
    [
      'an unknown key in a tool',
      { tools: [{ ...weather, foo: 1 }], messages: user([text]) },
      'tools[0].foo',
      /Unrecognized/,
    ],
    [
      'a deferred tool',
      { tools: [{ ...weather, defer_loading: true }], messages: user([text]) },
      'tools[0].defer_loading',
      /tool search/,
    ],
    [
      'a tool callable from code execution',
      {
        tools: [{ ...weather, allowed_callers: ['direct', 'code_execution_20250825'] }],
        messages: user([text]),
      },
      'tools[0].allowed_callers[1]',
      /server-side tool/,
    ],
    [
      'a server-side tool with its own fields: the type is named, not the fields',
      { tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }], messages: user([text]) },
      'tools[0].type',
      /server-side tool "web_search_20250305"/,
    ],
    [
      'an unknown key in tool_choice',
      { tools: [weather], tool_choice: { type: 'auto', why: 1 }, messages: user([text]) },
      'tool_choice.why',
      /Unrecognized/,
    ],
    [
      'an unknown key in thinking',
      { thinking: { type: 'disabled', budget_tokens: 5 }, messages: user([text]) },
      'thinking.budget_tokens',
      /Unrecognized/,
    ],
    [
      'thinking display omitted',
      { thinking: { type: 'enabled', budget_tokens: 1024, display: 'omitted' }, messages: user([text]) },
      'thinking.display',
      /omitted/,
    ],
    [
      'an unknown key in metadata',
      { metadata: { user_id: 'u', org: 'o' }, messages: user([text]) },
      'metadata.org',
      /Unrecognized/,
    ],
    [
      'an unknown key in cache_control',
      { system: [{ ...text, cache_control: { type: 'ephemeral', scope: 'x' } }], messages: user([text]) },
      'system[0].cache_control.scope',
      /Unrecognized/,
    ],
  ])('the schema refuses %s, naming its path', (_name, body, param, message) => {
    const r = messagesRequest.safeParse({ model: 'm', max_tokens: 10, ...body });
    expect(r.success).toBe(false);
    const err = zodToApiError(r.error!);
    expect([err.param, err.message]).toEqual([param, expect.stringMatching(message)]);
  });
});

// The pieces toChatRequest is made of, each on its own: a row is a request's part in, the chat
// part out (or the 400's param).
describe('Messages request → chat request, piece by piece', () => {
  const tools = [weather];
  it.each<[string, Record<string, unknown>, boolean, Record<string, unknown> | string]>([
    ['no tool_choice', {}, true, {}],
    ['auto', { tool_choice: { type: 'auto' } }, true, { tool_choice: 'auto' }],
    ['any is required', { tool_choice: { type: 'any' } }, true, { tool_choice: 'required' }],
    ['none, even without tools', { tool_choice: { type: 'none' } }, false, { tool_choice: 'none' }],
    [
      'a named tool is a function',
      { tool_choice: { type: 'tool', name: 'get_weather' } },
      true,
      { tool_choice: { type: 'function', function: { name: 'get_weather' } } },
    ],
    [
      'no parallel calls',
      { tool_choice: { type: 'auto', disable_parallel_tool_use: true } },
      true,
      { tool_choice: 'auto', parallel_tool_calls: false },
    ],
    ['a tool not in tools', { tool_choice: { type: 'tool', name: 'nope' } }, true, 'tool_choice.name'],
    ['auto without tools', { tool_choice: { type: 'auto' } }, false, 'tool_choice'],
  ])('toolChoiceFields: %s', (_name, part, hasTools, want) => {
    const req = { tools: hasTools ? tools : undefined, ...part } as Parameters<typeof toolChoiceFields>[0];
    if (typeof want === 'string') {
      expect(() => toolChoiceFields(req, hasTools)).toThrow(expect.objectContaining({ param: want }));
    } else expect(toolChoiceFields(req, hasTools)).toEqual(want);
  });

  it.each<[string, unknown, unknown]>([
    ['none', undefined, null],
    ['a string', 'be brief', { role: 'system', content: 'be brief' }],
    ['an empty string', '', null],
    [
      'blocks, joined by a blank line',
      [
        { type: 'text', text: 'a' },
        { type: 'text', text: 'b' },
      ],
      { role: 'system', content: 'a\n\nb' },
    ],
  ])('systemMessage: %s', (_name, system, want) => {
    expect(systemMessage({ system } as Parameters<typeof systemMessage>[0])).toEqual(want);
  });

  it.each<[string, Record<string, unknown>, unknown]>([
    [
      'a string assistant turn',
      { role: 'assistant', content: 'ok' },
      { turn: [{ role: 'assistant', content: 'ok' }], breakpoint: false },
    ],
    [
      'tool results before the rest of a user turn, with a breakpoint',
      {
        role: 'user',
        content: [
          { type: 'text', text: 'and', cache_control: { type: 'ephemeral' } },
          { type: 'tool_result', tool_use_id: 't', content: 'sunny' },
        ],
      },
      {
        turn: [
          { role: 'tool', tool_call_id: 't', content: 'sunny' },
          { role: 'user', content: 'and' },
        ],
        breakpoint: true,
      },
    ],
    [
      'an assistant turn that only calls a tool has null content',
      { role: 'assistant', content: [toolUse()] },
      {
        turn: [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
        ],
        breakpoint: false,
      },
    ],
  ])('chatTurn: %s', (_name, m, want) => {
    expect(chatTurn(m as Parameters<typeof chatTurn>[0], 'messages[0]')).toEqual(want);
  });

  it.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    ['nothing set', {}, {}],
    [
      'every sampling field, named as chat names them',
      { stop_sequences: ['x'], temperature: 0.5, top_p: 0.9, top_k: 5, metadata: { user_id: 'u' } },
      { stop: ['x'], temperature: 0.5, top_p: 0.9, top_k: 5, user: 'u' },
    ],
    ['no stop for an empty list', { stop_sequences: [] }, {}],
  ])('samplingFields: %s', (_name, part, want) => {
    expect(samplingFields(parse({ messages: [{ role: 'user', content: 'hi' }], ...part }))).toEqual(want);
  });

  it.each<[string, unknown, boolean, Record<string, unknown> | string]>([
    ['not asked', undefined, true, {}],
    [
      'enabled with a budget',
      { type: 'enabled', budget_tokens: 1024 },
      true,
      { chat_template_kwargs: { enable_thinking: true }, thinking_token_budget: 1024 },
    ],
    ['adaptive: no budget', { type: 'adaptive' }, true, { chat_template_kwargs: { enable_thinking: true } }],
    [
      'disabled on a reasoning model',
      { type: 'disabled' },
      true,
      { chat_template_kwargs: { enable_thinking: false } },
    ],
    ['disabled elsewhere: nothing', { type: 'disabled' }, false, {}],
    ['asked of a model that cannot think', { type: 'enabled', budget_tokens: 1024 }, false, 'thinking'],
  ])('thinkingFields: %s', (_name, thinking, reasoning, want) => {
    const req = { thinking } as Parameters<typeof thinkingFields>[0];
    if (typeof want === 'string')
      expect(() => thinkingFields(req, { reasoning })).toThrow(expect.objectContaining({ param: want }));
    else expect(thinkingFields(req, { reasoning })).toEqual(want);
  });

  it.each<[string, unknown[] | undefined, boolean, number, string | null]>([
    ['no breakpoint', undefined, false, -1, null],
    ['the tools alone', [{ a: 1 }], true, -1, '[{"a":1}]'],
    ['tools and the first message', [{ a: 1 }], false, 1, '[{"a":1}][{"role":"user","content":"hi"}]'],
    ['messages without tools', undefined, false, 0, '[]'],
  ])('cachePrefixOf: %s', (_name, t, cachedTools, cachedMessages, want) => {
    const messages = [
      { role: 'user' as const, content: 'hi' },
      { role: 'assistant' as const, content: 'ok' },
    ];
    expect(cachePrefixOf(t, cachedTools, messages, cachedMessages)).toEqual(want);
  });
});
