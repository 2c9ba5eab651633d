import { describe, expect, it } from 'vitest';
import { MAX_SAFE_NANO } from '../money.ts';
import { nano, ttl, usageArgs } from './script-args.ts';

describe('ledger script arguments', () => {
  it('amounts are integer nano-units in [0, 2^53): anything else never reaches Redis', () => {
    for (const ok of [0, 1, MAX_SAFE_NANO]) expect(() => nano('cost', ok)).not.toThrow();
    for (const bad of [-1, 0.5, Number.NaN, MAX_SAFE_NANO + 1, Number.POSITIVE_INFINITY])
      expect(() => nano('cost', bad)).toThrow(/cost must be a non-negative integer/);
    expect(() => ttl(1)).not.toThrow();
    for (const bad of [0, -5, 1.5]) expect(() => ttl(bad)).toThrow(RangeError);
  });

  it("a usage block in read_usage's order; absent counts empty, video seconds also in ms", () => {
    expect(
      usageArgs({
        keyId: 'key_1',
        model: 'm',
        kind: 'chat',
        inputTokens: 3,
        outputTokens: 4,
        requestId: 'r',
      }),
    ).toEqual(['key_1', 'm', 'chat', '3', '', '4', '', '', '', 'r']);
    expect(usageArgs({ keyId: null, model: 'v', kind: 'video', videoSeconds: 2.5 })).toEqual([
      '',
      'v',
      'video',
      '',
      '',
      '',
      '',
      '2.5',
      '2500',
      '',
    ]);
  });

  it('refuses a usage block the scripts would misread', () => {
    expect(() => usageArgs({ keyId: null, model: '', kind: 'chat' })).toThrow(/model is required/);
    expect(() => usageArgs({ keyId: null, model: 'm', kind: 'chat', outputTokens: -1 })).toThrow(
      /outputTokens/,
    );
    expect(() => usageArgs({ keyId: null, model: 'm', kind: 'video', videoSeconds: -1 })).toThrow(
      /videoSeconds/,
    );
  });
});
