import { describe, expect, it } from 'vitest';
import type { CatalogueEntry } from '../../core/catalogue/index.ts';
import { ENDPOINTS, endpointOf, OPENAI_BATCH_ENDPOINTS, speaksMessages } from '../../core/endpoints.ts';
import { admitOutput } from './text-door.ts';

const entry = { id: 'm', maxOutputTokens: 1_000 } as CatalogueEntry;

describe('the endpoint table', () => {
  it("chat's bound is max_completion_tokens when set, else max_tokens; unset, the default is named max_tokens", () => {
    const both = admitOutput(entry, '/v1/chat/completions', { max_completion_tokens: 7, max_tokens: 9 }, 50);
    expect([both.perChoice, both.field, both.asked]).toEqual([7, 'max_completion_tokens', true]);
    const old = admitOutput(entry, '/v1/chat/completions', { max_tokens: 9 }, 50);
    expect([old.perChoice, old.field]).toEqual([9, 'max_tokens']);
    const none = admitOutput(entry, '/v1/chat/completions', { max_completion_tokens: null }, 50);
    expect([none.perChoice, none.field, none.asked]).toEqual([50, 'max_tokens', false]);
  });

  it("Responses' bound is max_output_tokens, Messages' max_tokens; over the model's limit it is lowered to it", () => {
    expect(admitOutput(entry, '/v1/responses', { max_output_tokens: 3 }, 50).field).toBe('max_output_tokens');
    const over = admitOutput(entry, '/v1/messages', { max_tokens: 32_000 }, 32_000);
    expect([over.perChoice, over.field, over.clampedFrom]).toEqual([1_000, 'max_tokens', 32_000]);
  });

  it('embeddings generate no output: asking their bound is a bug, not a default', () => {
    expect(() => admitOutput(entry, '/v1/embeddings', {}, 50)).toThrow(/no output/);
  });

  it("a path's facts: Messages' dialect is its own, OpenAI's batches run the rest, an unknown path has none", () => {
    expect(OPENAI_BATCH_ENDPOINTS).toEqual(['/v1/chat/completions', '/v1/responses', '/v1/embeddings']);
    expect(speaksMessages('/v1/messages')).toBe(true);
    expect(speaksMessages('/v1/chat/completions')).toBe(false);
    expect(speaksMessages(undefined)).toBe(false);
    expect(endpointOf('/v1/embeddings')?.kind).toBe('embedding');
    expect(endpointOf('toString')).toBeUndefined();
    expect(endpointOf('')).toBeUndefined();
    expect(Object.keys(ENDPOINTS)).toHaveLength(4);
  });
});
