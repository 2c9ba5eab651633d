// Messages → chat, row by row (issue "Messages dialect" item 4). Each row: a Messages body, what
// the engine is sent.
import { describe, expect, it } from 'vitest';
import { messagesRequest } from '../../schemas/messages.ts';
import { type EngineAbilities, toChatRequest } from './request.ts';

const all: EngineAbilities = { tools: true, vision: true, reasoning: true };
const parse = (body: Record<string, unknown>) =>
  messagesRequest.parse({ model: 'm', max_tokens: 10, ...body }) as Parameters<typeof toChatRequest>[0];
const chat = (body: Record<string, unknown>, can = all) => toChatRequest(parse(body), can);
const weather = { name: 'get_weather', description: 'Weather', input_schema: { type: 'object' } };

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
      ],
    ],
    [
      'an assistant turn of tool calls only has null content',
      { messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] }] },
      [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
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
      'thinking enabled → chat template switch',
      { max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 } },
      { chat_template_kwargs: { enable_thinking: true } },
    ],
  ])('%s', (_name, body, fields) => {
    expect(chat({ messages: [{ role: 'user', content: 'x' }], ...body }).fields).toMatchObject(fields);
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
      'an image for a text-only model',
      {
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }],
          },
        ],
      },
      { ...all, vision: false },
      /cannot read images/,
      'messages[0].content[0]',
    ],
    [
      'tools for a model without tools',
      { tools: [weather], messages: [{ role: 'user', content: 'x' }] },
      { ...all, tools: false },
      /cannot call tools/,
      'tools',
    ],
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
  ])('refuses %s, naming it', (_name, body, can, message, param) => {
    expect(() => chat(body, can)).toThrow(message);
    try {
      chat(body, can);
    } catch (err) {
      expect((err as { param: string }).param).toBe(param);
    }
  });
});
