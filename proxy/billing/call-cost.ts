// "Every response says what it cost" (DESIGN "Money"): `usage.cost` and `usage.currency` in every
// answer, and the header `x-modelplane-cost` on a non-streamed one. The amount is the call's bill,
// the very number its settlement hands the ledger (`charge.settle(bill.cost, …)` or the video
// job's charge), computed before the settlement: so it is sent even while that is in flight.
//
// A short charge (a cost beyond the hold that the spare balance could not cover; the ledger then
// records the uncollected part as `short` beside the charge) is known only once the settlement is
// acknowledged, after the answer left. The field says the amount charged to the ledger — the
// call's cost — never a guess at the shortfall; `modelplane ledger show <request id>` shows both.
import type { FastifyRequest } from 'fastify';
import { formatNano } from '../../core/money.ts';
import type { CallCost } from '../usage.ts';

/** Set on a non-streamed answer (../calls/metered.ts; a video job, ../calls/video-call.ts). */
export const COST_HEADER = 'x-modelplane-cost';

/** The cost of `request`'s call, `nano` of its account's currency. */
export function callCost(request: FastifyRequest, nano: number): CallCost {
  // Never null here: a call of an account without a currency is refused before it is priced (AUTH-6).
  return { cost: formatNano(nano), currency: request.principal.currency ?? '' };
}
