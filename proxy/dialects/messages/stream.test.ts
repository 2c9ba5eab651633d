// An engine's chat stream → Messages events (issue "Messages dialect" item 5): the event order,
// block numbering apart from tool indexes, and the same events wherever the engine's bytes were
// cut (inside a JSON token, inside a multi-byte character).
import { describe, expect, it } from 'vitest';
import { SseDecoder } from '../../engine/sse.ts';
import { type ChatChunk, MessagesStream } from './stream.ts';

const usage = { inputTokens: 20, cachedTokens: 16, outputTokens: 9 };

const chunk = (
  delta: Record<string, unknown>,
  finish: string | null = null,
  extra: Record<string, unknown> = {},
) => ({
  id: 'c',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finish, ...extra }],
});

// Text (with multi-byte characters), then two tool calls whose names and arguments come in pieces.
const engineChunks = [
  chunk({ role: 'assistant', content: '' }),
  chunk({ content: 'Grüße ' }),
  chunk({ content: '— 東京 🌧' }),
  chunk({
    tool_calls: [
      { index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } },
    ],
  }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: ' "Tōkyō"}' } }] }),
  chunk({
    tool_calls: [
      { index: 1, id: 'call_b', type: 'function', function: { name: 'lookup', arguments: '{"q"' } },
    ],
  }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: ': "rain"}' } }] }),
  chunk({}, 'tool_calls'),
];
const engineBytes = Buffer.from(
  `${engineChunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`,
);

function translate(pieces: Buffer[]): { type: string; [k: string]: unknown }[] {
  const decoder = new SseDecoder();
  const s = new MessagesStream({ id: 'msg_x', model: 'Org/M' });
  let out = s.start({ inputTokens: 20, cachedTokens: 16, outputTokens: 0 });
  for (const piece of pieces) {
    for (const ev of decoder.push(piece)) {
      if (ev.data === '[DONE]') continue;
      out += s.chunk(JSON.parse(ev.data) as ChatChunk);
    }
  }
  out += s.end(usage);
  return out
    .split('\n\n')
    .filter(Boolean)
    .map((e) => {
      const [event, data] = e.split('\n');
      const parsed = JSON.parse(data!.slice('data: '.length));
      expect(event).toBe(`event: ${parsed.type}`);
      return parsed;
    });
}

describe('chat stream → Messages events', () => {
  const whole = translate([engineBytes]);

  it('message_start, a text block, two tool_use blocks numbered apart from tool indexes, message_delta, message_stop', () => {
    expect(whole.map((e) => `${e.type}${'index' in e ? `:${e.index}` : ''}`)).toEqual([
      'message_start',
      'content_block_start:0',
      'content_block_delta:0',
      'content_block_delta:0',
      'content_block_stop:0',
      'content_block_start:1',
      'content_block_delta:1',
      'content_block_delta:1',
      'content_block_stop:1',
      'content_block_start:2',
      'content_block_delta:2',
      'content_block_delta:2',
      'content_block_stop:2',
      'message_delta',
      'message_stop',
    ]);
    expect(whole[0]).toMatchObject({
      message: {
        id: 'msg_x',
        model: 'Org/M',
        role: 'assistant',
        content: [],
        usage: { input_tokens: 4, cache_read_input_tokens: 16 },
      },
    });
    expect(whole[1]).toMatchObject({ content_block: { type: 'text', text: '' } });
    expect(whole[5]).toMatchObject({
      content_block: { type: 'tool_use', id: 'call_a', name: 'get_weather', input: {} },
    });
    expect(whole[9]).toMatchObject({ content_block: { type: 'tool_use', id: 'call_b', name: 'lookup' } });
    const text = whole
      .filter((e) => e.type === 'content_block_delta' && e.index === 0)
      .map((e) => (e.delta as { text: string }).text);
    expect(text.join('')).toBe('Grüße — 東京 🌧');
    const args = (i: number) =>
      whole
        .filter((e) => e.type === 'content_block_delta' && e.index === i)
        .map((e) => (e.delta as { type: string; partial_json: string }).partial_json)
        .join('');
    expect(JSON.parse(args(1))).toEqual({ city: 'Tōkyō' });
    expect(JSON.parse(args(2))).toEqual({ q: 'rain' });
    expect(whole.at(-2)).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: {
        input_tokens: 4,
        output_tokens: 9,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 16,
      },
    });
  });

  it('the same events wherever the engine bytes are cut (mid JSON token, mid multi-byte character)', () => {
    const multiByte = engineBytes.indexOf(Buffer.from('東')) + 1;
    const midToken = engineBytes.indexOf(Buffer.from('"city"')) + 3;
    for (const cut of [
      multiByte,
      midToken,
      ...Array.from({ length: 60 }, (_, i) => Math.floor((i * engineBytes.length) / 60)),
    ]) {
      expect(translate([engineBytes.subarray(0, cut), engineBytes.subarray(cut)])).toEqual(whole);
    }
    // One byte at a time, too.
    expect(translate([...engineBytes].map((b) => Buffer.from([b])))).toEqual(whole);
  });

  it('stop_reason from the finish chunk: length → max_tokens; stop on a requested sequence → stop_sequence', () => {
    const s = new MessagesStream({ id: 'm', model: 'x', stopSequences: ['END'] });
    s.chunk(chunk({ content: 'a' }));
    s.chunk(chunk({}, 'stop', { stop_reason: 'END' }));
    expect(s.end(usage)).toContain('"delta":{"stop_reason":"stop_sequence","stop_sequence":"END"}');
    const t = new MessagesStream({ id: 'm', model: 'x' });
    t.chunk(chunk({ content: 'a' }, 'length'));
    expect(t.end(usage)).toContain('"stop_reason":"max_tokens"');
  });

  it('reasoning deltas become a thinking block before the text (vLLM 0.32 `reasoning`, earlier `reasoning_content`)', () => {
    for (const field of ['reasoning', 'reasoning_content']) {
      const s = new MessagesStream({ id: 'm', model: 'x' });
      const out = s.chunk(chunk({ [field]: 'hmm' })) + s.chunk(chunk({ content: 'Hi' }));
      expect(out).toContain('"thinking":"hmm"');
      expect(out.indexOf('"type":"thinking_delta"')).toBeLessThan(out.indexOf('"type":"text_delta"'));
      expect(out).toContain('"index":1,"content_block":{"type":"text"');
    }
  });

  it('a forced tool call, which vLLM finishes `stop` (as OpenAI does), ends with stop_reason tool_use', () => {
    const s = new MessagesStream({ id: 'm', model: 'x' });
    s.chunk(
      chunk({
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', index: 0, function: { name: 'f' } }],
      }),
    );
    s.chunk(chunk({ content: null, tool_calls: [{ index: 0, function: { arguments: '{}' } }] }));
    s.chunk(chunk({}, 'stop'));
    expect(s.end(usage)).toContain('"delta":{"stop_reason":"tool_use","stop_sequence":null}');
  });

  it('an error after the first event is event: error with the error body', () => {
    expect(MessagesStream.error({ type: 'error', error: { type: 'api_error', message: 'x' } })).toBe(
      'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"x"}}\n\n',
    );
  });
});
