// Stripe webhook deliveries as Stripe makes them, for tests of the console's /webhooks/stripe (the
// API tests and the browser test): the event's JSON bytes, signed with the endpoint secret by the
// official SDK's own signer. stripe-mock sends no webhooks, so the test plays Stripe's part here.
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { nanoToMinorUnits, type TopUpRequest } from '../../core/payments/index.ts';

const signer = new Stripe('sk_test_signer');

/** The Checkout Session Stripe sends in events once the request's checkout is paid. */
export function paidSession(
  r: Pick<TopUpRequest, 'id' | 'accountId' | 'amount' | 'currency' | 'checkoutSessionId'>,
  extra: Record<string, unknown> = {},
) {
  return {
    id: r.checkoutSessionId,
    object: 'checkout.session',
    mode: 'payment',
    status: 'complete',
    payment_status: 'paid',
    amount_total: nanoToMinorUnits(r.amount, r.currency),
    currency: r.currency.toLowerCase(),
    client_reference_id: r.id,
    metadata: { accountId: r.accountId, topUpRequestId: r.id },
    livemode: false,
    ...extra,
  };
}

export interface Delivery {
  /** The console's origin (its /webhooks/stripe is posted to). */
  origin: string;
  /** The endpoint's signing secret (STRIPE_WEBHOOK_SECRET), or another to forge a signature. */
  secret: string;
  /** The event id; a redelivery reuses it. Default: a new one. */
  id?: string;
  /** Signing time in seconds (default now); Stripe's SDK refuses one more than 5 minutes off. */
  timestamp?: number;
  /** Changes the bytes after signing (a tampered body). */
  tamper?: (payload: string) => string;
}

/** POSTs one signed event of `type` about `object` to the console, as Stripe delivers it. */
export function deliverStripeEvent(type: string, object: object, o: Delivery): Promise<Response> {
  const payload = JSON.stringify({
    id: o.id ?? `evt_${randomBytes(12).toString('hex')}`,
    object: 'event',
    api_version: Stripe.API_VERSION,
    created: Math.floor(Date.now() / 1000),
    type,
    data: { object },
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
  });
  const signature = signer.webhooks.generateTestHeaderString({
    payload,
    secret: o.secret,
    ...(o.timestamp === undefined ? {} : { timestamp: o.timestamp }),
  });
  return fetch(`${o.origin}/webhooks/stripe`, {
    method: 'POST',
    headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature },
    body: o.tamper ? o.tamper(payload) : payload,
  });
}
