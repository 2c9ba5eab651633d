// chat completion → Messages message, row by row (issue "Messages dialect" item 4).
import { describe, expect, it } from 'vitest';
import { messagesUsage, stopReasonOf, toMessage, toolInput } from './response.ts';

const usage = { inputTokens: 100, cachedTokens: 64, outputTokens: 7 };

describe('chat completion → Messages message', () => {
  it.each<[string, unknown, unknown, string[] | undefined, unknown]>([
    ['stop (EOS) → end_turn', 'stop', null, undefined, { stop_reason: 'end_turn', stop_sequence: null }],
    [
      'stop on a requested sequence → stop_sequence naming it',
      'stop',
      '##',
      ['END', '##'],
      { stop_reason: 'stop_sequence', stop_sequence: '##' },
    ],
    [
      'stop on a token id (vLLM) → end_turn',
      'stop',
      128009,
      ['END'],
      { stop_reason: 'end_turn', stop_sequence: null },
    ],
    ['length → max_tokens', 'length', null, undefined, { stop_reason: 'max_tokens', stop_sequence: null }],
    [
      'tool_calls → tool_use',
      'tool_calls',
      null,
      undefined,
      { stop_reason: 'tool_use', stop_sequence: null },
    ],
    [
      'content_filter → refusal',
      'content_filter',
      null,
      undefined,
      { stop_reason: 'refusal', stop_sequence: null },
    ],
  ])('%s', (_name, finish, engineStop, sequences, expected) => {
    expect(stopReasonOf(finish, engineStop, sequences)).toEqual(expected);
  });

  it('a forced tool call (named tool_choice), which vLLM 0.32 and OpenAI finish `stop`, is tool_use; reasoning is read from vLLM 0.32’s `reasoning`', () => {
    const m = toMessage(
      {
        choices: [
          {
            message: {
              content: '',
              reasoning: 'they want weather',
              tool_calls: [
                { id: 'call_1', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
              ],
            },
            finish_reason: 'stop',
          },
        ],
      },
      { id: 'msg_1', model: 'Org/M', usage },
    );
    expect(m.stop_reason).toBe('tool_use');
    expect(m.content).toEqual([
      { type: 'thinking', thinking: 'they want weather', signature: '' },
      { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
    ]);
    expect(stopReasonOf('stop', null, undefined, false)).toEqual({
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
  });

  it('usage: input excludes the cached part, which is cache_read; creation is 0', () => {
    expect(messagesUsage(usage)).toEqual({
      input_tokens: 36,
      output_tokens: 7,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 64,
    });
  });

  it('content: reasoning → thinking first, then text, then tool calls as tool_use with parsed input', () => {
    const m = toMessage(
      {
        choices: [
          {
            message: {
              content: 'Checking.',
              reasoning_content: 'they want weather',
              tool_calls: [
                { id: 'call_1', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
              ],
            },
            finish_reason: 'tool_calls',
          },
        ],
      },
      { id: 'msg_1', model: 'Org/M', usage },
    );
    expect(m).toEqual({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'Org/M',
      content: [
        { type: 'thinking', thinking: 'they want weather', signature: '' },
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: messagesUsage(usage),
    });
  });

  it('empty content makes no text block; arguments cut short by max_tokens give {}', () => {
    expect(
      toMessage(
        { choices: [{ message: { content: '' }, finish_reason: 'length' }] },
        { id: 'm', model: 'x', usage },
      ).content,
    ).toEqual([]);
    expect(toolInput('{"city":"Par')).toEqual({});
    expect(toolInput('[1]')).toEqual({});
    expect(toolInput('{"a":[1]}')).toEqual({ a: [1] });
  });
});
