// The shapes a call's charge (./charge.ts) is made of: what a route quotes, the engine run it holds
// for, who the call is, and the charge a call holds (what it needs of its replica's billing,
// ChargeDeps, stays in ./charge.ts).
import type {
  ChargeResult,
  Metering,
  RateRefusal,
  UsageRecord,
  WindowsState,
} from '../../core/billing/index.ts';
import type { Principal } from '../auth/key-cache.ts';
import type { Cancel } from '../engine/cancel.ts';
import type { RequestTrace } from '../tracing/tracing.ts';
import type { CallUsage } from '../usage.ts';

/**
 * A call's money as the call sees it, whichever door made it (Billing.open): an interactive call's
 * (CallCharge, ./charge.ts) or a batch line's (./batch-line-charge.ts). Two classes side by side,
 * neither a kind of the other, so an interactive call runs only CallCharge's own code.
 */
export interface Charge {
  /** What the engine call was allowed once held (text: output tokens, all choices together). */
  readonly allowance: number;
  /** The hold covers the engine call now running: an answer may be committed to. */
  readonly covered: boolean;
  /** The key's rate limit that refused the hold, else null. */
  readonly rateLimit: RateRefusal | null;
  /** The key's rate windows after this call took its share; null without a limit. */
  readonly windows: WindowsState | null;
  /** Holds credit for the call and runs it; a call that fails or is refused holds nothing after. */
  hold<T>(h: HeldRun<T>): Promise<T>;
  /** The call is done: charge `cost` with its usage, and run `deliver` once that is safe. Never throws. */
  settle(cost: number, counts: CallUsage, deliver?: () => void): void;
  /** Nothing billable happened: the hold goes back. Never throws. */
  release(): void;
  /** A call charged at once, with no hold (a video job). */
  chargeNow(a: Parameters<Metering['charge']>[0]): Promise<ChargeResult>;
  /** A stream says how to bill what it delivered so far (journaled while it runs). */
  trackProgress(bill: () => { cost: number; usage: CallUsage }): void;
}

/** What a call may cost, in nano, and what a hold buys it (text: output tokens). */
export interface Quote {
  /** The least hold worth running the call on (text: the prompt alone). */
  min: number;
  /** The worst case: the whole call. */
  max: number;
  /** The allowance when `max` is held. */
  full: number;
  /** The allowance a hold of `held` (min ≤ held < max) still pays for. */
  allowance(held: number): number;
  /**
   * What the call takes of a rate-limited key's token windows (issue 34): the prompt's tokens as
   * the hold counts them, and the output tokens `full` allows. Absent: none (images, videos).
   */
  tokens?: { input: number; output: number };
}

export interface HeldRun<T> {
  /** Starts the engine call allowed `allowance`; resolves when a response can be sent. */
  run(allowance: number, cancel: Cancel): Promise<T>;
  /** Throws away a result that will not be sent (closes its engine body). */
  discard(result: T): void;
}

export interface CallInfo {
  principal: Principal;
  /** The canonical model id. */
  model: string;
  kind: UsageRecord['kind'];
  /** Also the call's hold id: the ledger finds a call by it (`modelplane ledger show`). */
  requestId: string;
  /** The request's cancel: the client leaving, the key dying, or shutdown ending the call. */
  cancel: Cancel;
  /** The request's trace when tracing is on (proxy/tracing/): the settlement is a span of it. */
  trace?: RequestTrace;
}
