// The low-balance alert (issue 37 item 7): owners set it on Billing, every page warns while the
// available credit is below it. The API through the console server (real Redis), then the pages in
// Debian's Chromium through playwright-core at 1440×900 and 390×844.
import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isBelow } from '../../console/routes/balance-alert.ts';
import { Metering } from '../../core/billing/index.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import { DESKTOP, launchChromium, PHONE, shoot } from '../helpers/browser.ts';
import { ensureConsoleWeb } from '../helpers/console-web.ts';
import { type ConsoleHarness, PASSWORD, startConsole } from './harness.ts';

const out = new URL('../out/', import.meta.url).pathname;
const POLL = { timeout: 15_000 };

let h: ConsoleHarness;
let browser: Browser;

beforeAll(async () => {
  await ensureConsoleWeb();
  h = await startConsole();
  browser = await launchChromium();
  mkdirSync(out, { recursive: true });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await h?.stop();
});

const credit = (accountId: string, amount: string, id: string) =>
  new Metering(h.redis).topUp({ accountId, topUpId: id, amount: parseDecimalToNano(amount), note: 'test' });

describe('the low-balance alert', () => {
  it('warns only below the alert, never without one', () => {
    expect(isBelow(5, 10)).toBe(true);
    expect(isBelow(10, 10)).toBe(false);
    expect(isBelow(0, null)).toBe(false);
  });

  it('an owner sets and removes it; a member reads it but cannot set it; a bad amount is a 400', async () => {
    const owner = await h.newOwner('Alert Co');
    const member = await h.newMember(owner.accountId, 'alert-member');
    await credit(owner.accountId, '12.5', 'alert-seed');
    const s = await h.session(owner);
    type View = { threshold: string | null; available: string; below: boolean; currency: string | null };
    expect(await h.json<View>(s, 'GET', '/billing/alert')).toEqual({
      currency: 'USD',
      threshold: null,
      available: '12.5',
      below: false,
    });
    expect(await h.json<View>(s, 'PUT', '/billing/alert', { threshold: '20' })).toMatchObject({
      threshold: '20',
      below: true,
    });
    expect(await h.json<View>(s, 'PUT', '/billing/alert', { threshold: '12.5' })).toMatchObject({
      below: false,
    });
    for (const bad of ['-1', '0', 'ten', '1.0000000001']) {
      const res = await h.call(s, 'PUT', '/billing/alert', { threshold: bad });
      expect([bad, res.status]).toEqual([bad, 400]);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe('threshold');
    }
    const m = await h.session(member);
    expect((await h.json<View>(m, 'GET', '/billing/alert')).threshold).toBe('12.5');
    expect((await h.call(m, 'PUT', '/billing/alert', { threshold: '1' })).status).toBe(403);
    expect((await h.call(s, 'PUT', '/billing/alert', { threshold: '5' }, false)).status).toBe(403); // no CSRF
    expect((await h.json<View>(s, 'PUT', '/billing/alert', { threshold: null })).threshold).toBeNull();
  });

  it('set on Billing, every page warns while available credit is below it, at desktop and phone width; removing it ends the warning', async () => {
    const owner = await h.newOwner('Banner Co');
    await credit(owner.accountId, '3', 'banner-seed');
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${h.origin}/billing`);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Low-balance alert' }).waitFor(POLL);
    // Read first (until then the form is not there: a value typed would be overwritten by the read).
    await expect.poll(() => page.getByTestId('alert-now').textContent(), POLL).toBe('No alert is set.');
    expect(await page.getByTestId('low-balance').count()).toBe(0);

    await page.getByLabel(/Warn below/).fill('10');
    await page.getByLabel(/Warn below/).press('Enter');
    const banner = page.getByTestId('low-balance');
    await expect.poll(() => banner.textContent(), POLL).toMatch(/3\.00 USD, below the alert of 10\.00 USD/);
    await shoot(page, `${out}billing-low-balance`);

    // Every page: the banner comes with the layout, and links to Billing.
    await page.getByRole('link', { name: 'Pricing' }).click();
    await page.getByRole('heading', { name: 'Pricing', level: 1 }).waitFor(POLL);
    await banner.waitFor(POLL);
    await page.setViewportSize(PHONE);
    await page.goto(`${h.origin}/profile`);
    await banner.waitFor(POLL);
    const box = (await banner.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
    await page.setViewportSize(DESKTOP);

    // Credit above the alert: the warning goes at the next read (a page opened).
    await credit(owner.accountId, '8', 'banner-more');
    await page.goto(`${h.origin}/billing`);
    await page.getByRole('heading', { name: 'Low-balance alert' }).waitFor(POLL);
    await page.waitForTimeout(500);
    expect(await banner.count()).toBe(0);
    await page.getByLabel(/Warn below/).fill('50');
    await page.getByRole('button', { name: 'Save alert' }).click();
    await banner.waitFor(POLL);
    await page.getByRole('button', { name: 'Remove alert' }).click();
    await expect.poll(() => banner.count(), POLL).toBe(0);
    expect(await page.getByTestId('alert-now').textContent()).toBe('No alert is set.');

    // A bad amount is said inline, nothing changes.
    await page.getByLabel(/Warn below/).fill('ten');
    await page.getByRole('button', { name: 'Save alert' }).click();
    await page.getByText('The alert is an amount such as 10 or 12.50.').waitFor(POLL);
    expect(errors).toEqual([]);
    await context.close();
  }, 120_000);
});

describe('the account budget on Billing (issue 34)', () => {
  it("an owner sets a daily budget across the account's keys and sees the day's spend; a call past it is refused; a member sees it without the form; removing it lifts it", async () => {
    const owner = await h.newOwner('Budget Co');
    const member = await h.newMember(owner.accountId, 'budget-member');
    await credit(owner.accountId, '20', 'budget-seed');
    const context = await browser.newContext({ viewport: DESKTOP });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const signIn = async (p: typeof page, email: string) => {
      await p.goto(`${h.origin}/billing`);
      await p.getByLabel('Email').fill(email);
      await p.getByLabel('Password').fill(PASSWORD);
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.getByRole('heading', { name: 'Account budget' }).waitFor(POLL);
    };
    await signIn(page, owner.email);
    const now = page.getByTestId('account-budget');
    await expect
      .poll(() => now.textContent(), POLL)
      .toBe("No budget across the account's keys: 0.00 USD spent this month.");
    await page.getByLabel(/^Budget/).fill('1.5');
    await page.getByLabel('Resets').selectOption('day');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await expect
      .poll(() => now.textContent(), POLL)
      .toMatch(/^0\.00 USD of 1\.50 USD spent today by all keys; resets \d{4}-\d\d-\d\d 00:00:00 UTC\.$/);

    // Two keys spend 1.00 between them: shown; a call that could cost more than the 0.50 left is refused.
    const m = new Metering(h.redis);
    for (const [i, keyId] of ['key_a', 'key_b'].entries()) {
      const holdId = `req_budget_${i}`;
      await m.reserve({ accountId: owner.accountId, holdId, min: 1, max: 500_000_000, ttlMs: 60_000, keyId });
      await m.settle({
        accountId: owner.accountId,
        holdId,
        cost: 500_000_000,
        usage: { keyId, model: 'M', kind: 'chat' },
      });
    }
    await page.reload();
    await expect
      .poll(() => now.textContent(), POLL)
      .toMatch(/^1\.00 USD of 1\.50 USD spent today by all keys/);
    const refused = await m.reserve({
      accountId: owner.accountId,
      holdId: 'req_budget_over',
      min: 600_000_000,
      max: 600_000_000,
      ttlMs: 60_000,
      keyId: 'key_a',
    });
    expect(refused).toMatchObject({ ok: false });
    await shoot(page, `${out}billing-account-budget`);

    // A member reads it; no form.
    const memberContext = await browser.newContext({ viewport: DESKTOP });
    const memberPage = await memberContext.newPage();
    await signIn(memberPage, member.email);
    await expect
      .poll(() => memberPage.getByTestId('account-budget').textContent(), POLL)
      .toMatch(/^1\.00 USD of 1\.50 USD spent today/);
    expect(await memberPage.getByRole('button', { name: 'Save budget' }).count()).toBe(0);
    await memberContext.close();

    await page.getByRole('button', { name: 'Remove budget' }).click();
    await expect
      .poll(() => now.textContent(), POLL)
      .toMatch(/^No budget across the account's keys: 1\.00 USD spent/);
    expect(errors).toEqual([]);
    await context.close();
  }, 120_000);
});
