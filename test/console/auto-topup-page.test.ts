// Auto top-up on the Billing page (issue 37 item 7) in Debian's Chromium through playwright-core, at
// 1440×900 and 390×844: an owner saves a card (Stripe's page, played by the test: no internet
// here; its setup_intent.succeeded webhook signed as Stripe signs it), turns auto top-up on, sees
// a crossing charged through stripe-mock and credited, then a refused charge said on the page.
// Real Redis, the real console server with its checker, stripe-mock; ends with the ledger check.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metering } from '../../core/billing/index.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import { AutoTopUpStore } from '../../core/payments/index.ts';
import { accountKeys } from '../../core/redis/keyspace.ts';
import { DESKTOP, launchChromium, PHONE, shoot } from '../helpers/browser.ts';
import { ensureConsoleWeb } from '../helpers/console-web.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { deliverStripeEvent } from '../helpers/stripe-events.ts';
import { startStripeMock, type TestStripeMock } from '../helpers/stripe-mock.ts';
import { type ConsoleHarness, PASSWORD, startConsole } from './harness.ts';

const out = new URL('../out/', import.meta.url).pathname;
const POLL = { timeout: 30_000 };
const WEBHOOK_SECRET = `whsec_${randomBytes(24).toString('hex')}`;

let h: ConsoleHarness;
let stripeMock: TestStripeMock;
let browser: Browser;

beforeAll(async () => {
  await ensureConsoleWeb();
  stripeMock = await startStripeMock();
  h = await startConsole({
    CONSOLE_PAYMENT_PROVIDERS: 'stripe',
    STRIPE_SECRET_KEY: 'sk_test_modelplane',
    STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_API_URL: stripeMock.url,
    CONSOLE_AUTO_TOPUP_CHECK_MS: '200',
  });
  browser = await launchChromium();
  mkdirSync(out, { recursive: true });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await h?.stop();
  await stripeMock?.stop();
});

const deliver = (type: string, object: object) =>
  deliverStripeEvent(type, object, { origin: h.origin, secret: WEBHOOK_SECRET });

/** Spends `amount` as a delivered call is charged (the proxy's Metering.charge). */
const spend = (accountId: string, chargeId: string, amount: string) =>
  new Metering(h.redis).charge({
    accountId,
    chargeId,
    cost: parseDecimalToNano(amount),
    usage: { keyId: null, model: 'Org/M', kind: 'video', videoSeconds: 1 },
  });

/** Stripe's word on the account's last attempt, once the checker has charged for it. */
async function lastAttempt(accountId: string) {
  const store = new AutoTopUpStore(h.redis);
  await expect.poll(async () => (await store.get(accountId)).last?.status, POLL).toBe('awaiting');
  const last = (await store.get(accountId)).last!;
  return {
    id: last.paymentIntentId!,
    object: 'payment_intent',
    currency: 'usd',
    metadata: { accountId, topUpRequestId: last.id, purpose: 'auto-topup' },
  };
}

describe('auto top-up on Billing', () => {
  it('an owner saves a card, turns it on; a crossing is credited and a refused charge is said, at desktop and phone width', async () => {
    const owner = await h.newOwner('Auto Page Co');
    const member = await h.newMember(owner.accountId, 'auto-page-member');
    const a = owner.accountId;
    const m = new Metering(h.redis);
    await m.topUp({ accountId: a, topUpId: 'auto-page-seed', amount: parseDecimalToNano('12') });
    const context = await browser.newContext({ viewport: DESKTOP });
    // Stripe's own page: the test plays it (no internet here).
    await context.route('https://checkout.stripe.com/**', (route) =>
      route.fulfill({ contentType: 'text/html', body: '<title>Checkout</title><h1>Stripe Checkout</h1>' }),
    );
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const signIn = async (email: string) => {
      await page.goto(`${h.origin}/billing`);
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Auto top-up' }).waitFor(POLL);
    };
    await signIn(owner.email);
    const state = page.getByTestId('auto-state');
    await expect.poll(() => state.textContent(), POLL).toBe('Off.');
    expect(await page.getByTestId('auto-card').textContent()).toMatch(/^No card saved\./);
    expect(await page.getByRole('button', { name: 'Turn on' }).isDisabled()).toBe(true);

    await page.getByRole('button', { name: 'Save a card' }).click();
    await page.waitForURL(/checkout\.stripe\.com/);
    const { customerId } = await new AutoTopUpStore(h.redis).get(a);
    const saved = await deliver('setup_intent.succeeded', {
      id: 'seti_page',
      object: 'setup_intent',
      customer: customerId,
      payment_method: 'pm_card_visa',
      metadata: { accountId: a, purpose: 'auto-topup' },
    });
    expect(saved.status).toBe(200);
    await page.goto(`${h.origin}/billing?card=saved`);
    await expect
      .poll(() => page.getByTestId('auto-card').textContent(), POLL)
      .toMatch(/^Card: visa ending 4242/);

    // A bad amount is said inline; then it is turned on.
    await page.getByLabel(/^Below/).fill('10');
    await page.getByLabel(/^Top up \(USD\)/).fill('1');
    await page.getByLabel('At most per month').fill('2');
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByText(/a top-up is from 5 to 10000 USD/).waitFor(POLL);
    await page.getByLabel(/^Top up \(USD\)/).fill('25');
    await page.getByRole('button', { name: 'Turn on' }).click();
    await expect
      .poll(() => state.textContent(), POLL)
      .toBe(
        'On: when the balance falls below 10.00 USD, the card is charged 25.00 USD (at most 2 a month; 0 this month).',
      );

    // Spent below the threshold: the checker charges the card; Stripe confirms; credited once.
    await spend(a, 'auto-page-spend', '3');
    const intent = await lastAttempt(a);
    const paid = { ...intent, status: 'succeeded', amount: 2500, amount_received: 2500 };
    expect((await deliver('payment_intent.succeeded', paid)).status).toBe(200);
    await page.reload();
    await expect.poll(() => page.getByTestId('balance').textContent(), POLL).toBe('34.00 USD');
    await expect
      .poll(() => page.getByTestId('auto-last').textContent(), POLL)
      .toMatch(/: 25\.00 USD, credited\.$/);
    await shoot(page, `${out}billing-auto-topup`);

    // At phone width, a second crossing whose card is refused: said on the page, nothing credited.
    await page.setViewportSize(PHONE);
    // Once a check has seen the balance above the threshold again, the next fall is a new crossing.
    await expect.poll(() => h.redis.hget(accountKeys(a).autoTopUp, 'armed'), POLL).toBe('1');
    await spend(a, 'auto-page-spend-2', '30');
    const refused = await lastAttempt(a);
    const failed = {
      ...refused,
      status: 'requires_payment_method',
      amount: 2500,
      amount_received: 0,
      last_payment_error: { type: 'card_error', code: 'card_declined', message: 'Your card was declined.' },
    };
    expect((await deliver('payment_intent.payment_failed', failed)).status).toBe(200);
    await page.reload();
    await expect
      .poll(() => page.getByTestId('auto-last').textContent(), POLL)
      .toMatch(/: 25\.00 USD, failed \(the card was refused: Your card was declined\.\)\.$/);
    await expect.poll(() => page.getByTestId('balance').textContent(), POLL).toBe('4.00 USD');
    for (const field of [/^Below/, /^Top up \(USD\)/, 'At most per month'] as const) {
      const box = (await page.getByLabel(field).boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
    }
    await shoot(page, `${out}billing-auto-topup-failed`);

    // Turned off by the owner; a member sees it without the form.
    await page.getByRole('button', { name: 'Turn off' }).click();
    await expect.poll(() => state.textContent(), POLL).toBe('Off.');
    await context.clearCookies();
    await signIn(member.email);
    await expect.poll(() => page.getByTestId('auto-card').textContent(), POLL).toBe('Card: visa ending 4242');
    expect(await page.getByRole('button', { name: 'Turn on' }).count()).toBe(0);
    expect(errors).toEqual([]);
    await context.close();
    await expectLedgerClean(h.redis, [a]);
  }, 180_000);
});
