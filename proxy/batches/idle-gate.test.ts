import { describe, expect, it } from 'vitest';
import { mayAdmit } from './idle-gate.ts';

describe('mayAdmit', () => {
  const limits = { idleBelow: 2, concurrency: 3 };
  it.each([
    [{ interactive: 0, lines: 0, endpoints: 1 }, true],
    [{ interactive: 1, lines: 2, endpoints: 1 }, true],
    // The batch's own concurrency is a ceiling even on an idle model.
    [{ interactive: 0, lines: 3, endpoints: 1 }, false],
    // Interactive calls at the bound: lines wait.
    [{ interactive: 2, lines: 0, endpoints: 1 }, false],
    // The bound is per endpoint.
    [{ interactive: 3, lines: 0, endpoints: 2 }, true],
    [{ interactive: 4, lines: 0, endpoints: 2 }, false],
    // A model with no endpoint yet counts as one.
    [{ interactive: 1, lines: 0, endpoints: 0 }, true],
  ])('%j → %s', (load, want) => {
    expect(mayAdmit(load, limits)).toBe(want);
  });
});
