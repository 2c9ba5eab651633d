// A key's line for its calls-at-once slots alone (no Redis): who tries when. The head tries when a
// slot is freed here or at its retry; the others once they are head; everyone by the deadline; a
// caller gone leaves the line and the next tries at once. Real timers, short waits.
import { describe, expect, it } from 'vitest';
import { Cancel } from '../engine/cancel.ts';
import { SlotLines } from './slot-lines.ts';

const LONG = 60_000;
const later = () => performance.now() + LONG;

describe('the slot lines', () => {
  it('a freed slot wakes the head at once, not the others; the next is head when it leaves', async () => {
    const lines = new SlotLines();
    const a = lines.join('k');
    const b = lines.join('k');
    expect(lines.busy('k')).toBe(true);
    const woke: string[] = [];
    const wa = a.next(LONG, later(), new Cancel()).then(() => woke.push('a'));
    const wb = b.next(LONG, later(), new Cancel()).then(() => woke.push('b'));
    const t0 = performance.now();
    lines.freed('k');
    await wa;
    expect(woke).toEqual(['a']);
    a.leave();
    await wb;
    expect(woke).toEqual(['a', 'b']);
    // Both woke long before their minute: the hand-offs were immediate.
    expect(performance.now() - t0).toBeLessThan(LONG / 10);
    b.leave();
    expect(lines.busy('k')).toBe(false);
  });

  it('the head tries at its retry, a waiter behind it only at the deadline', async () => {
    const lines = new SlotLines();
    const head = lines.join('k');
    const behind = lines.join('k');
    const t0 = performance.now();
    await head.next(50, later(), new Cancel());
    expect(performance.now() - t0).toBeGreaterThanOrEqual(45);
    const t1 = performance.now();
    await behind.next(10, performance.now() + 120, new Cancel());
    expect(performance.now() - t1).toBeGreaterThanOrEqual(110);
    head.leave();
    behind.leave();
  });

  it('a caller gone rejects with its reason and leaves; the next tries at once', async () => {
    const lines = new SlotLines();
    const a = lines.join('k');
    const b = lines.join('k');
    const cancel = new Cancel();
    const wa = a.next(LONG, later(), cancel);
    const wb = b.next(LONG, later(), new Cancel());
    cancel.abort(new Error('client left'));
    await expect(wa).rejects.toThrow('client left');
    a.leave();
    await wb;
    b.leave();
    expect(lines.busy('k')).toBe(false);
  });
});
