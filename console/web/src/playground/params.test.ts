import { describe, expect, it } from 'vitest';
import type { PricedModel } from '../api.ts';
import { API_MAX_OUTPUT_TOKENS, DEFAULT_PARAMS, limitsFor, paramFields, withinLimits } from './params.ts';

const model = (maxOutputTokens: number | null) => ({ id: 'M', maxOutputTokens }) as PricedModel;

describe('the bounds of each parameter, per model and dialect', () => {
  it.each([
    ['chat', 8192, { temperature: 2, maxTokens: 8192, penalty: true, seed: true, stops: 4 }],
    ['messages', 8192, { temperature: 1, maxTokens: 8192, penalty: false, seed: false, stops: 16 }],
    ['chat', null, { temperature: 2, maxTokens: API_MAX_OUTPUT_TOKENS, penalty: true, seed: true, stops: 4 }],
  ] as const)('%s, model limit %s', (dialect, limit, want) => {
    const l = limitsFor(model(limit), dialect);
    expect({
      temperature: l.temperature.max,
      maxTokens: l.maxTokens.max,
      penalty: l.penalty !== null,
      seed: l.seed !== null,
      stops: l.stops,
    }).toEqual(want);
    expect(l.topP.min).toBeGreaterThan(0); // vLLM refuses top_p 0
  });

  it('a value past a bound is the bound; what the dialect lacks is dropped', () => {
    const p = {
      ...DEFAULT_PARAMS,
      temperature: 5,
      maxTokens: 999_999,
      topP: 0,
      seed: 7,
      frequencyPenalty: 9,
      presencePenalty: -9,
      stop: ['a', 'b', 'c', 'd', 'e'],
      json: 'json_object' as const,
    };
    expect(withinLimits(p, limitsFor(model(8192), 'chat'))).toMatchObject({
      temperature: 2,
      maxTokens: 8192,
      topP: 0.01,
      seed: 7,
      frequencyPenalty: 2,
      presencePenalty: -2,
      stop: ['a', 'b', 'c', 'd'],
      json: 'json_object',
    });
    expect(withinLimits(p, limitsFor(model(8192), 'messages'))).toMatchObject({
      temperature: 1,
      seed: null,
      frequencyPenalty: null,
      presencePenalty: null,
      stop: ['a', 'b', 'c', 'd', 'e'],
      json: 'text', // Messages has no "any JSON object" mode
    });
  });
});

describe('the body fields, in each dialect’s names', () => {
  const p = {
    ...DEFAULT_PARAMS,
    topP: 0.9,
    stop: ['END', ''],
    seed: 42,
    frequencyPenalty: 0.5,
    json: 'json_schema' as const,
    schema: '{"type":"object"}',
  };
  it('chat completions', () => {
    expect(paramFields(p, 'chat')).toEqual({
      temperature: 0.7,
      max_tokens: 256,
      top_p: 0.9,
      stop: ['END'],
      seed: 42,
      frequency_penalty: 0.5,
      response_format: { type: 'json_schema', json_schema: { name: 'reply', schema: { type: 'object' } } },
    });
    expect(paramFields({ ...DEFAULT_PARAMS, json: 'json_object' }, 'chat')).toEqual({
      temperature: 0.7,
      max_tokens: 256,
      response_format: { type: 'json_object' },
    });
  });
  it('Messages', () => {
    expect(paramFields(p, 'messages')).toEqual({
      max_tokens: 256,
      temperature: 0.7,
      top_p: 0.9,
      stop_sequences: ['END'],
      output_config: { format: { type: 'json_schema', schema: { type: 'object' } } },
    });
  });
});
