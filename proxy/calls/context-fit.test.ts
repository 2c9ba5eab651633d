import { describe, expect, it } from 'vitest';
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import { ApiError } from '../../core/errors.ts';
import {
  checkEmbeddingInputs,
  MAX_BYTES_PER_TOKEN,
  outputThatFits,
  promptTextBytes,
  tokensAtLeast,
} from './context-fit.ts';

const entry = (e: Partial<CatalogueEntry>) => ({ id: 'm', ...e }) as CatalogueEntry;

/** The error `fn` throws, as { param, message }. */
function refusal(fn: () => unknown): { param: string | null; message: string } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(400);
    return { param: (err as ApiError).param, message: (err as ApiError).message };
  }
  throw new Error('expected a 400');
}

describe('outputThatFits', () => {
  it.each([
    // context, prompt, exact, perChoice, asked field → output tokens
    [64, 40, true, 24, 'max_tokens', 24],
    [64, 40, true, 10, null, 10],
    [64, 40, true, 48, null, 24], // a default bound is lowered to the room left
    [64, 63, true, 48, null, 1],
    [64, 40, false, 48, null, 24],
  ] as const)(
    'context %i, prompt %i (exact %s), %i per choice asked by %s → %i',
    (c, p, exact, per, field, out) => {
      expect(outputThatFits(c, { tokens: p, exact }, per, field)).toBe(out);
    },
  );

  it('an asked bound past the room is refused naming its field, with the counts', () => {
    const r = refusal(() => outputThatFits(64, { tokens: 40, exact: true }, 32, 'max_completion_tokens'));
    expect(r.param).toBe('max_completion_tokens');
    expect(r.message).toMatch(
      /maximum context length is 64 tokens.*72 tokens \(40 in the messages, 32 in the completion\)/,
    );
  });

  it('a lower bound says so', () => {
    const r = refusal(() => outputThatFits(64, { tokens: 50, exact: false }, 32, 'max_tokens'));
    expect(r.message).toMatch(/at least 82 tokens \(at least 50 in the messages/);
  });

  it.each([null, 'max_tokens'])(
    'a prompt that leaves no room is refused naming messages (asked: %s)',
    (field) => {
      const r = refusal(() => outputThatFits(64, { tokens: 64, exact: true }, 8, field));
      expect(r.param).toBe('messages');
    },
  );
});

describe('prompt text', () => {
  it('counts string contents and text parts, not the JSON around them', () => {
    expect(
      promptTextBytes([
        { content: 'héllo' },
        {
          content: [
            { type: 'text', text: 'ab' },
            { type: 'image_url', image_url: { url: 'x'.repeat(99) } },
          ],
        },
        { content: null },
      ]),
    ).toBe(8);
  });

  it('a lower bound of tokens: no tokenizer has a token longer than MAX_BYTES_PER_TOKEN bytes', () => {
    expect(tokensAtLeast(MAX_BYTES_PER_TOKEN - 1)).toBe(0);
    expect(tokensAtLeast(MAX_BYTES_PER_TOKEN * 3 + 1)).toBe(3);
  });
});

describe('checkEmbeddingInputs', () => {
  const small = entry({ contextLength: 16 });
  const ids = (n: number) => Array.from({ length: n }, (_, i) => i);

  it.each([
    ['token ids within the context', ids(16)],
    ['arrays of token ids within it', [ids(1), ids(16)]],
    ['a text whose lower bound fits', 'x'.repeat(16 * MAX_BYTES_PER_TOKEN + MAX_BYTES_PER_TOKEN - 1)],
    ['texts', ['a', 'b']],
  ] as const)('accepts %s', (_name, input) => {
    expect(() => checkEmbeddingInputs(small, input as never)).not.toThrow();
  });

  it.each([
    ['token ids past the context', ids(17), 'input'],
    ['the second array of token ids past it', [ids(1), ids(17)], 'input[1]'],
    ['a text provably past it', 'x'.repeat(17 * MAX_BYTES_PER_TOKEN), 'input'],
    ['the third text provably past it', ['a', 'b', 'x'.repeat(17 * MAX_BYTES_PER_TOKEN)], 'input[2]'],
  ] as const)('refuses %s, naming %s', (_name, input, param) => {
    const r = refusal(() => checkEmbeddingInputs(small, input as never));
    expect(r.param).toBe(param);
    expect(r.message).toMatch(/maximum context length is 16 tokens/);
  });

  it('a model without a context length is not checked', () => {
    expect(() => checkEmbeddingInputs(entry({}), ids(100_000))).not.toThrow();
  });
});
