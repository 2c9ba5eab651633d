import { describe, expect, it } from 'vitest';
import { acceptedEngines } from '../engines/index.ts';
import { chatModel } from '../fixtures.ts';
import type { EngineSpec } from '../model/model.ts';
import { parseModel } from '../model/model.ts';
import { catalogueTokenizer } from './tokenizer.ts';

const spec = (engine: EngineSpec, kind: 'chat' | 'embedding' = 'chat') =>
  chatModel('m', { engine, kind }).spec;

describe('the tokenizer the proxies route a Model with', () => {
  it('engine.tokenizer, else the weights’ Hugging Face repo, else engine.model when it is a repo', () => {
    expect(catalogueTokenizer(spec({ type: 'vllm', model: 'org/w', tokenizer: 'org/tok@v1' }))).toBe(
      'hf:org/tok@v1',
    );
    expect(
      catalogueTokenizer(
        spec({ type: 'vllm', weights: { source: { huggingFace: { repo: 'org/w', revision: 'abc' } } } }),
      ),
    ).toBe('hf:org/w@abc');
    expect(catalogueTokenizer(spec({ type: 'vllm', model: 'org/w' }))).toBe('hf:org/w');
    expect(catalogueTokenizer(spec({ type: 'simulator' }))).toBe('simulator');
  });

  it('none where the proxy could not fetch one or the engine publishes no events', () => {
    expect(catalogueTokenizer(spec({ type: 'vllm', model: '/models/llama' }))).toBeUndefined();
    expect(
      catalogueTokenizer(spec({ type: 'vllm', weights: { source: { pvc: { claimName: 'w' } } } })),
    ).toBeUndefined();
    expect(catalogueTokenizer(spec({ type: 'vllm', model: 'org/w' }, 'embedding'))).toBeUndefined();
    expect(catalogueTokenizer(spec({ type: 'llamacpp', model: 'org/w' }))).toBeUndefined();
  });

  it('the Model field takes a repo, optionally @revision, and nothing else', () => {
    const parse = (tokenizer: string) =>
      parseModel(
        {
          ...chatModel('m'),
          spec: { ...chatModel('m').spec, engine: { type: 'vllm', tokenizer } },
        },
        acceptedEngines(),
      );
    expect(parse('org/tok@main').ok).toBe(true);
    expect(parse('/models/tok').ok).toBe(false);
    expect(parse('https://example.com/tok').ok).toBe(false);
  });
});
