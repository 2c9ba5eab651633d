import { describe, expect, it } from 'vitest';
import { dropSchemaNulls, withoutSchemaNulls } from './schema-nulls.ts';

describe('withoutSchemaNulls: the members OpenAI’s schema has no null for, cut from the bytes', () => {
  it.each([
    ['none: the same buffer', '{"a":1,"annotations":[]}', '{"a":1,"annotations":[]}'],
    ['not first in its object', '{"a":1,"annotations":null,"b":2}', '{"a":1,"b":2}'],
    ['first in its object', '{"annotations":null,"b":2}', '{"b":2}'],
    ['alone in its object', '{"m":{"function_call":null}}', '{"m":{}}'],
    [
      'several, in usage and message',
      '{"message":{"content":"x","annotations":null,"function_call":null},"usage":{"prompt_tokens_details":null,"completion_tokens_details":null,"total_tokens":3}}',
      '{"message":{"content":"x"},"usage":{"total_tokens":3}}',
    ],
    [
      'inside a string: left alone',
      '{"content":"\\"annotations\\":null"}',
      '{"content":"\\"annotations\\":null"}',
    ],
    ['another key ending the same way: left alone', '{"my_annotations":null}', '{"my_annotations":null}'],
    ['multi-byte text around', '{"content":"é ✓","annotations":null}', '{"content":"é ✓"}'],
  ])('%s', (_name, input, output) => {
    const bytes = Buffer.from(input);
    const out = withoutSchemaNulls(bytes);
    expect(out.toString()).toBe(output);
    if (input === output) expect(out).toBe(bytes);
  });
});

describe('dropSchemaNulls: the same on a parsed answer', () => {
  it('drops them where they are null, keeps them where they are not, and says whether it dropped any', () => {
    const o = {
      choices: [
        { message: { annotations: null, function_call: null, content: 'x' } },
        { message: { annotations: [] } },
      ],
      usage: { prompt_tokens_details: null, completion_tokens_details: { reasoning_tokens: 1 } },
    };
    expect(dropSchemaNulls(o)).toBe(true);
    expect(o).toEqual({
      choices: [{ message: { content: 'x' } }, { message: { annotations: [] } }],
      usage: { completion_tokens_details: { reasoning_tokens: 1 } },
    });
    expect(dropSchemaNulls(o)).toBe(false);
  });
});
