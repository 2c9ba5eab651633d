import { describe, expect, it } from 'vitest';
import { Leadership, type LeaseView, leaseTimings, termAbove } from './leadership.ts';

const timings = leaseTimings(15); // 15 s lease, 10 s renew deadline, 3.75 s request timeout, 2 s retry
const lease = (over: Partial<LeaseView> = {}): LeaseView => ({
  holder: 'b',
  transitions: 4,
  version: '100',
  durationMs: 15_000,
  ...over,
});

describe('leaseTimings', () => {
  it("keeps client-go's ratios and checks that a renewal's timeout and deadline fit in the lease", () => {
    expect(timings).toEqual({
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      requestTimeoutMs: 3_750,
      retryMs: 2_000,
    });
    expect(leaseTimings(2)).toMatchObject({ renewDeadlineMs: 1_333, requestTimeoutMs: 500, retryMs: 267 });
    // A renewal that took the whole timeout, then the whole deadline, must end before a peer may take over.
    expect(() => leaseTimings(15, { requestTimeoutMs: 5_000 })).toThrow(/overlap/);
    expect(() => leaseTimings(15, { renewDeadlineMs: 14_000 })).toThrow(/overlap/);
    expect(() => leaseTimings(15, { retryMs: 10_000 })).toThrow(/retry period/);
  });
});

describe('Leadership', () => {
  it('no Lease: create term 1; once written, it leads until the deadline, counted from the write that returned', () => {
    const l = new Leadership('a', timings);
    expect(l.decide(null, 0)).toEqual({ kind: 'create', term: 1 });
    // The write took 3 s: the term runs 10 s from its return, not from when it was sent.
    expect(l.wrote(1, 3_000)).toBe(true);
    expect(l).toMatchObject({ leading: true, term: 1, deadline: 13_000 });
    expect(l.expire(12_999)).toBe(false);
    expect(l.expire(13_000)).toBe(true);
    expect(l).toMatchObject({ leading: false, term: null, deadline: undefined });
  });

  it('a leader renews under its term; each successful renewal moves the deadline', () => {
    const l = new Leadership('a', timings);
    l.decide(lease({ holder: '', transitions: 6 }), 0);
    l.wrote(7, 100);
    expect(l.decide(lease({ holder: 'a', transitions: 7, version: '101' }), 2_000)).toEqual({
      kind: 'renew',
      term: 7,
    });
    expect(l.wrote(7, 2_100)).toBe(false); // a renewal starts nothing
    expect(l.deadline).toBe(12_100);
  });

  it('a hung renewal: the deadline passes while nothing returns, and the leader steps down', () => {
    const l = new Leadership('a', timings);
    l.decide(null, 0);
    l.wrote(1, 0);
    // Reads time out (failed) and nothing is written: no event but the clock ends the term.
    l.failed();
    l.failed();
    expect(l.expire(9_999)).toBe(false);
    expect(l.expire(10_000)).toBe(true);
    expect(l.leading).toBe(false);
  });

  it('a follower takes an unchanged Lease only after seeing it unchanged for the lease duration by its own clock', () => {
    const l = new Leadership('a', timings);
    expect(l.decide(lease(), 1_000)).toEqual({ kind: 'wait', lost: false });
    // renewTime in the record plays no part: only the resourceVersion and our clock.
    expect(l.decide(lease(), 15_999)).toEqual({ kind: 'wait', lost: false });
    expect(l.decide(lease(), 16_000)).toEqual({ kind: 'acquire', term: 5 });
  });

  it('a renewal seen restarts the count', () => {
    const l = new Leadership('a', timings);
    l.decide(lease(), 0);
    expect(l.decide(lease({ version: '101' }), 14_000)).toEqual({ kind: 'wait', lost: false });
    expect(l.decide(lease({ version: '101' }), 28_999)).toEqual({ kind: 'wait', lost: false });
    expect(l.decide(lease({ version: '101' }), 29_000)).toMatchObject({ kind: 'acquire' });
  });

  it('after failed reads (an API server stall) the count restarts: the holder renews, nothing is handed over', () => {
    const l = new Leadership('a', timings);
    l.decide(lease(), 0);
    l.failed(); // 30 s of timeouts: the holder may have renewed unseen
    expect(l.decide(lease(), 30_000)).toEqual({ kind: 'wait', lost: false });
    expect(l.decide(lease(), 44_999)).toEqual({ kind: 'wait', lost: false });
  });

  it('the holder that stepped down during a stall takes its own Lease back at once, as a new term', () => {
    const l = new Leadership('b', timings);
    l.decide(lease({ holder: '', transitions: 3 }), 0);
    l.wrote(4, 0);
    l.failed();
    expect(l.expire(10_000)).toBe(true);
    expect(l.decide(lease({ holder: 'b', transitions: 4 }), 30_000)).toEqual({ kind: 'acquire', term: 5 });
    expect(l.wrote(5, 30_100)).toBe(true);
  });

  it('a released Lease is taken at once; a leader that finds another holder has lost it', () => {
    const l = new Leadership('a', timings);
    expect(l.decide(lease({ holder: '' }), 0)).toEqual({ kind: 'acquire', term: 5 });
    l.wrote(5, 0);
    expect(l.decide(lease({ holder: 'b', transitions: 6, version: '200' }), 1_000)).toEqual({
      kind: 'wait',
      lost: true,
    });
    expect(l.leading).toBe(false);
  });

  it('resign ends a term once', () => {
    const l = new Leadership('a', timings);
    expect(l.resign()).toBe(false);
    l.wrote(2, 0);
    expect(l.resign()).toBe(true);
    expect(l.resign()).toBe(false);
  });
});

describe('termAbove', () => {
  it.each([
    // move, the catalogue fence, the term written
    [{ kind: 'acquire', term: 5 } as const, 3, 5],
    [{ kind: 'acquire', term: 1 } as const, 9, 10], // the Lease was deleted and recreated from 0
    [{ kind: 'create', term: 1 } as const, 9, 10],
    [{ kind: 'renew', term: 4 } as const, 9, 4], // a renewal never changes the term
  ])('%o with fence %i writes term %i', (move, fence, term) => {
    expect(termAbove(move, fence).term).toBe(term);
  });
});

describe('Leadership.urgent', () => {
  it('the leader and the holder it last saw retry at the retry period; other followers may back off', () => {
    const l = new Leadership('a', timings);
    expect(l.urgent).toBe(false);
    l.decide(lease({ holder: 'a' }), 0);
    expect(l.urgent).toBe(true); // ours, not leading (a restart, a stall): take it back at once
    l.wrote(5, 0);
    l.expire(10_000);
    expect(l.urgent).toBe(true);
    l.decide(lease({ holder: 'b', version: '300' }), 11_000);
    expect(l.urgent).toBe(false);
  });
});
