// Auto top-up (issue 37 item 7) on real Redis, the real console server (two instances, each running
// its checker) and stripe-mock through the official SDK, behind a recorder that counts what was
// asked of Stripe. stripe-mock keeps no state and answers every confirmed PaymentIntent with the
// status of its fixture (`requires_payment_method`, whatever the card: pm_card_chargeDeclined is
// not refused), so a charge here always waits for Stripe's word, and the test plays Stripe by
// delivering signed payment_intent.succeeded / payment_failed events, as Stripe would. The
// balance is spent with Metering.charge, the proxy's own charge. Every money test ends with the
// ledger check.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsoleApp } from '../../console/app.ts';
import type { AutoTopUpView } from '../../console/routes/auto-topup.ts';
import { Metering } from '../../core/billing/index.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import {
  AutoTopUpStore,
  afterConfirm,
  createPayments,
  failureReason,
  nanoToMinorUnits,
} from '../../core/payments/index.ts';
import { accountKeys, globalKeys } from '../../core/redis/keyspace.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { deliverStripeEvent } from '../helpers/stripe-events.ts';
import { startStripeMock, type TestStripeMock } from '../helpers/stripe-mock.ts';
import { type RecordingProxy, recordingProxy } from '../helpers/stripe-recorder.ts';
import { until } from '../helpers/until.ts';
import { type ConsoleHarness, type Person, type Signed, startConsole } from './harness.ts';

const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('hex')}`;
const CHECK_MS = 150;
const MAX_FAILURES = 2;

let stripeMock: TestStripeMock;
let stripeApi: RecordingProxy;
let h: ConsoleHarness;
/** A second console instance on the same Redis: its checker races the first one's. */
let second: FastifyInstance;

beforeAll(async () => {
  stripeMock = await startStripeMock();
  stripeApi = await recordingProxy(stripeMock.url);
  h = await startConsole({
    CONSOLE_PAYMENT_PROVIDERS: 'stripe',
    STRIPE_SECRET_KEY: 'sk_test_modelplane',
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_API_URL: stripeApi.url,
    CONSOLE_AUTO_TOPUP_CHECK_MS: String(CHECK_MS),
    CONSOLE_AUTO_TOPUP_MAX_FAILURES: String(MAX_FAILURES),
  });
  second = await buildConsoleApp({ config: h.config, redis: h.redis, logger: false });
  await second.listen({ host: '127.0.0.1', port: 0 });
}, 120_000);

afterAll(async () => {
  await second?.close();
  await h?.stop();
  await stripeApi?.close();
  await stripeMock?.stop();
});

type View = AutoTopUpView;

const nano = parseDecimalToNano;
const metering = () => new Metering(h.redis);
const store = () => new AutoTopUpStore(h.redis);
const deliver = (type: string, object: object) =>
  deliverStripeEvent(type, object, { origin: h.origin, secret: WEBHOOK_SECRET });
const outcome = async (res: Response) => ((await res.json()) as { outcome?: string }).outcome;

/** The PaymentIntents the console asked Stripe for, for one account. */
const chargesOf = (accountId: string) =>
  stripeApi.sent.filter(
    (x) => x.path === '/v1/payment_intents' && x.form.get('metadata[accountId]') === accountId,
  );

/** Spends `amount` as a delivered call is charged (the proxy's Metering.charge). */
const spend = (accountId: string, amount: string) =>
  metering().charge({
    accountId,
    chargeId: `spend-${randomBytes(6).toString('hex')}`,
    cost: nano(amount),
    usage: { keyId: null, model: 'Org/M', kind: 'video', videoSeconds: 1 },
  });

const balance = async (accountId: string) => (await metering().balance(accountId)).balance;

/** An owner with `seed` credits and a card saved through the setup page and its webhook. */
async function ownerWithCard(name: string, seed: string): Promise<{ owner: Person; s: Signed }> {
  const owner = await h.newOwner(name);
  await metering().topUp({
    accountId: owner.accountId,
    topUpId: `seed-${owner.accountId}`,
    amount: nano(seed),
  });
  const s = await h.session(owner);
  const { url } = await h.json<{ url: string }>(s, 'POST', '/billing/auto-topup/card');
  expect(url).toMatch(/^https:\/\/checkout\.stripe\.com\//);
  const { customerId } = await store().get(owner.accountId);
  expect(customerId).toMatch(/^cus_/);
  const saved = await deliver('setup_intent.succeeded', {
    id: `seti_${randomBytes(8).toString('hex')}`,
    object: 'setup_intent',
    status: 'succeeded',
    customer: customerId,
    payment_method: 'pm_card_visa',
    metadata: { accountId: owner.accountId, purpose: 'auto-topup' },
  });
  expect(await outcome(saved)).toBe('card_saved');
  return { owner, s };
}

/** Stripe's word on an attempt's PaymentIntent, as its webhook carries it. */
function intentEvent(accountId: string, id: string, intentId: string, amount: string, extra: object = {}) {
  return {
    id: intentId,
    object: 'payment_intent',
    amount: nanoToMinorUnits(nano(amount), 'USD'),
    amount_received: nanoToMinorUnits(nano(amount), 'USD'),
    currency: 'usd',
    status: 'succeeded',
    metadata: { accountId, topUpRequestId: id, purpose: 'auto-topup' },
    ...extra,
  };
}

/** Waits for the account's `n`th charge at Stripe and the attempt it belongs to. */
async function attempt(accountId: string, n: number) {
  await until(() => chargesOf(accountId).length >= n, `charge ${n} at Stripe`, 30_000);
  await until(
    async () => (await store().get(accountId)).last?.status === 'awaiting',
    'the attempt awaiting Stripe',
    30_000,
  );
  const last = (await store().get(accountId)).last!;
  return { id: last.id, intentId: last.paymentIntentId! };
}

/** A checker has seen the balance at or above the threshold: the next fall is a new crossing. */
const armed = (accountId: string) =>
  until(
    async () => (await h.redis.hget(accountKeys(accountId).autoTopUp, 'armed')) === '1',
    'the balance seen above the threshold',
    30_000,
  );

/** A checker's log where the test does not read it. */
const log = { info() {}, warn() {}, error() {} };

/** Several check intervals of both instances: long enough for a second charge to have shown. */
const severalChecks = () => new Promise((r) => setTimeout(r, CHECK_MS * 8));

describe('auto top-up: the pure decisions', () => {
  it('credits on a succeeded confirm, waits for the webhook otherwise; a card error is shown in Stripe words', () => {
    expect(afterConfirm('succeeded')).toBe('credit');
    expect(afterConfirm('processing')).toBe('await');
    expect(afterConfirm('requires_payment_method')).toBe('await');
    const declined = new Stripe.errors.StripeCardError({
      message: 'Your card was declined.',
      type: 'card_error',
    });
    expect(failureReason(declined)).toBe('the card was refused: Your card was declined.');
    expect(failureReason(new Error('ECONNREFUSED'))).not.toContain('ECONNREFUSED');
  });
});

describe('auto top-up (stripe-mock, two console instances)', () => {
  it('only an owner saves a card or sets it; it cannot be turned on without a card; bad amounts are 400s', async () => {
    const owner = await h.newOwner('No Card Co');
    const member = await h.newMember(owner.accountId, 'nocard-member');
    const s = await h.session(owner);
    const m = await h.session(member);
    const settings = { enabled: true, threshold: '10', amount: '25', monthlyCap: 3 };
    expect((await h.call(m, 'PUT', '/billing/auto-topup', settings)).status).toBe(403);
    expect((await h.call(m, 'POST', '/billing/auto-topup/card')).status).toBe(403);
    const noCard = await h.call(s, 'PUT', '/billing/auto-topup', settings);
    expect([noCard.status, ((await noCard.json()) as { error: { param: string } }).error.param]).toEqual([
      400,
      'enabled',
    ]);
    for (const bad of [
      { ...settings, enabled: false, threshold: '0' },
      { ...settings, enabled: false, amount: '1' }, // under CONSOLE_TOPUP_MIN (5)
      { ...settings, enabled: false, amount: '25.001' }, // finer than cents
      { ...settings, enabled: false, monthlyCap: 0 },
    ])
      expect((await h.call(s, 'PUT', '/billing/auto-topup', bad)).status).toBe(400);
    const view = await h.json<View>(m, 'GET', '/billing/auto-topup');
    expect(view).toMatchObject({ available: true, enabled: false, card: null, last: null });
  }, 120_000);

  it('a saved card is set up through a Checkout page in setup mode for the account customer', async () => {
    const before = stripeApi.sent.length;
    const { owner, s } = await ownerWithCard('Card Co', '50');
    const sent = stripeApi.sent.slice(before);
    const setup = sent.find((x) => x.path === '/v1/checkout/sessions')!;
    expect(setup.form.get('mode')).toBe('setup');
    expect(setup.form.get('setup_intent_data[metadata][accountId]')).toBe(owner.accountId);
    expect(sent.find((x) => x.path === '/v1/customers')?.idempotencyKey).toBe(`customer-${owner.accountId}`);
    expect((await h.json<View>(s, 'GET', '/billing/auto-topup')).card).toEqual({
      brand: 'visa',
      last4: '4242',
    });
    // An event for a customer that is not the account's changes nothing.
    const other = await deliver('setup_intent.succeeded', {
      id: 'seti_other',
      object: 'setup_intent',
      customer: 'cus_someone_else',
      payment_method: 'pm_other',
      metadata: { accountId: owner.accountId, purpose: 'auto-topup' },
    });
    expect(await outcome(other)).toBe('ignored');
    expect((await store().get(owner.accountId)).card?.paymentMethodId).toBe('pm_card_visa');
  }, 120_000);

  it('BILL-5 a balance crossing the threshold through charges is topped up exactly once, by both checkers and concurrent checks', async () => {
    const { owner, s } = await ownerWithCard('Crossing Co', '12');
    const a = owner.accountId;
    await h.json<View>(s, 'PUT', '/billing/auto-topup', {
      enabled: true,
      threshold: '10',
      amount: '25',
      monthlyCap: 3,
    });
    await severalChecks();
    expect(chargesOf(a)).toHaveLength(0); // 12 is above 10: nothing to do

    await armed(a);
    await spend(a, '3'); // 9: below the threshold
    // Both instances' checkers run, and six more checks from two other checkers at once.
    const extra = [
      createPayments(h.config, h.redis, h.accounts),
      createPayments(h.config, h.redis, h.accounts),
    ];
    await Promise.all([...extra, ...extra, ...extra].map((p) => p.auto!.check(a, log)));
    const { id, intentId } = await attempt(a, 1);
    await severalChecks();
    const charges = chargesOf(a);
    expect(charges).toHaveLength(1);
    const [charge] = charges;
    expect(
      Object.fromEntries(
        ['amount', 'currency', 'off_session', 'confirm', 'payment_method', 'metadata[topUpRequestId]'].map(
          (k) => [k, charge!.form.get(k)],
        ),
      ),
    ).toEqual({
      amount: '2500',
      currency: 'usd',
      off_session: 'true',
      confirm: 'true',
      payment_method: 'pm_card_visa',
      'metadata[topUpRequestId]': id,
    });
    expect(charge!.idempotencyKey).toBe(`autotopup-${id}`);
    expect((charge!.answer as { id: string }).id).toBe(intentId);
    expect(await balance(a)).toBe(nano('9'));

    // Stripe says it succeeded, twice (a redelivery with a new event id): credited once.
    expect(await outcome(await deliver('payment_intent.succeeded', intentEvent(a, id, intentId, '25')))).toBe(
      'credited',
    );
    expect(await outcome(await deliver('payment_intent.succeeded', intentEvent(a, id, intentId, '25')))).toBe(
      'duplicate',
    );
    expect(await balance(a)).toBe(nano('34'));
    const view = await h.json<View>(s, 'GET', '/billing/auto-topup');
    expect(view).toMatchObject({ thisMonth: 1, failures: 0, last: { id, status: 'credited', amount: '25' } });
    const listed = await h.json<{ data: { id: string; status: string; amount: string }[] }>(
      s,
      'GET',
      '/billing/topups',
    );
    expect(listed.data.filter((r) => r.id === id)).toEqual([
      expect.objectContaining({ status: 'credited', amount: '25' }),
    ]);
    await severalChecks();
    expect(chargesOf(a)).toHaveLength(1); // 34 is above: no new crossing
    await expectLedgerClean(h.redis, [a]);
  }, 120_000);

  it('a refused charge is not credited, is shown, is not retried while the balance stays low; repeated failures pause it', async () => {
    const { owner, s } = await ownerWithCard('Declined Co', '11');
    const a = owner.accountId;
    await h.json<View>(s, 'PUT', '/billing/auto-topup', {
      enabled: true,
      threshold: '10',
      amount: '20',
      monthlyCap: 10,
    });
    for (let n = 1; n <= MAX_FAILURES; n++) {
      await armed(a);
      await spend(a, '2');
      const { id, intentId } = await attempt(a, n);
      const failed = intentEvent(a, id, intentId, '20', {
        status: 'requires_payment_method',
        amount_received: 0,
        last_payment_error: { type: 'card_error', code: 'card_declined', message: 'Your card was declined.' },
      });
      expect(await outcome(await deliver('payment_intent.payment_failed', failed))).toBe('failed');
      expect(await outcome(await deliver('payment_intent.payment_failed', failed))).toBe('duplicate');
      const view = await h.json<View>(s, 'GET', '/billing/auto-topup');
      expect(view.last).toMatchObject({
        id,
        status: 'failed',
        reason: 'the card was refused: Your card was declined.',
      });
      expect(view.failures).toBe(n);
      await severalChecks();
      expect(chargesOf(a)).toHaveLength(n); // still below: the crossing was spent, no retry loop
      // Credits from elsewhere lift the balance above the threshold: the next fall is a new crossing.
      await metering().topUp({ accountId: a, topUpId: `lift-${n}`, amount: nano('2') });
    }
    const paused = await h.json<View>(s, 'GET', '/billing/auto-topup');
    expect(paused.paused).toBe(`paused after ${MAX_FAILURES} failed charges in a row`);
    await severalChecks();
    await spend(a, '2');
    await severalChecks();
    expect(chargesOf(a)).toHaveLength(MAX_FAILURES);
    // Nothing was credited by auto top-up: 11 − 2 + 2 − 2 + 2 − 2.
    expect(await balance(a)).toBe(nano('9'));
    // The owner turns it on again: the pause and the count are cleared and the low balance is topped up.
    await h.json<View>(s, 'PUT', '/billing/auto-topup', {
      enabled: true,
      threshold: '10',
      amount: '20',
      monthlyCap: 10,
    });
    expect((await h.json<View>(s, 'GET', '/billing/auto-topup')).paused).toBeNull();
    await attempt(a, MAX_FAILURES + 1);
    await expectLedgerClean(h.redis, [a]);
  }, 120_000);

  it('Stripe unreachable at the charge: the SDK retries with the same idempotency key, then the attempt fails, is shown and is not retried; a late success still credits once', async () => {
    const { owner, s } = await ownerWithCard('Outage Co', '10.5');
    const a = owner.accountId;
    await h.json<View>(s, 'PUT', '/billing/auto-topup', {
      enabled: true,
      threshold: '10',
      amount: '15',
      monthlyCap: 5,
    });
    stripeApi.down = true;
    try {
      await spend(a, '1'); // 9.5
      await until(async () => (await store().get(a)).last?.status === 'failed', 'the failed attempt', 60_000);
    } finally {
      stripeApi.down = false;
    }
    const tries = chargesOf(a);
    const { id } = (await store().get(a)).last!;
    // The SDK's own retries (maxNetworkRetries 2) all carry the crossing's key: one charge at most.
    expect(tries.length).toBeGreaterThan(1);
    expect(new Set(tries.map((t) => t.idempotencyKey))).toEqual(new Set([`autotopup-${id}`]));
    expect(tries.every((t) => t.dropped)).toBe(true);
    const view = await h.json<View>(s, 'GET', '/billing/auto-topup');
    expect(view).toMatchObject({
      failures: 1,
      paused: null,
      thisMonth: 1,
      last: {
        id,
        status: 'failed',
        reason: expect.stringMatching(/^the payment provider could not be reached/),
      },
    });
    const listed = await h.json<{ data: { id: string; status: string }[] }>(s, 'GET', '/billing/topups');
    expect(listed.data.find((r) => r.id === id)?.status).toBe('rejected');
    await severalChecks();
    expect(chargesOf(a)).toHaveLength(tries.length); // still below, Stripe back: no retry loop
    expect(await balance(a)).toBe(nano('9.5'));
    // Had the charge gone through unseen, Stripe's webhook says so later: credited once after all.
    const late = intentEvent(a, id, 'pi_late_after_outage', '15');
    expect(await outcome(await deliver('payment_intent.succeeded', late))).toBe('credited');
    expect(await outcome(await deliver('payment_intent.succeeded', late))).toBe('duplicate');
    expect(await balance(a)).toBe(nano('24.5'));
    expect((await h.json<View>(s, 'GET', '/billing/auto-topup')).last).toMatchObject({
      id,
      status: 'credited',
    });
    await expectLedgerClean(h.redis, [a]);
  }, 120_000);

  it('an attempt whose checker died between the claim and the charge is charged again once it is stale, once, under the same key', async () => {
    const { owner, s } = await ownerWithCard('Crash Co', '12');
    const a = owner.accountId;
    await h.json<View>(s, 'PUT', '/billing/auto-topup', {
      enabled: true,
      threshold: '10',
      amount: '20',
      monthlyCap: 5,
    });
    // Out of the running checkers' list: only this test's checkers look at the account.
    await h.redis.srem(globalKeys.autoTopUpAccounts, a);
    await severalChecks();
    await spend(a, '3'); // 9
    // A checker claims the crossing and dies before Stripe is asked.
    const claimed = await store().claim(a, new Date());
    if (!claimed.claimed) throw new Error(`not claimed: ${claimed.why}`);
    const checkers = [
      createPayments(h.config, h.redis, h.accounts),
      createPayments(h.config, h.redis, h.accounts),
    ];
    expect(await checkers[0]!.auto!.check(a, log)).toBe('waiting'); // not stale yet: not charged again
    expect(chargesOf(a)).toHaveLength(0);
    const later = new Date(Date.now() + 11 * 60_000);
    const outcomes = await Promise.all(checkers.map((c) => c.auto!.check(a, log, later)));
    expect(outcomes.sort()).toEqual(['awaiting', 'waiting']);
    const charges = chargesOf(a);
    expect(charges.map((c) => [c.idempotencyKey, c.form.get('amount')])).toEqual([
      [`autotopup-${claimed.id}`, '2000'],
    ]);
    const { intentId } = await attempt(a, 1);
    expect(
      await outcome(await deliver('payment_intent.succeeded', intentEvent(a, claimed.id, intentId, '20'))),
    ).toBe('credited');
    expect(await balance(a)).toBe(nano('29'));
    // A crash between the credit and its record leaves the attempt charging: the request says it
    // was credited, so the re-drive records that and asks Stripe nothing.
    await h.redis.hset(accountKeys(a).autoTopUp, 'lastStatus', 'charging', 'lastAtMs', 0);
    expect(await checkers[0]!.auto!.check(a, log, later)).toBe('credited');
    expect(chargesOf(a)).toHaveLength(1);
    expect((await store().get(a)).last?.status).toBe('credited');
    expect(await balance(a)).toBe(nano('29'));
    await expectLedgerClean(h.redis, [a]);
  }, 120_000);

  it('the monthly cap is honoured: a crossing past it charges nothing and says so', async () => {
    const { owner, s } = await ownerWithCard('Capped Co', '10');
    const a = owner.accountId;
    await h.json<View>(s, 'PUT', '/billing/auto-topup', {
      enabled: true,
      threshold: '10',
      amount: '5',
      monthlyCap: 1,
    });
    await armed(a);
    await spend(a, '1'); // 9
    const { id, intentId } = await attempt(a, 1);
    expect(await outcome(await deliver('payment_intent.succeeded', intentEvent(a, id, intentId, '5')))).toBe(
      'credited',
    );
    expect(await balance(a)).toBe(nano('14'));
    await armed(a);
    await spend(a, '5'); // 9 again: a second crossing this month
    await until(async () => (await store().get(a)).last?.status === 'capped', 'the capped crossing', 30_000);
    await severalChecks();
    expect(chargesOf(a)).toHaveLength(1);
    const view = await h.json<View>(s, 'GET', '/billing/auto-topup');
    expect(view).toMatchObject({
      thisMonth: 1,
      last: { status: 'capped', reason: 'the monthly cap of 1 auto top-ups was reached' },
    });
    expect(await balance(a)).toBe(nano('9'));
    await expectLedgerClean(h.redis, [a]);
  }, 120_000);
});
