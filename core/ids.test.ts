import { describe, expect, it } from 'vitest';
import { newId, newRequestId, REQUEST_ID_PATTERN } from './ids.ts';

describe('pooled ids', () => {
  it('ERR-1 request ids are req_ + 24 hex; hold ids are <prefix>_ + 16 hex; all distinct across refills', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const r = newRequestId();
      const h = newId('hold');
      expect(r).toMatch(REQUEST_ID_PATTERN);
      expect(h).toMatch(/^hold_[0-9a-f]{16}$/);
      seen.add(r).add(h);
    }
    expect(seen.size).toBe(6000);
  });
});
