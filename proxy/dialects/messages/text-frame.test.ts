// The fast way for text frames gives exactly the events of the parse-and-translate way, and
// declines every frame it cannot read with certainty.
import { describe, expect, it } from 'vitest';
import { usageIn } from '../openai/chunks.ts';
import { REAL_FRAMES } from '../openai/real-frames.fixture.ts';
import { MessagesStream } from './stream.ts';
import { textFrame } from './text-frame.ts';

const usage = { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 };
const frame = (o: unknown) => Buffer.from(`data: ${JSON.stringify(o)}\n\n`);
const chunk = (choice: Record<string, unknown>, extra: Record<string, unknown> = { usage }) => ({
  id: 'chatcmpl-1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, ...choice }],
  ...extra,
});

const events = (s: string) =>
  s
    .split('\n\n')
    .filter(Boolean)
    .map((e) => JSON.parse(e.split('\n')[1]!.slice(6)));

describe('text frames read from their bytes', () => {
  it.each([
    ['plain text (simulator, vLLM)', { delta: { content: ' hello' }, logprobs: null, finish_reason: null }],
    [
      'vLLM with stop_reason null',
      { delta: { content: 'x' }, logprobs: null, finish_reason: null, stop_reason: null },
    ],
    [
      'quotes, backslashes, newlines',
      { delta: { content: 'say "hi" \\ \n ok' }, logprobs: null, finish_reason: null },
    ],
    [
      'multi-byte and escapes',
      { delta: { content: 'Grüße 東京 🌧 \u0001' }, logprobs: null, finish_reason: null },
    ],
    ['a content key inside the text', { delta: { content: '"delta":{"content":"x"}' }, finish_reason: null }],
    [
      'vLLM 0.32 with token_ids null',
      { delta: { content: ' the' }, logprobs: null, finish_reason: null, token_ids: null },
    ],
  ])('%s: the same events as the slow way, usage found', (_name, choice) => {
    const block = frame(chunk(choice));
    const fast = textFrame(block)!;
    expect(fast).toBeDefined();
    expect(usageIn(block, fast.usageAt)).toEqual(usage);
    const a = new MessagesStream({ id: 'msg', model: 'm' });
    const b = new MessagesStream({ id: 'msg', model: 'm' });
    const viaBytes = Buffer.concat(a.textDelta(fast.text)).toString('utf8');
    const viaParse = b.chunk(JSON.parse(block.toString('utf8', 6, block.length - 2)));
    expect(events(viaBytes)).toEqual(events(viaParse));
    // And again in the same block: no second content_block_start.
    expect(events(Buffer.concat(a.textDelta(fast.text)).toString())).toEqual(
      events(b.chunk(JSON.parse(block.toString('utf8', 6, block.length - 2)))),
    );
  });

  it('a frame without usage is taken, usageAt -1; an empty delta makes no events', () => {
    const f = textFrame(frame(chunk({ delta: { content: '' }, finish_reason: null }, {})))!;
    expect(f.usageAt).toBe(-1);
    expect(new MessagesStream({ id: 'm', model: 'm' }).textDelta(f.text)).toEqual([]);
  });

  it.each([
    ['a finishing frame', chunk({ delta: { content: 'x' }, finish_reason: 'stop' })],
    ['a role frame', chunk({ delta: { role: 'assistant', content: '' }, finish_reason: null })],
    [
      'content beside reasoning',
      chunk({ delta: { content: 'x', reasoning_content: 'y' }, finish_reason: null }),
    ],
    ['tool calls', chunk({ delta: { tool_calls: [{ index: 0 }] }, finish_reason: null })],
    [
      'two choices',
      {
        ...chunk({ delta: { content: 'x' }, finish_reason: null }),
        choices: [
          { index: 0, delta: { content: 'x' }, finish_reason: null },
          { index: 1, delta: { content: 'y' }, finish_reason: null },
        ],
      },
    ],
    ['a second finish_reason', chunk({ delta: { content: 'x' }, finish_reason: null, index: 1 })],
    ['logprobs', chunk({ delta: { content: 'x' }, logprobs: { content: [] }, finish_reason: null })],
    ['no finish_reason', chunk({ delta: { content: 'x' } })],
    ['an error frame', { error: { message: 'boom' } }],
  ])('declines %s', (_name, o) => {
    expect(textFrame(frame(o))).toBeUndefined();
  });

  it.each([
    ['vLLM 0.32', REAL_FRAMES.vllmContent],
    ['llama.cpp', REAL_FRAMES.llamacppContent],
    ['llama.cpp with timings', REAL_FRAMES.llamacppContentTimings],
    [
      'a key after the usage',
      JSON.stringify({ ...chunk({ delta: { content: 'x' }, finish_reason: null }), extra: 1 }),
    ],
  ])('%s content frames take the fast way, with the same events as the slow way', (_name, json) => {
    const block = Buffer.from(`data: ${json}\n\n`);
    const fast = textFrame(block)!;
    expect(fast).toBeDefined();
    const parsed = JSON.parse(json) as { usage?: unknown };
    if (parsed.usage == null) expect(fast.usageAt).toBe(-1);
    else expect(usageIn(block, fast.usageAt)).toEqual(parsed.usage);
    const a = new MessagesStream({ id: 'msg', model: 'm' });
    const b = new MessagesStream({ id: 'msg', model: 'm' });
    expect(events(Buffer.concat(a.textDelta(fast.text)).toString('utf8'))).toEqual(
      events(b.chunk(JSON.parse(json))),
    );
  });
});
