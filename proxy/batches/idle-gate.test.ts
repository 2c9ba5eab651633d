import { describe, expect, it } from 'vitest';
import { lineRoom, mayAdmit, slotRoom } from './idle-gate.ts';

describe('mayAdmit', () => {
  const limits = { idleBelow: 2, concurrency: 4 };
  it.each([
    [{ interactive: 0, lines: 0, endpoints: 1 }, true],
    // One interactive call of the two that make the model busy: half the room.
    [{ interactive: 1, lines: 1, endpoints: 1 }, true],
    [{ interactive: 1, lines: 2, endpoints: 1 }, false],
    // The batch's own concurrency is a ceiling even on an idle model.
    [{ interactive: 0, lines: 4, endpoints: 1 }, false],
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

describe('lineRoom and slotRoom', () => {
  const limits = { idleBelow: 4, concurrency: 16 };
  it('fills the batch concurrency on an idle model, shrinks with interactive calls, none when busy', () => {
    expect(lineRoom({ interactive: 0, endpoints: 2 }, limits)).toBe(16);
    expect(lineRoom({ interactive: 2, endpoints: 2 }, limits)).toBe(12);
    expect(lineRoom({ interactive: 8, endpoints: 2 }, limits)).toBe(0);
  });
  it('preempts only the lines holding slots interactive calls need', () => {
    expect(slotRoom({ interactive: 2 }, limits)).toBe(14);
    expect(slotRoom({ interactive: 20 }, limits)).toBe(0);
  });
});
