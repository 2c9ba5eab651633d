import { describe, expect, it } from 'vitest';
import { clientChunk, hasContent } from './chunks.ts';

const content = () => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  model: 'served-name',
  choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }],
  usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
});
const usageOnly = () => ({
  id: 'c1',
  object: 'chat.completion.chunk',
  model: 'served-name',
  choices: [],
  usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
});

describe('clientChunk', () => {
  it.each([
    // [includeUsage, continuousUsage, content chunk usage, usage-only frame sent]
    [false, false, undefined, false],
    [true, false, null, true],
    [true, true, { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 }, true],
  ])('CHAT-3 include_usage=%s continuous=%s', (includeUsage, continuousUsage, expectedUsage, usageFrame) => {
    const view = { model: 'Org/Model', includeUsage, continuousUsage };
    const c = JSON.parse(clientChunk(content(), view)!);
    expect(c.model).toBe('Org/Model');
    expect(c.usage).toEqual(expectedUsage);
    if (expectedUsage === undefined) expect('usage' in c).toBe(false);
    const u = clientChunk(usageOnly(), view);
    expect(u !== null).toBe(usageFrame);
    if (u) expect(JSON.parse(u).usage.completion_tokens).toBe(3);
  });

  it('hasContent sees text and tool call deltas', () => {
    expect(hasContent(content())).toBe(true);
    expect(hasContent(usageOnly())).toBe(false);
    expect(hasContent({ choices: [{ delta: { role: 'assistant', content: '' } }] })).toBe(false);
    expect(hasContent({ choices: [{ delta: { tool_calls: [{ index: 0 }] } }] })).toBe(true);
  });
});
