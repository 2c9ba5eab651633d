// Runs an engine call under a credit hold (DESIGN "Money" and "Latency").
// - Covered by this replica's credit lease (./leases.ts): the hold is carved in memory and the
//   engine is called at once.
// - Near the limit: reserve first, then call the engine with max_tokens lowered to what the hold
//   covers; 429 insufficient_quota when not even the input is covered.
// - Far above the hold: call the engine and reserve at the same time, so metering adds no Redis
//   round trip to the time to first byte. Nothing reaches the client until both are back; a
//   reserve that fails cancels the engine call (nothing charged, 429), and one that comes back
//   short cancels it and runs again sequentially with the lowered bound.
import { insufficientQuota } from '../../core/errors.ts';
import type { Cancel } from '../engine/cancel.ts';
import type { TextCharge } from './text-charge.ts';

/** Abort reason of a concurrent engine call whose reserve did not cover it. */
export class ReservationShortError extends Error {
  constructor() {
    super('The credit reservation did not cover the request.');
    this.name = 'ReservationShortError';
  }
}

export interface HeldRun<T> {
  /** Starts the engine call allowed `outputTokens` of output; resolves when a response can be sent. */
  run: (outputTokens: number, cancel: Cancel) => Promise<T>;
  /** Throws away a result that will not be sent (closes its engine body). */
  discard: (result: T) => void;
}

export async function runUnderHold<T>(
  charge: TextCharge,
  wantedOutput: number,
  requestCancel: Cancel,
  h: HeldRun<T>,
): Promise<T> {
  const sequential = async (covered: number) => {
    // Output is billed per token; a call that may generate none is not worth making.
    if (wantedOutput > 0 && covered < 1) throw insufficientQuota();
    return h.run(covered, requestCancel);
  };
  // Carved from this replica's lease: held in memory, nothing to wait for.
  const leased = charge.tryLease();
  if (leased?.ok) return sequential(leased.coveredTokens);
  if (!charge.mayRunConcurrently()) {
    const r = await charge.reserve();
    if (!r.ok) throw insufficientQuota();
    return sequential(r.coveredTokens);
  }
  // The concurrent attempt's Cancel follows the request's for the call's whole life (a relayed
  // stream must still stop when the client leaves), and also stops alone on a short reservation.
  const attempt = requestCancel.child();
  const reservation = charge.reserve();
  reservation.then(
    (r) => {
      if (!r.ok || r.coveredTokens < wantedOutput) attempt.abort(new ReservationShortError());
    },
    (err) => attempt.abort(err),
  );
  const started = h.run(wantedOutput, attempt);
  const [call, reserved] = await Promise.allSettled([started, reservation]);
  const drop = () => {
    if (call.status === 'fulfilled') h.discard(call.value);
  };
  if (reserved.status === 'rejected') {
    drop();
    throw reserved.reason;
  }
  const r = reserved.value;
  if (!r.ok) {
    drop();
    throw insufficientQuota();
  }
  if (r.coveredTokens >= wantedOutput) {
    if (call.status === 'rejected') throw call.reason;
    return call.value;
  }
  drop();
  return sequential(r.coveredTokens);
}
