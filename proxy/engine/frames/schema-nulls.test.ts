import { describe, expect, it } from 'vitest';
import { schemaBytes, schemaObject } from './schema-nulls.ts';

describe('schemaBytes: the members OpenAI’s schema has no null for, cut from the bytes', () => {
  it.each([
    ['none: the same buffer', '{"a":1,"annotations":[]}', '{"a":1,"annotations":[]}'],
    ['not first in its object', '{"a":1,"annotations":null,"b":2}', '{"a":1,"b":2}'],
    ['first in its object', '{"annotations":null,"b":2}', '{"b":2}'],
    ['alone in its object', '{"m":{"function_call":null}}', '{"m":{}}'],
    [
      'several, in usage and message',
      '{"message":{"content":"x","refusal":null,"annotations":null,"function_call":null},"logprobs":null,"usage":{"prompt_tokens_details":null,"completion_tokens_details":null,"total_tokens":3}}',
      '{"message":{"content":"x","refusal":null},"logprobs":null,"usage":{"total_tokens":3}}',
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
    const out = schemaBytes(bytes);
    expect(out?.toString()).toBe(output);
    if (input === output) expect(out).toBe(bytes);
  });
});

describe('schemaBytes: the members OpenAI’s schema requires (nullable), put in as null when absent', () => {
  it.each([
    [
      'llama.cpp’s choice: logprobs beside the message, refusal first in it',
      '{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}',
      '{"choices":[{"index":0,"logprobs":null,"message":{"refusal":null,"role":"assistant","content":"hi"}}]}',
    ],
    [
      'an empty message, two choices',
      '{"choices":[{"message":{}},{"message":{"content":"a"}}]}',
      '{"choices":[{"logprobs":null,"message":{"refusal":null}},{"logprobs":null,"message":{"refusal":null,"content":"a"}}]}',
    ],
    [
      'beside a null cut from the same message',
      '{"choices":[{"message":{"content":"x","annotations":null}}]}',
      '{"choices":[{"logprobs":null,"message":{"refusal":null,"content":"x"}}]}',
    ],
    [
      'there already: the same buffer',
      '{"choices":[{"message":{"refusal":null},"logprobs":{"content":[]}}]}',
      '{"choices":[{"message":{"refusal":null},"logprobs":{"content":[]}}]}',
    ],
    [
      'a message key inside a string: left alone',
      '{"choices":[{"text":"\\"message\\":{"}]}',
      '{"choices":[{"text":"\\"message\\":{"}]}',
    ],
  ])('%s', (_name, input, output) => {
    const bytes = Buffer.from(input);
    const out = schemaBytes(bytes);
    expect(out?.toString()).toBe(output);
    expect(JSON.parse(out!.toString())).toEqual(schemaObjectOf(input));
    if (input === output) expect(out).toBe(bytes);
  });

  it.each([
    [
      'only some choices carry refusal',
      '{"choices":[{"message":{"refusal":null}},{"message":{}}],"logprobs":null}',
    ],
    [
      'only some carry logprobs',
      '{"choices":[{"message":{"refusal":null},"logprobs":null},{"message":{"refusal":null}}]}',
    ],
    ['a message whose first member is a cut null', '{"choices":[{"message":{"annotations":null}}]}'],
  ])('leaves it to the parse when %s', (_name, input) => {
    expect(schemaBytes(Buffer.from(input))).toBeUndefined();
  });
});

const schemaObjectOf = (json: string) => {
  const o = JSON.parse(json) as Record<string, unknown>;
  schemaObject(o);
  return o;
};

describe('schemaObject: the same on a parsed answer', () => {
  it('drops the nulls, keeps what is not null, puts in what is required, and says whether it changed any', () => {
    const o = {
      choices: [
        { message: { annotations: null, function_call: null, content: 'x' } },
        { message: { annotations: [], refusal: 'no' }, logprobs: { content: [] } },
      ],
      usage: { prompt_tokens_details: null, completion_tokens_details: { reasoning_tokens: 1 } },
    };
    expect(schemaObject(o)).toBe(true);
    expect(o).toEqual({
      choices: [
        { message: { content: 'x', refusal: null }, logprobs: null },
        { message: { annotations: [], refusal: 'no' }, logprobs: { content: [] } },
      ],
      usage: { completion_tokens_details: { reasoning_tokens: 1 } },
    });
    expect(schemaObject(o)).toBe(false);
  });
});
