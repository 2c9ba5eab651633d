import { describe, expect, it } from 'vitest';
import { groupByPrefix, prefixKey } from './prefix-groups.ts';

const sys = (s: string, q: string) => ({
  model: 'M',
  messages: [
    { role: 'system', content: s },
    { role: 'user', content: q },
  ],
});

describe('batch lines grouped by prompt prefix', () => {
  it('lines with the same leading messages share a key; the last message, and a lone message, do not count', () => {
    expect(prefixKey(sys('a', 'x'))).toBe(prefixKey(sys('a', 'y')));
    expect(prefixKey(sys('a', 'x'))).not.toBe(prefixKey(sys('b', 'x')));
    expect(prefixKey({ model: 'M', messages: [{ role: 'user', content: 'x' }] })).toBe('');
    expect(prefixKey({ model: 'M', input: 'embed me' })).toBe('');
    // Anthropic's system and the Responses API's instructions are part of the prefix.
    const msg = (system: string) => ({ model: 'M', system, messages: [{ role: 'user', content: 'q' }] });
    expect(prefixKey(msg('s'))).toBe(prefixKey(msg('s')));
    expect(prefixKey(msg('s'))).not.toBe(prefixKey(msg('t')));
    expect(prefixKey({ model: 'M', instructions: 'i', input: 'q' })).not.toBe('');
  });

  it('groups each window’s lines by prefix, keeping input order within and between groups', () => {
    const lines = [
      sys('a', '0'),
      sys('b', '1'),
      sys('a', '2'),
      sys('c', '3'),
      sys('b', '4'),
      sys('a', '5'),
    ].map((body) => ({ body }));
    expect(groupByPrefix(lines, [0, 1, 2, 3, 4, 5])).toEqual([0, 2, 5, 1, 4, 3]);
    // Only pending lines, and only within a window: no line waits behind lines far later in the file.
    expect(groupByPrefix(lines, [1, 2, 3, 4, 5])).toEqual([1, 4, 2, 5, 3]);
    expect(groupByPrefix(lines, [0, 1, 2, 3, 4, 5], 3)).toEqual([0, 2, 1, 3, 4, 5]);
  });
});
