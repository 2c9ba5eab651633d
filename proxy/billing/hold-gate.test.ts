// runUnderHold's concurrent path: the engine attempt's signal follows the request's (a client that
// leaves mid-stream must stop the engine call) and a short reservation cancels the attempt.
import { describe, expect, it } from 'vitest';
import { Cancel } from '../engine/cancel.ts';
import { ReservationShortError, runUnderHold } from './hold-gate.ts';
import type { Reservation, TextCharge } from './text-charge.ts';

function charge(reservation: Promise<Reservation>): TextCharge {
  return {
    tryLease: () => null,
    mayRunConcurrently: () => true,
    reserve: () => reservation,
  } as unknown as TextCharge;
}

describe('runUnderHold (concurrent reserve)', () => {
  it('the attempt cancel aborts when the request aborts, also after the call was returned', async () => {
    const request = new Cancel();
    let seen: Cancel | undefined;
    const signal = await runUnderHold(
      charge(Promise.resolve({ ok: true, held: 10, coveredTokens: 5 })),
      5,
      request,
      {
        run: async (_out, s) => {
          seen = s;
          return s;
        },
        discard: () => {},
      },
    );
    expect(signal.aborted).toBe(false);
    request.abort(new Error('client left'));
    expect(seen?.aborted).toBe(true);
    expect((seen?.reason as Error | undefined)?.message).toBe('client left');
  });

  it('a short reservation aborts the concurrent attempt and reruns with the covered bound', async () => {
    const runs: { out: number; signal: Cancel }[] = [];
    const out = await runUnderHold(
      charge(Promise.resolve({ ok: true, held: 3, coveredTokens: 2 })),
      5,
      new Cancel(),
      {
        run: async (o, s) => {
          runs.push({ out: o, signal: s });
          await new Promise((r) => setTimeout(r, 5));
          return o;
        },
        discard: () => {},
      },
    );
    expect(out).toBe(2);
    expect(runs[0]?.signal.reason).toBeInstanceOf(ReservationShortError);
    expect(runs[1]?.out).toBe(2);
  });
});
