import { describe, expect, it } from 'vitest';
import { DemandBoard } from './board.ts';

describe('the demand board', () => {
  it('counts each request once per state; leaving twice counts once', () => {
    const b = new DemandBoard();
    const a = b.enter('M', 'inFlight');
    const h = b.enter('M', 'held');
    b.enter('N', 'queued');
    expect(b.get('M')).toEqual({ inFlight: 1, queued: 0, held: 1 });
    a();
    a();
    expect(b.get('M')).toEqual({ inFlight: 0, queued: 0, held: 1 });
    h();
    expect(b.snapshot().has('M')).toBe(false);
    expect(b.snapshot().get('N')).toEqual({ inFlight: 0, queued: 1, held: 0 });
  });

  it('tells listeners when a model gets its first held request, not on later ones', () => {
    const b = new DemandBoard();
    let told = 0;
    b.onFirstHeld(() => told++);
    const first = b.enter('M', 'held');
    b.enter('M', 'held');
    expect(told).toBe(1);
    first();
    b.enter('M', 'inFlight');
    expect(told).toBe(1);
  });
});
