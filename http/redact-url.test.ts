import { describe, expect, it } from 'vitest';
import { redactQuery } from './redact-url.ts';

describe('redactQuery', () => {
  it('replaces every query value and masks key-shaped path segments', () => {
    expect(redactQuery('/v1/models')).toBe('/v1/models');
    expect(redactQuery('/v1/models?api_key=sk-service-abc&limit=2&flag')).toBe(
      '/v1/models?api_key=[redacted]&limit=[redacted]&flag',
    );
    expect(redactQuery('/v1/models/sk-service-0123456789abcdef')).toBe('/v1/models/sk-[redacted]');
  });
});
