import { describe, expect, it } from 'vitest';
import { newId, newLongId, newRequestId, REQUEST_ID_PATTERN } from './ids.ts';

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

  it('Messages ids are <prefix>_ + 24 hex (msg_, toolu_), distinct', () => {
    const ids = new Set(Array.from({ length: 2000 }, () => newLongId('msg')));
    for (const id of ids) expect(id).toMatch(/^msg_[0-9a-f]{24}$/);
    expect(ids.size).toBe(2000);
  });
});
