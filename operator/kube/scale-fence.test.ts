import { describe, expect, it } from 'vitest';
import { chatModel } from '../fixtures.ts';
import type { Model } from '../model/model.ts';
import { SCALE_TERM_ANNOTATION, scaleFence, scaleTermOf } from './scale-fence.ts';

const claimedBy = (term: string | undefined): Model => {
  const m = chatModel('m');
  return {
    ...m,
    metadata: {
      ...m.metadata,
      ...(term === undefined ? {} : { annotations: { [SCALE_TERM_ANNOTATION]: term } }),
    },
  };
};

describe('the scale fence (which term may write replicas)', () => {
  it.each([
    ['no term claimed it yet', undefined, 3, { kind: 'claim' }],
    ['an older term claimed it', '2', 3, { kind: 'claim' }],
    ['our term claimed it', '3', 3, { kind: 'write' }],
    ['a newer term claimed it: deposed', '4', 3, { kind: 'stale', fence: 4 }],
    ['a garbled annotation counts as none', 'x', 3, { kind: 'claim' }],
  ] as const)('%s', (_, annotation, term, verdict) => {
    expect(scaleFence(claimedBy(annotation), term)).toEqual(verdict);
  });

  it('reads the term off the annotation', () => {
    expect(scaleTermOf(claimedBy('17'))).toBe(17);
    expect(scaleTermOf(claimedBy(undefined))).toBe(0);
    expect(scaleTermOf(claimedBy('-1'))).toBe(0);
  });
});
