import { describe, expect, it } from 'vitest';
import { clientChunk, frameView, hasContent, relayFrame, usageIn } from './chunks.ts';

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

describe('relayFrame (the fast path) gives the frame clientChunk gives', () => {
  const block = (json: string) => Buffer.from(`data: ${json}\n\n`);
  const frames = [
    // the simulator's and vLLM's shape
    '{"id":"c1","object":"chat.completion.chunk","created":1,"model":"served-name","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}',
    // multi-byte content
    '{"id":"c1","model":"served-name","choices":[{"index":0,"delta":{"content":"héllo 世界 🎉"}}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}}',
    // content that looks like keys (escaped quotes in JSON strings)
    '{"id":"c1","model":"served-name","choices":[{"index":0,"delta":{"content":"\\",\\"usage\\":{} \\"model\\":\\"x\\" \\"error\\""}}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":3}}}',
    // the usage-only frame before [DONE]
    JSON.stringify(usageOnly()),
  ];
  const views = [
    { model: 'Org/Model', includeUsage: false, continuousUsage: false },
    { model: 'Org/Model', includeUsage: true, continuousUsage: false },
    { model: 'Org/Model', includeUsage: true, continuousUsage: true },
    { model: 'served-name', includeUsage: true, continuousUsage: true },
  ];
  it.each(frames.flatMap((f) => views.map((v) => [f, v] as const)))('CHAT-3 %s %o', (frame, view) => {
    const b = block(frame);
    const fast = relayFrame(b, frameView(view, 'served-name'));
    expect(fast).toBeDefined();
    const slow = clientChunk(JSON.parse(frame), view);
    expect(usageIn(b, fast!.usageAt)).toEqual(JSON.parse(frame).usage);
    if (slow === null) return expect(fast!.pieces).toBeNull();
    const out = Buffer.concat(fast!.pieces!).toString();
    expect(out.startsWith('data: ') && out.endsWith('\n\n')).toBe(true);
    expect(out.slice(6, -2)).toBe(slow);
  });

  it.each([
    ['usage-only frame with null usage', '{"model":"served-name","choices":[],"usage":null}'],
    ['usage not last', '{"model":"served-name","usage":{"prompt_tokens":1},"choices":[]}'],
    ['usage null', '{"model":"served-name","choices":[{"delta":{"content":"a"}}],"usage":null}'],
    ['no usage', '{"model":"served-name","choices":[{"delta":{"content":"a"}}]}'],
    ['nested usage last', '{"model":"served-name","choices":[{"delta":{},"usage":{"a":1}}]}'],
    ['usage before choices', '{"model":"served-name","usage":{"prompt_tokens":1},"choices":[{}]}'],
    ['no choices', '{"model":"served-name","usage":{"prompt_tokens":1}}'],
    ['another model name', '{"model":"other","choices":[],"usage":{"prompt_tokens":1}}'],
    ['model name prefix only', '{"model":"served-name-2","choices":[{}],"usage":{"prompt_tokens":1}}'],
    ['error frame', '{"error":{"message":"x","type":"server_error"}}'],
    ['spaces', '{"model": "served-name", "choices": [{}], "usage": {"prompt_tokens": 1}}'],
    ['broken usage', '{"model":"served-name","choices":[{}],"usage":{"prompt_tokens":1}'],
    ['usage holding an array', '{"model":"served-name","choices":[{}],"usage":{"a":[1]}}'],
    ['usage followed by an object key', '{"model":"served-name","choices":[{}],"usage":{"a":1},"b":{"c":2}}'],
    ['usage not an object', '{"model":"served-name","choices":[{}],"usage":1}'],
  ])('declines %s (the parsing path takes it)', (_, frame) => {
    const view = { model: 'Org/Model', includeUsage: true, continuousUsage: false };
    expect(relayFrame(block(frame), frameView(view, 'served-name'))).toBeUndefined();
  });

  it('a usage string holding braces, brackets and escaped quotes is skipped by the scan', () => {
    const usage = { prompt_tokens: 1, note: 'a } ] [ { \\" ,"usage":{' };
    const b = block(`{"model":"served-name","choices":[{}],"usage":${JSON.stringify(usage)}}`);
    const view = { model: 'served-name', includeUsage: true, continuousUsage: true };
    const fast = relayFrame(b, frameView(view, 'served-name'));
    expect(usageIn(b, fast!.usageAt)).toEqual(usage);
  });

  it('usage that passes the scan but is not JSON is found out when parsed (undefined)', () => {
    const b = block('{"model":"served-name","choices":[{}],"usage":{prompt_tokens:1}}');
    const view = { model: 'served-name', includeUsage: true, continuousUsage: true };
    const fast = relayFrame(b, frameView(view, 'served-name'));
    expect(fast).toBeDefined();
    expect(usageIn(b, fast!.usageAt)).toBeUndefined();
  });
});
