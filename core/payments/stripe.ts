// Top-up by Stripe Checkout. Starting one creates a Checkout Session (payment mode, one line item
// of the request's amount in the account currency) that carries the account and request ids; the
// browser goes to its page. Stripe then tells us, in a webhook whose signature is checked against
// the endpoint's secret, that the session was paid: that credits the request's amount as recorded
// here — never an amount from the browser or the event — exactly once. Twice over: an event id
// already handled is answered at once, and the credit itself is Metering.topUp keyed by the
// request's id, so two different events for one session (completed, then async_payment_succeeded;
// or a re-sent event with a new id) still credit once.

import Stripe from 'stripe';
import type { Metering } from '../billing/index.ts';
import type { ConsoleConfig as Config } from '../config/index.ts';
import { ApiError } from '../errors.ts';
import { formatNano } from '../money.ts';
import type { Redis } from '../redis/client.ts';
import { globalKeys } from '../redis/keyspace.ts';
import type { AutoTopUps } from './auto-topup.ts';
import { creditTopUp } from './credit.ts';
import { nanoToMinorUnits } from './minor-units.ts';
import type { PaymentLog, PaymentProvider, TopUpNext } from './provider.ts';
import type { TopUpRequest, TopUpRequests } from './requests.ts';

/** How long a handled event id is remembered: past Stripe's 3 days of redelivery, as long as top-up ids. */
const EVENT_TTL_MS = 35 * 24 * 3_600_000;

/** What a webhook delivery did (the response body says it; Stripe only needs the 2xx). */
export type WebhookOutcome =
  /** The request's amount was credited now. */
  | 'credited'
  /** This event, or another for the same session, was handled before: nothing credited now. */
  | 'duplicate'
  /** Paid by a method that settles later (a bank debit): credited on async_payment_succeeded. */
  | 'awaiting_payment'
  /** The session expired or its payment failed: the request was closed, nothing credited. */
  | 'closed'
  /** Paid, but not for what the request recorded (amount or currency): logged, nothing credited. */
  | 'mismatch'
  /** Not an event a top-up needs, or a session that is not one of ours. */
  | 'ignored'
  /** Auto top-up: a card was saved for the account (setup_intent.succeeded). */
  | 'card_saved'
  /** Auto top-up: its charge failed; recorded, nothing credited. */
  | 'failed';

/** The Stripe client, pointed at STRIPE_API_URL (stripe-mock) when that is set. */
export function stripeClient(config: Pick<Config, 'STRIPE_SECRET_KEY' | 'STRIPE_API_URL'>): Stripe {
  if (config.STRIPE_SECRET_KEY === undefined) throw new Error('STRIPE_SECRET_KEY is not set');
  const url = config.STRIPE_API_URL === undefined ? undefined : new URL(config.STRIPE_API_URL);
  return new Stripe(config.STRIPE_SECRET_KEY, {
    // Retries of a create carry the same idempotency key (see start), so they never make a second session.
    maxNetworkRetries: 2,
    timeout: 20_000,
    ...(url === undefined
      ? {}
      : {
          host: url.hostname,
          port: url.port || (url.protocol === 'https:' ? 443 : 80),
          protocol: url.protocol === 'https:' ? 'https' : 'http',
        }),
  });
}

export class StripeTopUps implements PaymentProvider {
  readonly name = 'stripe' as const;

  constructor(
    private readonly d: {
      stripe: Stripe;
      redis: Redis;
      webhookSecret: string;
      /** CONSOLE_PUBLIC_URL: Checkout sends the payer back to its /billing page. */
      publicUrl: string;
      requests: TopUpRequests;
      metering: Metering;
      /** Auto top-up's events (its saved cards and off-session charges) go to it. */
      auto?: AutoTopUps;
    },
  ) {}

  async start(request: TopUpRequest): Promise<TopUpNext> {
    const ids = { accountId: request.accountId, topUpRequestId: request.id };
    const back = `${this.d.publicUrl}/billing?topup=${encodeURIComponent(request.id)}`;
    let session: Stripe.Checkout.Session;
    try {
      session = await this.d.stripe.checkout.sessions.create(
        {
          mode: 'payment',
          line_items: [
            {
              quantity: 1,
              price_data: {
                currency: request.currency.toLowerCase(),
                unit_amount: nanoToMinorUnits(request.amount, request.currency),
                product_data: { name: `Credits: ${formatNano(request.amount)} ${request.currency}` },
              },
            },
          ],
          client_reference_id: request.id,
          metadata: ids,
          payment_intent_data: { metadata: ids },
          success_url: `${back}&checkout=success`,
          cancel_url: `${back}&checkout=cancel`,
        },
        { idempotencyKey: `topup-${request.id}` },
      );
    } catch (err) {
      await this.d.requests.move(request.accountId, request.id, ['pending'], 'rejected', {
        decidedAt: new Date().toISOString(),
        decidedBy: 'stripe',
        reason: 'the checkout could not be created',
      });
      // Stripe refusing the parameters (an amount under its minimum for the currency) is the
      // payer's to fix, and its message says how; anything else is ours and is not shown.
      if (err instanceof Stripe.errors.StripeInvalidRequestError)
        throw new ApiError('invalid_request', `Stripe refused the top-up: ${err.message}`, {
          param: 'amount',
          cause: err,
        });
      throw new ApiError('server_error', 'The payment provider could not start the checkout. Try again.', {
        cause: err,
      });
    }
    await this.d.requests.setCheckoutSession(request.accountId, request.id, session.id);
    if (!session.url)
      throw new ApiError('server_error', 'Stripe returned a checkout session without a page.');
    return { provider: 'stripe', url: session.url };
  }

  /**
   * One webhook delivery: `rawBody` exactly as received (the signature covers the bytes). A bad or
   * missing signature is a 400 and changes nothing; a failure while crediting is thrown (a 500),
   * so Stripe delivers the event again and the retry completes it.
   */
  async handleWebhook(
    rawBody: Buffer,
    signature: string | undefined,
    log: PaymentLog,
  ): Promise<WebhookOutcome> {
    let event: Stripe.Event;
    try {
      event = this.d.stripe.webhooks.constructEvent(rawBody, signature ?? '', this.d.webhookSecret);
    } catch (err) {
      throw new ApiError(
        'invalid_request',
        `The Stripe-Signature header does not verify: ${(err as Error).message}`,
        { param: 'stripe-signature', cause: err },
      );
    }
    const seen = globalKeys.stripeEvent(event.id);
    if ((await this.d.redis.get(seen)) !== null) return 'duplicate';
    const outcome = await this.apply(event, log);
    // Remembered only once handled: an event whose handling failed is handled again when resent.
    await this.d.redis.set(seen, outcome, 'PX', EVENT_TTL_MS);
    return outcome;
  }

  private async apply(event: Stripe.Event, log: PaymentLog): Promise<WebhookOutcome> {
    switch (event.type) {
      case 'checkout.session.completed':
        return event.data.object.payment_status === 'paid'
          ? this.credit(event.data.object, event.id, log)
          : 'awaiting_payment';
      case 'checkout.session.async_payment_succeeded':
        return this.credit(event.data.object, event.id, log);
      case 'checkout.session.expired':
        return this.close(event.data.object, 'the checkout expired unpaid');
      case 'checkout.session.async_payment_failed':
        return this.close(event.data.object, 'the payment failed');
      default:
        return (await this.d.auto?.handleEvent(event, log)) ?? 'ignored';
    }
  }

  /** The request a session pays for: ours carry both ids (other products may share the Stripe account). */
  private async requestOf(session: Stripe.Checkout.Session, log: PaymentLog): Promise<TopUpRequest | null> {
    const accountId = session.metadata?.accountId;
    const requestId = session.metadata?.topUpRequestId;
    if (!accountId || !requestId) return null;
    const request = await this.d.requests.get(accountId, requestId);
    if (request === null || request.provider !== 'stripe') {
      log.warn({ session: session.id, requestId }, 'stripe: a paid session names no Stripe top-up request');
      return null;
    }
    // The session is recorded when it is created; one that differs is not the one we created.
    if (request.checkoutSessionId !== null && request.checkoutSessionId !== session.id) {
      log.warn(
        { session: session.id, requestId, recorded: request.checkoutSessionId },
        'stripe: the session is not the one recorded for its top-up request',
      );
      return null;
    }
    return request;
  }

  private async credit(
    session: Stripe.Checkout.Session,
    eventId: string,
    log: PaymentLog,
  ): Promise<WebhookOutcome> {
    const request = await this.requestOf(session, log);
    if (request === null) return 'ignored';
    if (request.status === 'credited') return 'duplicate';
    const expected = nanoToMinorUnits(request.amount, request.currency);
    if (session.currency?.toUpperCase() !== request.currency || session.amount_total !== expected) {
      log.error(
        {
          session: session.id,
          requestId: request.id,
          paid: `${session.amount_total} ${session.currency}`,
          expected: `${expected} ${request.currency.toLowerCase()}`,
        },
        'stripe: a paid session does not match its top-up request; nothing was credited (credit by hand if right)',
      );
      return 'mismatch';
    }
    // A session that completed is paid whatever became of the request meanwhile (a provider error
    // closed it while Stripe had in fact made the session): the money arrived, so it is credited.
    const moved = await this.d.requests.move(
      request.accountId,
      request.id,
      ['pending', 'rejected', 'approved'],
      'approved',
      { decidedAt: new Date().toISOString(), decidedBy: 'stripe' },
    );
    const approved = moved.request ?? request;
    if (approved.status === 'credited') return 'duplicate';
    const r = await creditTopUp(
      this.d,
      approved,
      `stripe: checkout session ${session.id} (event ${eventId})`,
    );
    return r.duplicate ? 'duplicate' : 'credited';
  }

  private async close(session: Stripe.Checkout.Session, reason: string): Promise<WebhookOutcome> {
    const accountId = session.metadata?.accountId;
    const requestId = session.metadata?.topUpRequestId;
    if (!accountId || !requestId) return 'ignored';
    const moved = await this.d.requests.move(accountId, requestId, ['pending'], 'rejected', {
      decidedAt: new Date().toISOString(),
      decidedBy: 'stripe',
      reason,
    });
    return moved.moved ? 'closed' : 'ignored';
  }
}
