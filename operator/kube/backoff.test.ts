import { describe, expect, it } from 'vitest';
import { FailureCount, nextDelay } from './backoff.ts';

describe('nextDelay', () => {
  it.each([
    // failures before, random, delay
    [0, 0, 500],
    [1, 0, 1_000],
    [3, 0, 4_000],
    [6, 0, 30_000],
    [60, 0, 30_000],
    [3, 1, 3_200], // up to a fifth off, so replicas that failed together spread out
  ])('retry after %i failures (random %d) waits %i ms', (failures, r, delay) => {
    expect(nextDelay(failures, { baseMs: 500, maxMs: 30_000, random: () => r })).toBe(delay);
  });
});

describe('FailureCount', () => {
  it('counts failures in a row; retrying is not success, a success resets', () => {
    const f = new FailureCount(60_000);
    f.restarted(0);
    expect([f.fail(10), f.fail(20), f.fail(30)]).toEqual([0, 1, 2]);
    f.restarted(40); // a warm informer's restart: it skipped the list and failed at the watch again
    expect(f.fail(50)).toBe(3);
    f.succeed();
    expect(f.fail(60)).toBe(0);
  });

  it('a run that lasted the healthy time forgives earlier failures (a watch that was up, then broke)', () => {
    const f = new FailureCount(60_000);
    f.restarted(0);
    f.fail(1);
    f.fail(2);
    f.restarted(1_000);
    expect(f.fail(61_000)).toBe(0);
    expect(f.count).toBe(1);
  });
});
