// Tokenizing off the event loop (./tokenizer-pool.ts): the worker threads give the ids the inline
// tokenizer gives, for requests of every dialect; the piece cache gives the ids of a whole encode
// while a session grows; a full pool or a late answer routes without the index at once; a thread
// that dies is replaced.
import { rmSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { byteLevelTokenizerDir, metaspaceTokenizerDir } from '../../../test/helpers/tokenizers.ts';
import { toChatRequest } from '../../dialects/messages/request.ts';
import { toChatForm } from '../../dialects/responses/request.ts';
import { messagesRequest } from '../../schemas/messages.ts';
import { responsesRequest } from '../../schemas/responses.ts';
import { type ChatPrompt, loadPromptTokenizer } from './prompt-tokens.ts';
import { TokenizerPool } from './tokenizer-pool.ts';

const dirs = { byteLevel: byteLevelTokenizerDir(), metaspace: metaspaceTokenizerDir() };
const hub = { url: 'http://127.0.0.1:9' };
const open: TokenizerPool[] = [];
const warnings: string[] = [];

function pool(o: Partial<{ size: number; queue: number; budgetMs: number; cacheTokens: number }> = {}) {
  const p = new TokenizerPool({
    size: 2,
    queue: 64,
    budgetMs: 30_000, // a loaded test machine: only the tests of the budget rely on it
    cacheTokens: 100_000,
    hub,
    log: { warn: (_obj, msg) => warnings.push(msg) },
    ...o,
  });
  open.push(p);
  return p;
}

afterEach(async () => {
  for (const p of open.splice(0)) await p.close();
});
afterAll(() => {
  for (const d of Object.values(dirs)) rmSync(d, { recursive: true, force: true });
});

const can = { tools: true, vision: false, reasoning: false };
const weatherTool = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};
const SYSTEM = `You are a coding agent. ${Array.from({ length: 40 }, (_, i) => `rule ${i}: read the file and fix it`).join('. ')}`;

/** One conversation as each dialect sends it, translated to chat form as the proxy does. */
function dialects(): Record<string, ChatPrompt> {
  const messages = toChatRequest(
    messagesRequest.parse({
      model: 'm',
      max_tokens: 10,
      system: SYSTEM,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'Weather in Berlin?' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 't1', name: 'get_weather', input: { city: 'Berlin' } }],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: '18 degrees' }] },
      ],
    }),
    can,
  );
  const responses = toChatForm(
    responsesRequest.parse({
      model: 'm',
      instructions: SYSTEM,
      tools: [{ type: 'function', name: 'get_weather', parameters: weatherTool.input_schema }],
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'c1', output: '21 degrees, clear' },
      ],
    }),
    can,
  );
  return {
    chat: {
      messages: [
        { role: 'system', content: SYSTEM },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'look at file.ts' },
            { type: 'text', text: 'and fix it' },
          ],
        },
        { role: 'assistant', content: 'The quick brown fox <|mask|> reads the file.' },
        { role: 'user', content: 'café, naïve — ünïcode 21 °C' },
      ],
    },
    messages: { messages: messages.messages, tools: messages.fields.tools },
    responses: { messages: responses.messages, tools: responses.fields.tools },
  };
}

describe('the tokenizer threads', () => {
  for (const spec of ['simulator', 'byteLevel', 'metaspace'] as const) {
    it(`give the inline tokenizer's ids for chat, Messages and Responses requests (${spec})`, async () => {
      const dir = spec === 'simulator' ? spec : dirs[spec];
      const inline = await loadPromptTokenizer(dir, hub);
      const p = pool();
      await p.load(dir);
      for (const [dialect, prompt] of Object.entries(dialects())) {
        const expected = inline(prompt);
        expect(expected.length, dialect).toBeGreaterThan(20);
        // Twice: the second answer comes out of the piece cache.
        for (let i = 0; i < 2; i++)
          expect(Array.from((await p.tokenize(dir, prompt))!), dialect).toEqual(expected);
      }
      expect(p.stats).toMatchObject({ served: 6, saturated: 0, late: 0, failed: 0 });
    });
  }

  for (const spec of ['byteLevel', 'metaspace'] as const) {
    it(`the piece cache gives a whole encode's ids while a session grows, and hits its history (${spec})`, async () => {
      const inline = await loadPromptTokenizer(dirs[spec], hub);
      const cached = await loadPromptTokenizer(dirs[spec], hub, 100_000);
      const messages: { role: string; content: string }[] = [{ role: 'system', content: SYSTEM }];
      for (let turn = 0; turn < 6; turn++) {
        // Turns that end in spaces, newlines and an lstrip token: the cut points' neighbours.
        const tail = ['', '  ', '\n\n', ' <|mask|>', '\t', ' x'][turn];
        messages.push({
          role: 'user',
          content: `turn ${turn}: look at file${turn}.ts and fix the code${tail}`,
        });
        expect(cached({ messages }), `turn ${turn}`).toEqual(inline({ messages }));
        messages.push({
          role: 'assistant',
          content: `The weather in Paris is clear, ${turn} degrees.${tail}`,
        });
      }
      // The system prompt and every earlier turn came from the cache: most tokens were not encoded.
      const { hitTokens, missTokens } = cached.pieces!;
      expect(hitTokens).toBeGreaterThan(2 * missTokens);
    });
  }

  it('answers at once, without ids, when the queue is full, and after the time budget (a job queued past it is skipped)', async () => {
    const p = pool({ size: 1, queue: 1 });
    await p.load(dirs.byteLevel);
    const big = { messages: [{ role: 'user', content: 'the quick brown fox '.repeat(50_000) }] };
    const blocking = p.tokenize(dirs.byteLevel, big);
    expect(await p.tokenize(dirs.byteLevel, dialects().chat!)).toBeUndefined();
    expect(p.stats.saturated).toBe(1);
    expect(await blocking).toBeDefined();
    const late = pool({ size: 1, budgetMs: 1 });
    await late.load(dirs.byteLevel);
    const [first, queued] = [late.tokenize(dirs.byteLevel, big), late.tokenize(dirs.byteLevel, big)];
    expect([await first, await queued]).toEqual([undefined, undefined]);
    expect(late.stats.late).toBe(2);
    // The second was still queued behind the first at its deadline: the thread skipped it.
    while (late.stats.skipped === 0) await new Promise((r) => setTimeout(r, 10));
  });

  it('replaces a thread that dies; its jobs answer without ids', async () => {
    const p = pool({ size: 1 });
    await p.load(dirs.byteLevel);
    const [dead] = p.workers();
    const big = { messages: [{ role: 'user', content: 'the quick brown fox '.repeat(50_000) }] };
    const cut = p.tokenize(dirs.byteLevel, big);
    await dead!.terminate();
    expect(await cut).toBeUndefined();
    expect(p.stats.failed).toBe(1);
    while (p.workers().length === 0) await new Promise((r) => setTimeout(r, 10));
    expect(p.stats.replaced).toBe(1);
    expect(p.workers()[0]).not.toBe(dead);
    expect(warnings).toContain('a tokenizer thread exited: replaced');
    const prompt = dialects().messages!;
    const inline = await loadPromptTokenizer(dirs.byteLevel, hub);
    expect(Array.from((await p.tokenize(dirs.byteLevel, prompt))!)).toEqual(inline(prompt));
  });

  it('a tokenizer that fails to load fails load(), and its prompts get no ids', async () => {
    const p = pool();
    await expect(p.load('/nonexistent/tokenizer')).rejects.toThrow(/tokenizer/);
    expect(await p.tokenize('/nonexistent/tokenizer', dialects().chat!)).toBeUndefined();
    expect(p.stats.failed).toBe(1);
  });
});
