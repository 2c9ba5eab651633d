// The frames around a stream's text are read from their bytes exactly as the parse way reads
// them (no event, the same finish reason, the usage where it is), and every other frame is
// declined.
import { describe, expect, it } from 'vitest';
import { usageIn } from '../openai/chunks.ts';
import { quietFrame } from './quiet-frame.ts';

const usage = { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 };
const frame = (o: unknown) => Buffer.from(`data: ${JSON.stringify(o)}\n\n`);
const chunk = (choices: unknown[], extra: Record<string, unknown> = { usage }) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  system_fingerprint: 'x',
  choices,
  ...extra,
});
const choice = (c: Record<string, unknown>) => ({ index: 0, ...c });

describe('frames without text read from their bytes', () => {
  it.each([
    [
      'the first (role, empty content)',
      choice({ delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }),
      null,
    ],
    ['the first (role only)', choice({ delta: { role: 'assistant' }, finish_reason: null }), null],
    [
      'finishing: length',
      choice({ delta: {}, logprobs: null, finish_reason: 'length', stop_reason: null }),
      'length',
    ],
    ['finishing: stop', choice({ delta: {}, logprobs: null, finish_reason: 'stop' }), 'stop'],
    ['finishing: tool_calls', choice({ delta: {}, finish_reason: 'tool_calls' }), 'tool_calls'],
  ])('%s', (_name, c, finish) => {
    const b = frame(chunk([c]));
    const q = quietFrame(b);
    expect(q).toEqual({ finish, usageAt: expect.any(Number) });
    expect(usageIn(b, q!.usageAt)).toEqual(usage);
    // Without usage (an engine without continuous usage stats): no usage, same finish.
    expect(quietFrame(frame(chunk([c], {})))).toEqual({ finish, usageAt: -1 });
  });

  it('the usage-only frame before [DONE]', () => {
    const u = { ...usage, prompt_tokens_details: { cached_tokens: 4 } };
    const b = frame(chunk([], { usage: u }));
    const q = quietFrame(b);
    expect(q?.finish).toBeNull();
    expect(usageIn(b, q!.usageAt)).toEqual(u);
  });

  it.each([
    ['text', chunk([choice({ delta: { content: 'hi' }, finish_reason: null })])],
    ['role with text', chunk([choice({ delta: { role: 'assistant', content: 'hi' }, finish_reason: null })])],
    ['reasoning', chunk([choice({ delta: { reasoning_content: 'hm' }, finish_reason: null })])],
    ['a tool call', chunk([choice({ delta: { tool_calls: [{ index: 0, id: 'c' }] }, finish_reason: null })])],
    ['an unknown finish reason', chunk([choice({ delta: {}, finish_reason: 'content_filter' })])],
    ['logprobs', chunk([choice({ delta: {}, logprobs: { content: [] }, finish_reason: 'stop' })])],
    [
      'a second choice',
      chunk([choice({ delta: {}, finish_reason: 'stop' }), { ...choice({ delta: {} }), index: 1 }]),
    ],
    [
      'a key after the choices that is not usage',
      chunk([choice({ delta: {}, finish_reason: 'stop' })], { usage, x: 1 }),
    ],
    ['an error frame', { error: { message: 'boom', code: 500 } }],
  ])('declines %s', (_name, c) => {
    expect(quietFrame(frame(c))).toBeUndefined();
  });
});
