import { describe, expect, it } from 'vitest';
import { completionFast, completionSlow } from '../../engine/frames/answer.ts';
import { modelFieldsOf } from '../../engine/frames/chunks.ts';
import { CLIENT_FIELDS } from '../../engine/frames/members.ts';
import { REAL_ANSWERS } from '../../engine/frames/real-frames.fixture.ts';
import { schemaObject } from '../../engine/frames/schema-nulls.ts';
import { withCost } from './completion.ts';

const answers = [
  // the simulator's and vLLM's shape
  '{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"served-name","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}',
  // multi-byte content, cached tokens, a trailing newline
  '{"id":"c","model":"served-name","choices":[{"message":{"content":"héllo 世界 🎉"}}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":2}}}\n',
  // content that looks like keys
  '{"id":"c","model":"served-name","choices":[{"message":{"content":"\\",\\"usage\\":{} \\"model\\":\\"x\\""}}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}',
  // usage before choices, an engine's own field after usage
  '{"model":"served-name","usage":{"prompt_tokens":1},"choices":[],"kv_transfer_params":{"a":[1]}}',
  // vLLM 0.32's and llama.cpp's own answers
  ...Object.values(REAL_ANSWERS),
];

describe('completionFast gives the body and usage completionSlow gives', () => {
  it.each(answers.flatMap((a) => ['Org/Model', 'served-name'].map((m) => [a, m] as const)))(
    'CHAT-1 %s as %s',
    (answer, model) => {
      const bytes = Buffer.from(answer);
      const fast = completionFast(bytes, modelFieldsOf(model, 'served-name'));
      expect(fast).toBeDefined();
      const slow = completionSlow(bytes, model);
      expect(JSON.parse(fast!.body.toString())).toEqual(JSON.parse(slow.body.toString()));
      expect(JSON.parse(fast!.body.toString()).model).toBe(model);
      // The engine's usage, without the nulls OpenAI's schema has no null for (schema-nulls.ts).
      const sent = JSON.parse(answer) as Record<string, unknown>;
      schemaObject(sent);
      expect(fast!.usage).toEqual(sent.usage);
      // Nothing re-encoded when the engine already names the model and sends only OpenAI's fields,
      // all that its schema requires among them.
      const fields = Object.keys(JSON.parse(answer));
      if (
        model === 'served-name' &&
        fields.every((k) => CLIENT_FIELDS.has(k)) &&
        !schemaObject(JSON.parse(answer))
      )
        expect(fast!.body).toBe(bytes);
      // Engine internals never reach the client; the fields OpenAI's schema knows do.
      const out = JSON.parse(fast!.body.toString()) as Record<string, unknown>;
      expect(Object.keys(out).sort()).toEqual(fields.filter((k) => CLIENT_FIELDS.has(k)).sort());
    },
  );

  it.each([
    ['usage null', '{"model":"served-name","choices":[],"usage":null}'],
    ['no usage', '{"model":"served-name","choices":[]}'],
    ['nested usage only', '{"model":"served-name","choices":[{"usage":{"a":1}}]}'],
    ['another model', '{"model":"other","choices":[],"usage":{"prompt_tokens":1}}'],
    ['model name prefix', '{"model":"served-name-2","choices":[],"usage":{"prompt_tokens":1}}'],
    ['pretty-printed', '{\n  "model": "served-name",\n  "usage": {"prompt_tokens": 1}\n}'],
    ['not an object', '[1,2]'],
    ['cut short', '{"model":"served-name","choices":[],"usage":{"prompt_tokens":1}'],
  ])('leaves %s to the slow path', (_what, answer) => {
    expect(completionFast(Buffer.from(answer), modelFieldsOf('Org/Model', 'served-name'))).toBeUndefined();
  });

  it('the slow path refuses what is not a JSON object', () => {
    expect(() => completionSlow(Buffer.from('[1]'), 'm')).toThrow(/non-object/);
    expect(() => completionSlow(Buffer.from('{"model":'), 'm')).toThrow();
  });
});

describe('withCost puts usage.cost and usage.currency into the body, fast or slow alike', () => {
  const cost = { cost: '0.000046', currency: 'EUR' };
  const billed = { inputTokens: 5, cachedTokens: 0, outputTokens: 3 };
  it.each(answers.flatMap((a) => ['Org/Model', 'served-name'].map((m) => [a, m] as const)))(
    'BILL-7 %s as %s',
    (answer, model) => {
      const bytes = Buffer.from(answer);
      const fast = withCost(completionFast(bytes, modelFieldsOf(model, 'served-name'))!, cost, billed);
      const slow = withCost(completionSlow(bytes, model), cost, billed);
      const want = JSON.parse(answer) as { usage: object; model: string };
      schemaObject(want);
      const known = Object.fromEntries(Object.entries(want).filter(([k]) => CLIENT_FIELDS.has(k)));
      const expected = { ...known, model, usage: { ...want.usage, ...cost } };
      expect(JSON.parse(fast.toString())).toEqual(expected);
      expect(JSON.parse(slow.toString())).toEqual(expected);
    },
  );

  it('BILL-7 an answer without usage gets the billed counts beside the cost', () => {
    const out = completionSlow(Buffer.from('{"id":"c","model":"m","choices":[]}'), 'm');
    expect(JSON.parse(withCost(out, cost, billed).toString()).usage).toEqual({
      prompt_tokens: 5,
      completion_tokens: 3,
      total_tokens: 8,
      ...cost,
    });
  });
});
