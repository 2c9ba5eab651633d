import { describe, expect, it } from 'vitest';
import { mayCancelBatch } from './key-permissions.ts';

const owner = { role: 'owner' as const, userId: 'u-owner' };
const member = { role: 'member' as const, userId: 'u-member' };

describe('who may cancel a batch (the rule of the key that made it)', () => {
  it('an owner may cancel any batch, made by anyone or by a key no user made', () => {
    expect(mayCancelBatch(owner, { createdBy: 'u-member' })).toBe(true);
    expect(mayCancelBatch(owner, { createdBy: null })).toBe(true);
    expect(mayCancelBatch(owner, null)).toBe(true);
  });
  it("a member may cancel only batches of keys they created: not a colleague's, not an owner's CLI key, not one whose key is unknown", () => {
    expect(mayCancelBatch(member, { createdBy: 'u-member' })).toBe(true);
    expect(mayCancelBatch(member, { createdBy: 'u-owner' })).toBe(false);
    expect(mayCancelBatch(member, { createdBy: null })).toBe(false);
    expect(mayCancelBatch(member, null)).toBe(false);
  });
});
