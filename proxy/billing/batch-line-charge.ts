// The money of one batch line's call (docs/batches.md "Billing"). A line runs as its route's own
// POST, injected by the batch runner (../batches/run-line.ts) with the batch's key, so it is read,
// checked, translated and answered exactly as an interactive call is — one route, one metered
// lifecycle (../calls/metered.ts), one door (Billing.open, which hands a line's call this charge).
// Only its charge differs, and only here: the call is already covered by the batch's hold (made
// when the batch was created, ./batch-money.ts), so the line's charge holds nothing in Redis and
// settles nothing itself. It hands the call's usage back to the runner, which writes the line's
// result and bills it once, at the batch price, under the line's own id. It is a Charge beside the
// interactive CallCharge, not a kind of it: an interactive call never runs a line's code.
import { ApiError, invalidRequest } from '../../core/errors.ts';
import type { Cancel } from '../engine/cancel.ts';
import type { CallUsage } from '../usage.ts';
import type { CallInfo, Charge, HeldRun, Quote } from './charge-types.ts';

export interface LineTicket {
  /** The most the line may hold at the route's price: its estimate there, so the batch's hold covers it. */
  budget: number;
  /** What the call used, once its answer was complete. */
  usage: CallUsage | null;
  /** The call's cancel once it holds (the runner preempts a line through it). */
  cancel: Cancel | null;
  /** Set by the runner when it gives the line's slot to an interactive call: the line runs again later. */
  preempted: boolean;
}

/** Why a preempted line's call ended: it is run again, never written as an error. */
export const linePreempted = () =>
  new ApiError('model_overloaded', 'This batch line gave its slot to an interactive call.', {
    retryAfterS: 1,
  });

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on a batch line's injected call (../batches/line-tickets.ts). */
    batchLine: LineTicket | null;
  }
}

const noop = () => {};

/** A line's charge: covered by the batch's hold; its usage goes back to the runner. */
export class BatchLineCharge implements Charge {
  allowance = 0;
  covered = false;
  /** A line holds nothing of its own (the batch's hold covers it), so no rate window refuses it here. */
  readonly rateLimit = null;
  readonly windows = null;

  constructor(
    private readonly call: CallInfo,
    private readonly quote: Quote,
    private readonly ticket: LineTicket,
  ) {}

  async hold<T>(h: HeldRun<T>): Promise<T> {
    const q = this.quote;
    // The route may hold more than the estimate (a Responses line's stored history): its output is
    // then lowered to what the estimate pays for, as a short reserve lowers it.
    const allowance = q.max <= this.ticket.budget ? q.full : q.allowance(this.ticket.budget);
    if (this.ticket.budget < q.min || (q.full > 0 && allowance < 1))
      throw invalidRequest('This request is larger than the batch estimated when it was created.');
    if (this.ticket.preempted) throw linePreempted();
    this.ticket.cancel = this.call.cancel;
    this.allowance = allowance;
    this.covered = true;
    return h.run(allowance, this.call.cancel);
  }

  settle(_cost: number, counts: CallUsage, deliver: () => void = noop): void {
    this.ticket.usage = counts;
    deliver();
  }

  release(): void {}

  chargeNow(): never {
    throw new Error('a batch line is never charged at once');
  }

  /** Nothing to journal while it runs: the runner bills the line from its written result. */
  trackProgress(): void {}
}
