import { describe, expect, it } from 'vitest';
import { lineRoom, mayAdmit } from './idle-gate.ts';

describe('mayAdmit', () => {
  const limits = { idleBelow: 2, concurrency: 3 };
  it.each([
    [{ interactive: 0, lines: 0, endpoints: 1 }, true],
    // An interactive call takes one line's slot back: 2 of 3 may run beside it.
    [{ interactive: 1, lines: 1, endpoints: 1 }, true],
    [{ interactive: 1, lines: 2, endpoints: 1 }, false],
    // The batch's own concurrency is a ceiling even on an idle model.
    [{ interactive: 0, lines: 3, endpoints: 1 }, false],
    // Interactive calls at the bound: lines wait.
    [{ interactive: 2, lines: 0, endpoints: 1 }, false],
    // The bound is per endpoint.
    [{ interactive: 3, lines: 0, endpoints: 2 }, false],
    [{ interactive: 3, lines: 0, endpoints: 3 }, false],
    [{ interactive: 4, lines: 0, endpoints: 2 }, false],
    // A model with no endpoint yet counts as one.
    [{ interactive: 1, lines: 0, endpoints: 0 }, true],
  ])('%j → %s', (load, want) => {
    expect(mayAdmit(load, limits)).toBe(want);
  });
});

describe('lineRoom', () => {
  it('fills the batch concurrency on an idle model, gives one slot per interactive call, none when busy', () => {
    const limits = { idleBelow: 4, concurrency: 16 };
    expect(lineRoom({ interactive: 0, endpoints: 2 }, limits)).toBe(16);
    expect(lineRoom({ interactive: 3, endpoints: 2 }, limits)).toBe(13);
    expect(lineRoom({ interactive: 8, endpoints: 2 }, limits)).toBe(0);
  });
});
