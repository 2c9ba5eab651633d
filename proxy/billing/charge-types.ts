// The shapes a call's charge (./charge.ts) is made of: what a route quotes, the engine run it holds
// for, who the call is, and (what it needs of its replica's billing, ChargeDeps, stays in ./charge.ts).
import type { UsageRecord } from '../../core/billing/index.ts';
import type { Principal } from '../auth/key-cache.ts';
import type { Cancel } from '../engine/cancel.ts';
import type { RequestTrace } from '../tracing/tracing.ts';

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
