import { describe, expect, it } from 'vitest';
import { cachedInFrame } from './cached-tokens.ts';
import { clientChunk, frameView, relayFrame } from './chunks.ts';
import { CLIENT_FIELDS } from './members.ts';
import { REAL_FRAMES } from './real-frames.fixture.ts';
import { hasContent, usageIn } from './reported-usage.ts';

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
    // fields in other orders, usage null or absent, nested keys named usage: still the fast path
    '{"model":"served-name","usage":{"prompt_tokens":1},"choices":[{"delta":{"content":"a"}}]}',
    '{"model":"served-name","choices":[{"delta":{"content":"a"}}],"usage":null}',
    '{"model":"served-name","choices":[{"delta":{"content":"a"}}]}',
    '{"model":"served-name","choices":[{"delta":{},"usage":{"a":1}}]}',
    '{"model":"served-name","choices":[{}],"usage":{"a":[1],"b":{"c":[2,{"d":3}]}},"b":{"c":2}}',
    ...Object.values(REAL_FRAMES),
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
    const parsed = JSON.parse(frame);
    const slow = clientChunk(JSON.parse(frame), view);
    if (parsed.usage == null) expect(fast!.usageAt).toBe(-1);
    else expect(usageIn(b, fast!.usageAt)).toEqual(parsed.usage);
    if (parsed.usage == null) expect(fast!.content).toBe(hasContent(parsed));
    if (slow === null) return expect(fast!.pieces).toBeNull();
    const out = Buffer.concat(fast!.pieces!).toString();
    expect(out.startsWith('data: ') && out.endsWith('\n\n')).toBe(true);
    expect(out.slice(6, -2)).toBe(slow);
  });

  it.each([
    ['usage-only frame with null usage', '{"model":"served-name","choices":[],"usage":null}'],
    ['usage-only frame without usage', '{"model":"served-name","choices":[]}'],
    ['no choices', '{"model":"served-name","usage":{"prompt_tokens":1}}'],
    ['choices not an array', '{"model":"served-name","choices":{},"usage":{"prompt_tokens":1}}'],
    ['another model name', '{"model":"other","choices":[],"usage":{"prompt_tokens":1}}'],
    ['model name prefix only', '{"model":"served-name-2","choices":[{}],"usage":{"prompt_tokens":1}}'],
    ['error frame', '{"error":{"message":"x","type":"server_error"}}'],
    ['spaces', '{"model": "served-name", "choices": [{}], "usage": {"prompt_tokens": 1}}'],
    ['broken usage', '{"model":"served-name","choices":[{}],"usage":{"prompt_tokens":1}'],
    ['an unclosed string', '{"model":"served-name","choices":[{"delta":{"content":"a}}],"usage":null}'],
    ['usage not an object', '{"model":"served-name","choices":[{}],"usage":1}'],
    ['usage a string', '{"model":"served-name","choices":[{}],"usage":"null"}'],
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

  it.each(Object.entries(REAL_FRAMES))(
    "CHAT-2 a real engine's frame (%s) takes the fast path",
    (_, frame) => {
      for (const includeUsage of [false, true]) {
        const view = { model: 'Org/Model', includeUsage, continuousUsage: false };
        expect(relayFrame(block(frame), frameView(view, 'served-name'))).toBeDefined();
      }
    },
  );

  it("CHAT-2 engine internals never reach the client; the fields OpenAI's schema knows do", () => {
    const view = { model: 'Org/Model', includeUsage: true, continuousUsage: true };
    for (const frame of Object.values(REAL_FRAMES)) {
      const fast = relayFrame(block(frame), frameView(view, 'served-name'))!;
      const out = JSON.parse(Buffer.concat(fast.pieces!).toString().slice(6, -2));
      const sent = JSON.parse(frame) as Record<string, unknown>;
      for (const k of Object.keys(out)) expect(CLIENT_FIELDS.has(k)).toBe(true);
      for (const k of Object.keys(sent)) if (CLIENT_FIELDS.has(k)) expect(k in out).toBe(true);
    }
    const first = relayFrame(block(REAL_FRAMES.vllmFirst), frameView(view, 'served-name'))!;
    expect(Buffer.concat(first.pieces!).toString()).not.toContain('prompt_token_ids');
    const last = relayFrame(block(REAL_FRAMES.llamacppUsage), frameView(view, 'served-name'))!;
    expect(Buffer.concat(last.pieces!).toString()).not.toContain('timings');
    expect(Buffer.concat(last.pieces!).toString()).toContain('"system_fingerprint":"b0-unknown"');
  });

  it.each(Object.entries(REAL_FRAMES))(
    'BILL-5 the cached tokens a frame (%s) reports outside usage are read as the parse reads them',
    (_, frame) => {
      const view = { model: 'Org/Model', includeUsage: true, continuousUsage: false };
      const fast = relayFrame(block(frame), frameView(view, 'served-name'))!;
      const parsed = JSON.parse(frame) as { timings?: object };
      expect(fast.cached ?? null).toBe(parsed.timings ? cachedInFrame({ timings: parsed.timings }) : null);
    },
  );
  it('BILL-5 a llama.cpp frame with timings_per_token carries its cache_n past the fast path', () => {
    const view = { model: 'Org/Model', includeUsage: false, continuousUsage: false };
    expect(
      relayFrame(block(REAL_FRAMES.llamacppContentTimings), frameView(view, 'served-name'))!.cached,
    ).toBe(1792);
  });
});
