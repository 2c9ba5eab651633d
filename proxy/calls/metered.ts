// proxy/calls/ owns a charged call's life, whatever its modality: this file, the one lifecycle of
// a metered call; ./relay.ts, the one relay of every streamed text call (fed by the dialects'
// translators); ./text-call.ts, ./embeddings-call.ts, ./image-call.ts and ./video-call.ts, what
// each modality brings to them (its quote, its engine request, its bill). A route file declares
// the route, parses and quotes, and calls one of those; it never touches a charge itself.
//
// meteredCall (DESIGN "Money"; ../billing/charge.ts tells how each step holds and settles):
// 1. the request's abort is linked (the client leaving, the key dying, shutdown) to the call;
// 2. `billing.open` makes the charge, or refuses the call while settlements cannot reach Redis
//    (the outbox gate); a batch line's call gets its line's charge from the same door;
// 3. a held call: the hold is made and the engine run under it; its whole answer is billed,
//    settled, and delivered once the settlement is in the journal (settle-then-deliver) — or a
//    started stream is handed to the relay, which does the same at the stream's end;
//    a call charged at once (a video job): charged and delivered;
// 4. whatever fails before an answer: the hold is released and the failure mapped to the error
//    catalogue (a rotated key → invalid_api_key, shutdown → its own error).

import type { Span } from '@opentelemetry/api';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UsageRecord } from '../../core/billing/index.ts';
import { ApiError, invalidApiKey } from '../../core/errors.ts';
import { formatNano } from '../../core/money.ts';
import { ClientClosedError } from '../../http/client-closed.ts';
import { dialectOf } from '../../http/dialect.ts';
import { KeyInvalidatedError } from '../auth/key-cache.ts';
import { COST_HEADER } from '../billing/call-cost.ts';
import type { Charge, Quote } from '../billing/charge.ts';
import { rateLimitHeaders, retryAfterMsHeader } from '../billing/rate-headers.ts';
import type { ProxyContext } from '../context.ts';
import type { Cancel } from '../engine/cancel.ts';
import { linkRequestAbort, type RequestAbort } from '../request-abort.ts';
import { failed, type RequestTrace } from '../tracing/tracing.ts';
import type { CallUsage } from '../usage.ts';

export type { Quote } from '../billing/charge.ts';

/** A whole answer's charge and its delivery (which runs once the settlement is journaled). */
export interface Bill {
  cost: number;
  counts: CallUsage;
  deliver(): void;
}

interface MeteredBase {
  kind: UsageRecord['kind'];
  /** The canonical model id. */
  model: string;
  quote: Quote;
  /**
   * The call failed before its answer. True when the failure is answered already (a stream's head
   * was out, so it went in-band, or the client is gone); false to send it as an ordinary error.
   */
  failed?(err: unknown): boolean;
}

/** A call run under a hold, settled from its answer. */
export interface HeldCall<T> extends MeteredBase {
  /** Called once the charge is open, before the hold is sought (a stream's early head). */
  opened?(charge: Charge): void;
  /** Starts the engine call allowed `allowance`; resolves when an answer can be sent. */
  run(allowance: number, cancel: Cancel): Promise<T>;
  /** Throws away a result that will not be sent (closes its engine body). */
  discard?(result: T): void;
  /** A whole answer: its bill. */
  bill?(result: T, charge: Charge): Bill | Promise<Bill>;
  /** A started stream: relayed, and settled by the relay (./relay.ts) before its last bytes. */
  relay?(result: T, charge: Charge, abort: RequestAbort): Promise<void>;
}

/** A call charged at once (a video job): no hold, the charge is the settlement. */
export interface ChargedNowCall extends MeteredBase {
  /** Charges through `charge.chargeNow`; returns what sends the answer. */
  now(charge: Charge): Promise<() => void>;
}

const noop = () => {};

export async function meteredCall<T>(
  ctx: ProxyContext,
  request: FastifyRequest,
  reply: FastifyReply,
  c: HeldCall<T> | ChargedNowCall,
): Promise<FastifyReply> {
  const abort = linkRequestAbort(request, reply);
  request.trace?.call(c.kind, c.model);
  let charge: Charge | undefined;
  let hold: HoldSpan | undefined;
  try {
    const call = {
      principal: request.principal,
      model: c.model,
      kind: c.kind,
      requestId: request.id,
      cancel: abort.cancel,
      trace: request.trace,
    };
    // A batch line's call is covered by its batch's hold and billed by the batch runner (../batches/).
    charge = ctx.billing.open(call, c.quote, request.batchLine ?? null);
    if ('now' in c) {
      const deliver = await c.now(charge);
      abort.dispose();
      deliver();
      return reply;
    }
    c.opened?.(charge);
    if (request.trace !== undefined) hold = new HoldSpan(request.trace);
    const held = hold === undefined ? c.run : hold.run(c.run);
    // A rate-limited key's answer says where its windows stand, from the head on (a stream's too).
    const run: HeldCall<T>['run'] = (allowance, cancel) => {
      const windows = charge?.windows ?? null;
      if (windows !== null) reply.headers(rateLimitHeaders(dialectOf(request), windows));
      return held(allowance, cancel);
    };
    const result = await charge.hold({ run, discard: c.discard ?? noop });
    if (c.relay !== undefined) {
      await c.relay(result, charge, abort);
      return reply;
    }
    const bill = await c.bill!(result, charge);
    // Every non-streamed answer says what it cost: the amount settled below (../billing/call-cost.ts).
    reply.header(COST_HEADER, formatNano(bill.cost));
    charge.settle(bill.cost, bill.counts, () => {
      abort.dispose();
      bill.deliver();
    });
    return reply;
  } catch (err) {
    abort.dispose();
    charge?.release();
    hold?.fail(err);
    if (charge?.rateLimit && !reply.sent) {
      reply.headers(rateLimitHeaders(dialectOf(request), charge.rateLimit.windows));
      reply.headers(retryAfterMsHeader(charge.rateLimit.retryAfterMs));
    }
    const failure = requestFailure(err, abort);
    if (c.failed?.(failure)) return reply;
    throw failure;
  }
}

/** The error to answer with when the call failed before anything was sent. */
function requestFailure(err: unknown, abort: RequestAbort): unknown {
  const reason = abort.cancel.aborted ? abort.cancel.reason : undefined;
  if (reason instanceof KeyInvalidatedError || err instanceof KeyInvalidatedError) return invalidApiKey();
  if (reason instanceof ClientClosedError) return reason; // nobody is listening; logged only
  if (reason instanceof ApiError) return reason; // the proxy ended the call (shutdown)
  return err;
}

/**
 * The credit hold as a span (tracing on only): from seeking the hold to the engine call's start,
 * which is what the hold costs the call (reserving alongside, the call starts at once). A hold
 * refused (429) ends it failed.
 */
class HoldSpan {
  private span: Span | undefined;

  constructor(trace: RequestTrace) {
    this.span = trace.start('credit hold');
  }

  run<T>(run: HeldCall<T>['run']): HeldCall<T>['run'] {
    return (allowance, cancel) => {
      this.span?.setAttribute('modelplane.hold.allowance', allowance);
      this.end();
      return run(allowance, cancel);
    };
  }

  fail(err: unknown): void {
    if (this.span !== undefined) failed(this.span, err);
    this.end();
  }

  private end(): void {
    this.span?.end();
    this.span = undefined;
  }
}
