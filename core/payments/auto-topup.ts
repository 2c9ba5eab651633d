// Auto top-up (issue 37 item 7): an owner saves a card (a Stripe Checkout page in setup mode; its
// setup_intent.succeeded webhook records the card), and when the balance falls below their
// threshold the saved card is charged their amount, off session, and credited. The crossing is
// claimed once in Redis (auto-topup-store.ts); its attempt id is the top-up request's id, the
// Stripe idempotency key is derived from it, and the credit is Metering.topUp keyed by it — so one
// crossing is one charge and one credit however many checkers and webhook deliveries there are.
// Stripe is called only from the console's checker, never on the proxy's request path.
import Stripe from 'stripe';
import type { Accounts } from '../accounts/accounts.ts';
import type { Metering } from '../billing/index.ts';
import { formatNano } from '../money.ts';
import { type Attempt, type AutoTopUpStore, attemptPrefix } from './auto-topup-store.ts';
import { creditTopUp } from './credit.ts';
import { nanoToMinorUnits } from './minor-units.ts';
import type { PaymentLog } from './provider.ts';
import type { TopUpRequests } from './requests.ts';

/** Marks the Checkout setup sessions and payment intents that are auto top-up's. */
const PURPOSE = 'auto-topup';

export type AutoEventOutcome = 'credited' | 'duplicate' | 'card_saved' | 'failed' | 'ignored';

/** What a charge's answer means: credit now, or wait for Stripe's webhook to say. Pure. */
export const afterConfirm = (status: Stripe.PaymentIntent.Status): 'credit' | 'await' =>
  // Off session with confirm=true, a card either succeeds at once or is refused with an error
  // (card_declined, authentication_required); `processing` (a debit that settles later) and any
  // other status are left to the payment_intent.succeeded / payment_failed webhooks.
  status === 'succeeded' ? 'credit' : 'await';

/** What the owner is told when a charge fails: Stripe's own words for a card, ours otherwise. */
export const failureReason = (err: unknown): string =>
  err instanceof Stripe.errors.StripeCardError
    ? `the card was refused: ${err.message}`
    : 'the payment provider could not be reached; nothing was charged by us (the next crossing tries again)';

export interface AutoTopUpDeps {
  stripe: Stripe;
  store: AutoTopUpStore;
  requests: TopUpRequests;
  metering: Metering;
  accounts: Accounts;
  /** CONSOLE_PUBLIC_URL: the card page sends the owner back to /billing. */
  publicUrl: string;
  /** CONSOLE_AUTO_TOPUP_MAX_FAILURES */
  maxFailures: number;
  /**
   * An attempt still `charging` this long after its claim lost its checker (a crash between the
   * claim and Stripe's answer) and is charged again under the same idempotency key, so Stripe
   * answers with the first charge if there was one. Far above the SDK's own retries (3 × 20 s).
   */
  staleChargingMs?: number;
}

const STALE_CHARGING_MS = 10 * 60_000;

export class AutoTopUps {
  constructor(private readonly d: AutoTopUpDeps) {}

  /** A Checkout page (setup mode) where the owner saves a card for auto top-up. */
  async startCardSetup(accountId: string, currency: string): Promise<string> {
    const state = await this.d.store.get(accountId);
    let customerId = state.customerId;
    if (customerId === null) {
      // One customer per account even if two owners start at once: the same idempotency key.
      const customer = await this.d.stripe.customers.create(
        { metadata: { accountId } },
        { idempotencyKey: `customer-${accountId}` },
      );
      customerId = customer.id;
      await this.d.store.setCustomer(accountId, customerId);
    }
    const back = `${this.d.publicUrl}/billing?card=`;
    const session = await this.d.stripe.checkout.sessions.create({
      mode: 'setup',
      customer: customerId,
      // Setup mode asks the currency the card will be charged in (it picks the methods offered).
      currency: currency.toLowerCase(),
      setup_intent_data: { metadata: { accountId, purpose: PURPOSE } },
      success_url: `${back}saved`,
      cancel_url: `${back}cancel`,
    });
    if (!session.url) throw new Error('Stripe returned a setup session without a page');
    return session.url;
  }

  /** Every account with auto top-up on, each checked once (errors are logged, the rest go on). */
  async checkAll(log: PaymentLog, now = () => new Date()): Promise<void> {
    for (const accountId of await this.d.store.accounts()) {
      try {
        await this.check(accountId, log, now());
      } catch (err) {
        log.error({ accountId, err }, 'auto top-up: the check failed');
      }
    }
  }

  /** One account: a lost attempt charged again, or a new crossing claimed and charged. */
  async check(accountId: string, log: PaymentLog, now = new Date()): Promise<string> {
    const lost = await this.d.store.redrive(accountId, now, this.d.staleChargingMs ?? STALE_CHARGING_MS);
    if (lost !== null) {
      log.warn({ accountId, id: lost.id }, 'auto top-up: an attempt lost its checker; charging it again');
      return this.charge(accountId, lost, log);
    }
    const claim = await this.d.store.claim(accountId, now);
    if (!claim.claimed) {
      if (claim.why === 'capped') log.warn({ accountId }, 'auto top-up: monthly cap reached, not charged');
      return claim.why;
    }
    return this.charge(accountId, claim, log);
  }

  /** Charges the card for one attempt, under the attempt's id: its request, key and credit. */
  private async charge(accountId: string, attempt: Attempt, log: PaymentLog): Promise<string> {
    const account = await this.d.accounts.get(accountId);
    if (!account?.currency) {
      await this.fail(accountId, attempt.id, 'the account has no billing currency', log);
      return 'failed';
    }
    const request =
      (await this.d.requests.get(accountId, attempt.id)) ??
      (await this.d.requests.create({
        id: attempt.id,
        accountId,
        amount: attempt.amount,
        currency: account.currency,
        provider: 'stripe',
        createdBy: null,
      }));
    // A re-driven attempt whose request was decided (its record cut short by a crash): recorded
    // now, never charged again.
    if (request.status === 'credited' || request.status === 'rejected') {
      const status = request.status === 'credited' ? 'credited' : 'failed';
      await this.d.store.finish(
        accountId,
        attempt.id,
        { status, reason: request.reason ?? '' },
        this.d.maxFailures,
      );
      return status;
    }
    // Charged as recorded on the request (a re-driven attempt finds the one made the first time).
    let intent: Stripe.PaymentIntent;
    try {
      intent = await this.d.stripe.paymentIntents.create(
        {
          amount: nanoToMinorUnits(request.amount, request.currency),
          currency: request.currency.toLowerCase(),
          customer: attempt.customerId,
          payment_method: attempt.paymentMethodId,
          off_session: true,
          confirm: true,
          description: `Auto top-up: ${formatNano(request.amount)} ${request.currency}`,
          metadata: { accountId, topUpRequestId: request.id, purpose: PURPOSE },
        },
        // Retries of this create (the SDK's, on a lost answer) make no second charge.
        { idempotencyKey: `autotopup-${request.id}` },
      );
    } catch (err) {
      log.warn({ accountId, id: request.id, err }, 'auto top-up: the charge failed');
      await this.fail(accountId, request.id, failureReason(err), log);
      return 'failed';
    }
    await this.d.requests.setPaymentIntent(accountId, request.id, intent.id);
    if (afterConfirm(intent.status) === 'credit') {
      await this.credit(accountId, request.id, intent.id, `stripe: auto top-up, payment intent ${intent.id}`);
      return 'credited';
    }
    await this.d.store.finish(
      accountId,
      request.id,
      {
        status: 'awaiting',
        reason: `waiting for Stripe to confirm (${intent.status})`,
        paymentIntentId: intent.id,
      },
      this.d.maxFailures,
    );
    return 'awaiting';
  }

  /** A Stripe event for auto top-up; null when the event is not one of its own. */
  async handleEvent(event: Stripe.Event, log: PaymentLog): Promise<AutoEventOutcome | null> {
    switch (event.type) {
      case 'setup_intent.succeeded':
        return event.data.object.metadata?.purpose === PURPOSE ? this.saveCard(event.data.object, log) : null;
      case 'payment_intent.succeeded':
      case 'payment_intent.payment_failed': {
        const intent = event.data.object;
        if (intent.metadata?.purpose !== PURPOSE) return null;
        const accountId = intent.metadata.accountId ?? '';
        const id = intent.metadata.topUpRequestId ?? '';
        const request =
          accountId && id.startsWith(attemptPrefix(accountId))
            ? await this.d.requests.get(accountId, id)
            : null;
        if (request === null) {
          log.warn({ intent: intent.id }, 'stripe: an auto top-up payment names no auto top-up');
          return 'ignored';
        }
        if (event.type === 'payment_intent.payment_failed') {
          const why = intent.last_payment_error?.message ?? 'the payment failed';
          return (await this.fail(accountId, id, `the card was refused: ${why}`, log))
            ? 'failed'
            : 'duplicate';
        }
        const expected = nanoToMinorUnits(request.amount, request.currency);
        if (intent.currency?.toUpperCase() !== request.currency || intent.amount_received !== expected) {
          log.error(
            { intent: intent.id, id, paid: `${intent.amount_received} ${intent.currency}`, expected },
            'stripe: an auto top-up payment does not match its request; nothing was credited (credit by hand if right)',
          );
          return 'ignored';
        }
        return this.credit(
          accountId,
          id,
          intent.id,
          `stripe: auto top-up, payment intent ${intent.id} (event ${event.id})`,
        );
      }
      default:
        return null;
    }
  }

  private async saveCard(setup: Stripe.SetupIntent, log: PaymentLog): Promise<AutoEventOutcome> {
    const accountId = setup.metadata?.accountId ?? '';
    const state = await this.d.store.get(accountId);
    const customer = typeof setup.customer === 'string' ? setup.customer : setup.customer?.id;
    const pm = typeof setup.payment_method === 'string' ? setup.payment_method : setup.payment_method?.id;
    // The customer is the one made for this account: an event naming another is not ours to apply.
    if (!accountId || state.customerId === null || customer !== state.customerId || !pm) {
      log.warn({ setup: setup.id }, 'stripe: a card setup names no account customer of ours');
      return 'ignored';
    }
    const method = await this.d.stripe.paymentMethods.retrieve(pm);
    await this.d.store.setCard(accountId, {
      paymentMethodId: pm,
      brand: method.card?.brand ?? method.type,
      last4: method.card?.last4 ?? '',
    });
    return 'card_saved';
  }

  /** Credits the attempt's request once (a late success after a failure still credits: the money came). */
  private async credit(
    accountId: string,
    id: string,
    intentId: string,
    note: string,
  ): Promise<AutoEventOutcome> {
    const moved = await this.d.requests.move(accountId, id, ['pending', 'rejected', 'approved'], 'approved', {
      decidedAt: new Date().toISOString(),
      decidedBy: 'stripe',
    });
    const request = moved.request;
    if (request === null) return 'duplicate';
    const r = request.status === 'credited' ? { duplicate: true } : await creditTopUp(this.d, request, note);
    // Recorded even for a duplicate: a credit whose record was cut short (a crash) is finished here.
    await this.d.store.finish(
      accountId,
      id,
      { status: 'credited', paymentIntentId: intentId },
      this.d.maxFailures,
    );
    return r.duplicate ? 'duplicate' : 'credited';
  }

  /** Closes the attempt's request and counts the failure once; false when already closed. */
  private async fail(accountId: string, id: string, reason: string, log: PaymentLog): Promise<boolean> {
    const moved = await this.d.requests.move(accountId, id, ['pending'], 'rejected', {
      decidedAt: new Date().toISOString(),
      decidedBy: 'stripe',
      reason,
    });
    const counted = await this.d.store.finish(
      accountId,
      id,
      { status: 'failed', reason },
      this.d.maxFailures,
    );
    if (counted) log.warn({ accountId, id, reason }, 'auto top-up: not credited');
    return moved.moved || counted;
  }
}
