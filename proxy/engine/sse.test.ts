import { describe, expect, it } from 'vitest';
import {
  blockLines,
  DataBlockEvent,
  decodeBlock,
  decodeEvent,
  isDone,
  SseBlockSplitter,
  SseDecoder,
  type SseEvent,
} from './sse.ts';

async function collect(chunks: (string | Uint8Array)[]): Promise<SseEvent[]> {
  const decoder = new SseDecoder();
  const events = chunks.flatMap((c) => decoder.push(typeof c === 'string' ? Buffer.from(c) : c));
  const last = decoder.flush();
  if (last) events.push(last);
  return events.map((ev) => ({ event: ev.event, data: ev.data }));
}

/** Every way of cutting `text` in two, fed as two chunks. */
async function everySplit(text: string): Promise<SseEvent[][]> {
  const bytes = Buffer.from(text);
  const results: SseEvent[][] = [];
  for (let i = 0; i <= bytes.length; i++) {
    results.push(await collect([bytes.subarray(0, i), bytes.subarray(i)]));
  }
  return results;
}

describe('SSE decoding in layers', () => {
  it.each([
    ['\\n\\n', 'data: {"a":1}\n\ndata: {"b":2}\n\n'],
    ['\\r\\r', 'data: {"a":1}\r\rdata: {"b":2}\r\r'],
    ['\\r\\n\\r\\n', 'data: {"a":1}\r\n\r\ndata: {"b":2}\r\n\r\n'],
  ])('splits events at a blank line written as %s, wherever the chunks are cut', async (_, text) => {
    for (const events of await everySplit(text)) {
      expect(events).toEqual([
        { event: null, data: '{"a":1}' },
        { event: null, data: '{"b":2}' },
      ]);
    }
  });

  it('keeps a multi-byte character whole when a chunk boundary falls inside it', async () => {
    const text = 'data: {"c":"héllo 👋 世界"}\n\n';
    for (const events of await everySplit(text)) {
      expect(events).toEqual([{ event: null, data: '{"c":"héllo 👋 世界"}' }]);
    }
  });

  it('drops comments, joins multi-line data, reads event names', async () => {
    const events = await collect([': keep-alive\n\n', 'event: error\ndata: a\ndata: b\n\n', 'data:x\n\n']);
    expect(events).toEqual([
      { event: 'error', data: 'a\nb' },
      { event: null, data: 'x' },
    ]);
  });

  it('emits a final event that lacks its blank line', async () => {
    expect(await collect(['data: [DONE]'])).toEqual([{ event: null, data: '[DONE]' }]);
  });

  it('splitter holds back an incomplete block', () => {
    const s = new SseBlockSplitter();
    expect(s.push(Buffer.from('data: 1\n'))).toEqual([]);
    expect(s.push(Buffer.from('\ndata: 2')).map(String)).toEqual(['data: 1\n\n']);
    expect(String(s.flush())).toBe('data: 2');
  });

  it('lines and fields', () => {
    expect(blockLines(Buffer.from('a\r\nb\rc\nd'))).toEqual(['a', 'b', 'c', 'd']);
    expect(decodeEvent(['data'])).toEqual({ event: null, data: '' });
    expect(decodeEvent([':only a comment'])).toBeNull();
  });
});

describe('decodeBlock', () => {
  const plain = (ev: SseEvent | null) => ev && { event: ev.event, data: ev.data };
  it('a lone CR inside a data line still ends the line (the single-line shortcut is not taken)', () => {
    expect(plain(decodeBlock(Buffer.from('data: a\rb\n\n')))).toEqual({ event: null, data: 'a' });
    expect(plain(decodeBlock(Buffer.from('data: {"a":1}\n\n')))).toEqual({ event: null, data: '{"a":1}' });
    expect(plain(decodeBlock(Buffer.from('event: x\ndata: 1\n\n')))).toEqual({ event: 'x', data: '1' });
    expect(plain(decodeBlock(Buffer.from('data:1\n\n')))).toEqual({ event: null, data: '1' });
    const done = decodeBlock(Buffer.from('data: [DONE]\n\n'));
    expect(done).toBeInstanceOf(DataBlockEvent);
    expect(isDone(done!)).toBe(true);
    expect(isDone({ event: null, data: '[DONE]' })).toBe(true);
    expect(isDone(decodeBlock(Buffer.from('data: [DONE]x\n\n'))!)).toBe(false);
  });
});
