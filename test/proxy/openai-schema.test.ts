// Every answer of the OpenAI dialect checked against OpenAI's published OpenAPI document (issue 39):
// the schemas of openai/openai-openapi at the commit ./openai-openapi/schemas.json names (fetched
// by ./openai-openapi/fetch.ts), as a strict client's decoder would check them — the chat surface's
// answers from the recorded vLLM and llama.cpp engines and from the simulator, and the Responses
// API's bodies and stream events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import { chatDialect } from '../../proxy/dialects/openai/text.ts';
import { REAL_ANSWERS, REAL_FRAMES } from '../../proxy/engine/frames/real-frames.fixture.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';
import { eventErrors, openapiSource, schemaErrors } from './openai-openapi/validate.ts';

const expectValid = (name: string, value: unknown, at: string) =>
  expect(schemaErrors(name, value), `${at} against ${name}`).toEqual([]);

const cost = { cost: '0.000001', currency: 'USD' };
const billed = { inputTokens: 12, cachedTokens: 0, outputTokens: 1 };
const entry = { id: 'org/model', servedName: 'served-name' } as CatalogueEntry;

describe(`OpenAI's schemas (${openapiSource.repository} ${openapiSource.path} @ ${openapiSource.commit.slice(0, 12)})`, () => {
  it('the fixture names its source commit in full', () => {
    expect(openapiSource.commit).toMatch(/^[0-9a-f]{40}$/);
  });

  it('they catch what the issue found: vLLM’s raw answer fails them (annotations, function_call, usage details null)', () => {
    const errors = schemaErrors('CreateChatCompletionResponse', JSON.parse(REAL_ANSWERS.vllm));
    expect(errors.join('\n')).toMatch(/annotations/);
    expect(errors.join('\n')).toMatch(/function_call/);
  });

  for (const [engine, answer] of Object.entries(REAL_ANSWERS))
    for (const [way, bytes] of [
      ['fast path (compact bytes)', Buffer.from(answer)],
      ['parsed path (pretty JSON)', Buffer.from(JSON.stringify(JSON.parse(answer), null, 2))],
    ] as const)
      it(`the chat surface’s answer from the recorded ${engine} answer, ${way}, is in the schema`, () => {
        const dialect = chatDialect(entry, null);
        const { answer: out } = dialect.read(bytes);
        let sent = '';
        dialect.send(
          { type: () => ({ send: (b: Buffer | string) => (sent = b.toString()) }) } as never,
          out,
          billed,
          cost,
        );
        const body = JSON.parse(sent) as { model: string; usage: { cost: string } };
        expect(body.model).toBe('org/model');
        expect(body.usage.cost).toBe(cost.cost);
        // llama.cpp leaves out `choices[].logprobs` and `message.refusal`, which the schema
        // requires (nullable): the proxy puts them in as null (proxy/engine/frames/schema-nulls.ts).
        expectValid('CreateChatCompletionResponse', body, engine);
      });

  it('the chat surface’s stream from the recorded vLLM and llama.cpp frames: every chunk in the schema', () => {
    for (const [engine, names] of [
      ['vllm', ['vllmFirst', 'vllmContent', 'vllmLastToken', 'vllmUsage']],
      [
        'llamacpp',
        ['llamacppFirst', 'llamacppContent', 'llamacppContentTimings', 'llamacppFinish', 'llamacppUsage'],
      ],
    ] as const) {
      const tr = chatDialect(entry, { include_usage: true }).translator();
      const out: Buffer[] = [];
      tr.head(null);
      for (const n of names) {
        const block = Buffer.from(`data: ${REAL_FRAMES[n]}\n\n`);
        if (tr.fast(block, out) === undefined)
          tr.chunk(JSON.parse(REAL_FRAMES[n]) as Record<string, unknown>, out);
      }
      out.push(tr.end(billed, cost));
      const chunks = Buffer.concat(out)
        .toString()
        .split('\n\n')
        .filter((b) => b.startsWith('data: {'))
        .map((b) => JSON.parse(b.slice('data: '.length)) as unknown);
      expect(chunks.length).toBeGreaterThan(2);
      for (const [i, c] of chunks.entries())
        expectValid('CreateChatCompletionStreamResponse', c, `${engine} chunk ${i}`);
    }
  });
});

describe('through the proxy (simulator engines)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.stop();
  });
  const post = (path: string, body: unknown) =>
    fetch(`${h.baseURL}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${h.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const events = (text: string) =>
    text
      .split('\n\n')
      .filter((b) => b.includes('data: {'))
      .map((b) => JSON.parse(b.slice(b.indexOf('data: ') + 'data: '.length)) as Record<string, unknown>);

  it('chat completions, whole and streamed', async () => {
    const ask = { model: CHAT_MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 12 };
    expectValid('CreateChatCompletionResponse', await (await post('/chat/completions', ask)).json(), 'whole');
    const text = await (
      await post('/chat/completions', { ...ask, stream: true, stream_options: { include_usage: true } })
    ).text();
    for (const c of events(text)) expectValid('CreateChatCompletionStreamResponse', c, 'chunk');
  });

  it('responses: the body, every stream event, GET, input items, a background one queued', async () => {
    const ask = { model: CHAT_MODEL, input: 'Hi', max_output_tokens: 12 };
    const whole = (await (await post('/responses', ask)).json()) as { id: string };
    expectValid('Response', whole, 'whole');
    const text = await (await post('/responses', { ...ask, stream: true, store: false })).text();
    const evs = events(text);
    expect(evs.length).toBeGreaterThan(5);
    for (const e of evs) expect(eventErrors(e), String(e.type)).toEqual([]);
    const get = (path: string) =>
      fetch(`${h.baseURL}${path}`, { headers: { authorization: `Bearer ${h.secret}` } });
    expectValid('Response', await (await get(`/responses/${whole.id}`)).json(), 'GET');
    expectValid(
      'ResponseItemList',
      await (await get(`/responses/${whole.id}/input_items`)).json(),
      'input items',
    );
    expectValid('Response', await (await post('/responses', { ...ask, background: true })).json(), 'queued');
  });
});
