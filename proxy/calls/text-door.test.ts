// The request-policy door as a table (issue 30): a translated chat form in, admitted or a 400 naming
// the client's field. test/security/request-policy.test.ts shows the same over every surface.
import { describe, expect, it } from 'vitest';
import { type CatalogueEntry, catalogueEntrySchema } from '../../core/catalogue/index.ts';
import { ApiError } from '../../core/errors.ts';
import { fromClient } from '../dialects/origins.ts';
import { admitOutput, admitPrompt, type ChatFormIn } from './text-door.ts';

const entry = (o: Record<string, unknown> = {}): CatalogueEntry =>
  catalogueEntrySchema.parse({
    id: 'Org/M',
    kind: 'chat',
    pricing: { USD: { input: '1' } },
    created: 1,
    capabilities: { tools: true, vision: true },
    ...o,
  });

function refusal(f: () => unknown): { param: string | null | undefined; message: string } {
  try {
    f();
  } catch (err) {
    if (err instanceof ApiError) return { param: err.param, message: err.message };
    throw err;
  }
  throw new Error('admitted');
}

const image = (url: string) => ({ type: 'image_url', image_url: { url } });
const user = (...parts: unknown[]): ChatFormIn => ({ messages: [{ content: parts }], fields: {} });
const fn = { type: 'function', function: { name: 'f', parameters: {} } };

describe('admitPrompt', () => {
  it.each<[string, CatalogueEntry, ChatFormIn, string, RegExp]>([
    [
      'a loopback URL',
      entry(),
      user(image('http://127.0.0.1/x')),
      'messages[0].content[0].image_url.url',
      /https/,
    ],
    [
      'a bare-string image_url',
      entry(),
      user({ type: 'image_url', image_url: 'file:///etc/passwd' }),
      'messages[0].content[0].image_url',
      /https/,
    ],
    [
      'a video URL inside the network',
      entry(),
      user({ type: 'video_url', video_url: { url: 'https://10.0.0.1/v' } }),
      'messages[0].content[0].video_url.url',
      /internal/,
    ],
    [
      'a translated part names the client’s field',
      entry(),
      user(
        fromClient(image('https://169.254.169.254/'), {
          part: 'input[2].content[0]',
          url: 'input[2].content[0].image_url',
        }),
      ),
      'input[2].content[0].image_url',
      /internal/,
    ],
    [
      'an image for a model without vision',
      entry({ capabilities: { tools: true } }),
      user(image('https://example.com/a.png')),
      'messages[0].content[0]',
      /cannot read images/,
    ],
    [
      'tools for a model without tools',
      entry({ capabilities: { vision: true } }),
      { messages: [{ content: 'x' }], fields: { tools: [fn] } },
      'tools',
      /cannot call tools/,
    ],
    [
      'functions (the deprecated tools) for a model without tools',
      entry({ capabilities: {} }),
      { messages: [{ content: 'x' }], fields: { functions: [{ name: 'f' }] } },
      'functions',
      /cannot call tools/,
    ],
    [
      'a template key that is not a switch',
      entry(),
      { messages: [{ content: 'x' }], fields: { chat_template_kwargs: { tokenize: true } } },
      'chat_template_kwargs.tokenize',
      /only enable_thinking/,
    ],
  ])('refuses %s', (_name, e, form, param, message) => {
    const r = refusal(() => admitPrompt(e, form));
    expect(r.param).toBe(param);
    expect(r.message).toMatch(message);
  });

  it('admits public https and data: URLs, and counts the tools in the prompt bytes', () => {
    const form = {
      messages: [{ content: [image('https://example.com/a.png'), image('data:image/png;base64,AAAA')] }],
      fields: { tools: [fn] },
    };
    const a = admitPrompt(entry(), form);
    expect(a.prompt).toBe(JSON.stringify(form.messages));
    expect(a.promptBytes).toBe(Buffer.byteLength(a.prompt) + Buffer.byteLength(JSON.stringify([fn])));
    expect(a.notOffered).toEqual([]);
  });
});

describe('admitOutput', () => {
  it('a default bound is not the caller’s; an asked one within the limit is', () => {
    expect(
      admitOutput(entry({ maxOutputTokens: 100 }), '/v1/chat/completions', { max_tokens: null }, 50),
    ).toMatchObject({
      perChoice: 50,
      asked: false,
    });
    expect(
      admitOutput(entry({ maxOutputTokens: 100 }), '/v1/chat/completions', { max_tokens: 100 }, 50),
    ).toMatchObject({
      perChoice: 100,
      asked: true,
    });
  });
});

describe('admitOutput above the limit (issue 30 item 2)', () => {
  it.each([
    [{ maxOutputTokens: 256, contextLength: 1024 }, 32_000, 256],
    [{ contextLength: 1024 }, 1025, 1024],
    [{}, 1_000_001, 1_000_000],
  ])('%j: %i is served at %i, as a default (lowered further to what the context leaves)', (e, n, limit) => {
    expect(admitOutput(entry(e), '/v1/messages', { max_tokens: n }, 1)).toMatchObject({
      perChoice: limit,
      asked: false,
      clampedFrom: n,
    });
    expect(admitOutput(entry(e), '/v1/messages', { max_tokens: limit }, 1)).toMatchObject({
      perChoice: limit,
      clampedFrom: null,
    });
  });

  it('a Model with outputLimitPolicy refuse answers 400 naming the field', () => {
    const strict = entry({ maxOutputTokens: 256, outputLimitPolicy: 'refuse' });
    const r = refusal(() => admitOutput(strict, '/v1/responses', { max_output_tokens: 257 }, 1));
    expect(r).toMatchObject({ param: 'max_output_tokens', message: expect.stringMatching(/at most 256/) });
    expect(admitOutput(strict, '/v1/responses', { max_output_tokens: 256 }, 1)).toMatchObject({
      perChoice: 256,
      asked: true,
    });
  });
});

describe('hosted tools (issue 30 item 3)', () => {
  const form = (fields: Record<string, unknown>): ChatFormIn => ({ messages: [{ content: 'x' }], fields });
  const hosted = { type: 'web_search' };

  it.each<[string, Record<string, unknown>, Record<string, unknown>, string[]]>([
    [
      'offered beside a function',
      { tools: [fn, hosted], tool_choice: 'auto' },
      { tools: [fn], tool_choice: 'auto' },
      ['web_search'],
    ],
    [
      'offered alone',
      { tools: [hosted], tool_choice: 'auto', parallel_tool_calls: true },
      {},
      ['web_search'],
    ],
    [
      "chat's web_search_options",
      { web_search_options: {}, temperature: 1 },
      { temperature: 1 },
      ['web_search'],
    ],
    ['none offered', { tools: [fn] }, { tools: [fn] }, []],
  ])('%s: left out, and named', (_name, fields, sent, notOffered) => {
    const a = admitPrompt(entry(), form(fields));
    expect(a.fields).toEqual(sent);
    expect(a.notOffered).toEqual(notOffered);
  });

  it('a model without tools is not refused for a hosted tool it was never offered', () => {
    expect(admitPrompt(entry({ capabilities: {} }), form({ tools: [hosted] })).notOffered).toEqual([
      'web_search',
    ]);
  });

  it.each([
    ['forced by name', { tools: [hosted], tool_choice: { type: 'web_search' } }, /"web_search"/],
    ['forced by required, offered alone', { tools: [hosted], tool_choice: 'required' }, /web_search/],
  ])('%s: a 400 naming tool_choice', (_name, fields, message) => {
    const r = refusal(() => admitPrompt(entry(), form(fields)));
    expect(r.param).toBe('tool_choice');
    expect(r.message).toMatch(message);
  });
});
