// The console's money, Billing and forms as a user meets them (issue 48 items 8, 9 and 10), in
// Debian's Chromium through playwright-core against the platform as `make dev` starts it (top-ups
// by operator approval, the default), at 1440×900 and 390×844: one money format (two decimals for
// balances, top-ups, limits and the ledger); Billing following a top-up until it is credited, with
// a notice on return from the payment page; forms that say what is wrong in words (never the API's
// field names); keys renamed; the key actions never overlapping; the only owner not offered
// Remove on themselves, and a refused removal said inside its dialog; the dialogs on Radix's
// (item 11): Tab moves through every field in order and stays inside, the page behind is hidden
// and inert, Esc closes and focus goes back. Money ends with the ledger check.
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { promisify } from 'node:util';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Team } from '../../core/accounts/team.ts';
import { Users } from '../../core/accounts/users.ts';
import { Metering } from '../../core/billing/index.ts';
import { TopUpRequests } from '../../core/payments/index.ts';
import {
  type BrowserPlatform,
  DESKTOP,
  exampleModels,
  newOwner,
  PASSWORD,
  PHONE,
  shoot,
  signIn,
  startBrowserPlatform,
} from '../helpers/browser.ts';
import { ensureConsoleWeb } from '../helpers/console-web.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';

const run = promisify(execFile);
const repo = new URL('../../', import.meta.url).pathname;
const out = `${repo}test/out/`;
const POLL = { timeout: 15_000 };

let started: BrowserPlatform;
let models: ReturnType<typeof exampleModels>;

beforeAll(async () => {
  await ensureConsoleWeb();
  models = exampleModels('mp-console-forms-');
  started = await startBrowserPlatform({ ...models, env: {}, log: () => {} });
  mkdirSync(out, { recursive: true });
}, 300_000);

afterAll(async () => {
  await started?.stop();
  models?.remove();
}, 60_000);

async function signedIn(email: string, path: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await started.browser.newContext({ viewport: DESKTOP });
  const page = await context.newPage();
  await signIn(page, started.platform.consoleUrl, email, path);
  return { context, page };
}

/** Every "1,234.5678 USD" on the page, as written. */
const amountsOn = (page: Page) =>
  page.evaluate(() => document.body.innerText.match(/-?\d[\d,]*\.\d+ USD/g) ?? []);

/** The CLI's `topups approve`, as an operator runs it. */
const approve = (id: string) =>
  run(process.execPath, [`${repo}cli/bin.mjs`, 'topups', 'approve', id], {
    cwd: repo,
    env: { ...process.env, REDIS_URL: started.platform.redisUrl, MODELPLANE_KEK: started.platform.kek },
  });

describe('issue 48 item 8: one money format', () => {
  it('Billing and API Management show balances, top-ups, limits and the ledger with two decimals, rounded (the exact balance on hover)', async () => {
    const owner = await newOwner(started.redis, 'Money Co', { credit: '100' });
    const { key } = await started.keys.create(owner.accountId, { name: 'capped', spendLimit: 5_000_000_000 });
    // A call's charge of a fraction of a cent: the balance is 99.9998766.
    await new Metering(started.redis).charge({
      accountId: owner.accountId,
      chargeId: 'money-format-charge',
      cost: 123_400,
      usage: {
        keyId: key.id,
        model: 'Meta-Llama/Llama-3.1-8B-Instruct',
        kind: 'chat',
        inputTokens: 10,
        outputTokens: 5,
      },
    });
    await new TopUpRequests(started.redis).create({
      accountId: owner.accountId,
      amount: 20_000_000_000,
      currency: 'USD',
      provider: 'approval',
      createdBy: owner.userId,
    });
    const { context, page } = await signedIn(owner.email, '/billing');
    await expect.poll(() => page.getByTestId('balance').textContent(), POLL).toBe('100.00 USD');
    expect(await page.getByTestId('balance').getAttribute('title')).toBe('99.9998766 USD');
    await page.getByTestId('topup-status').first().waitFor(POLL);
    await expect
      .poll(() => page.locator('section', { hasText: 'Ledger' }).locator('tbody tr').count(), POLL)
      .toBe(2);
    const billing = await amountsOn(page);
    expect(billing.length).toBeGreaterThan(5);
    expect(billing.filter((a) => !/\.\d\d USD$/.test(a))).toEqual([]);
    await shoot(page, `${out}billing-two-decimals`);

    await page.goto(`${started.platform.consoleUrl}/api`);
    await page.locator('#keys-table tbody tr').first().waitFor(POLL);
    const row = page.locator('#keys-table tbody tr', { hasText: 'capped' });
    await expect
      .poll(() => row.getByTestId('limit').textContent(), POLL)
      .toBe('0.00 USD of 5.00 USD this month');
    expect(await row.getByTestId('month-spend').textContent()).toBe('0.00 USD');
    expect((await amountsOn(page)).filter((a) => !/\.\d\d USD$/.test(a))).toEqual([]);
    await context.close();
    await expectLedgerClean(started.redis, [owner.accountId]);
  }, 60_000);
});

describe('issue 48 item 9: Billing follows a top-up until it settles', () => {
  it('an approved top-up shows credited and the new balance without a reload; the return from the payment page says what is happening, then that it was credited', async () => {
    const owner = await newOwner(started.redis, 'Refresh Co', { credit: '100' });
    const { context, page } = await signedIn(owner.email, '/billing');
    await expect.poll(() => page.getByTestId('balance').textContent(), POLL).toBe('100.00 USD');
    await page.getByLabel('Amount (USD)').fill('25');
    await page.getByRole('button', { name: 'Top up' }).click();
    await expect.poll(() => page.getByTestId('topup-status').first().textContent(), POLL).toBe('pending');
    const [first] = await new TopUpRequests(started.redis).list(owner.accountId);
    expect((await approve(first!.id)).stdout).toMatch(/^credited\n/);
    // No reload: the page follows the pending request.
    await expect.poll(() => page.getByTestId('topup-status').first().textContent(), POLL).toBe('credited');
    await expect.poll(() => page.getByTestId('balance').textContent(), POLL).toBe('125.00 USD');

    // Back from the payment page (Stripe's success_url): a notice at once, then the credit.
    const second = await new TopUpRequests(started.redis).create({
      accountId: owner.accountId,
      amount: 10_000_000_000,
      currency: 'USD',
      provider: 'approval',
      createdBy: owner.userId,
    });
    await page.goto(`${started.platform.consoleUrl}/billing?topup=${second.id}&checkout=success`);
    const notice = page.getByTestId('checkout-notice');
    await expect
      .poll(() => notice.textContent(), POLL)
      .toMatch(/^Payment received\. 10\.00 USD is credited as soon as/);
    await shoot(page, `${out}billing-returned-pending`);
    await approve(second.id);
    await expect.poll(() => notice.textContent(), POLL).toBe('Payment received: 10.00 USD was credited.');
    await expect.poll(() => page.getByTestId('balance').textContent(), POLL).toBe('135.00 USD');
    await shoot(page, `${out}billing-returned-credited`);
    await page.goto(`${started.platform.consoleUrl}/billing?topup=${second.id}&checkout=cancel`);
    await expect
      .poll(() => notice.textContent(), POLL)
      .toBe('The payment was cancelled; nothing was charged.');
    await context.close();
    await expectLedgerClean(started.redis, [owner.accountId]);
  }, 60_000);
});

describe('issue 48 item 10: forms, key names, key actions, the team', () => {
  it('a bad amount in any form is said in words naming the field, never the API’s parameter', async () => {
    const owner = await newOwner(started.redis, 'Forms Co', { credit: '10' });
    await started.keys.create(owner.accountId, { name: 'tool' });
    const { context, page } = await signedIn(owner.email, '/api');
    const row = page.locator('#keys-table tbody tr', { hasText: 'tool' });
    await row.waitFor(POLL);
    const said: string[] = [];

    await page.getByRole('button', { name: 'Generate New Key' }).click();
    await page.getByLabel('Name').fill('another');
    await page.getByLabel(/^Monthly spend limit/).fill('abc');
    await page.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => page.locator('#generate-error').textContent(), POLL).not.toBe('');
    said.push((await page.locator('#generate-error').textContent())!);
    await page.getByRole('button', { name: 'Cancel' }).click();

    await row.getByRole('button', { name: 'Spend Limit' }).click();
    await page
      .getByRole('dialog')
      .getByLabel(/^Monthly spend limit/)
      .fill('abc');
    await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.locator('#limit-error').textContent(), POLL).not.toBe('');
    said.push((await page.locator('#limit-error').textContent())!);
    await shoot(page, `${out}form-error-spend-limit`);
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

    await row.getByRole('button', { name: 'Limits' }).click();
    const limits = page.getByRole('dialog');
    await limits.getByLabel(/^Spend limit/).fill('abc');
    await limits.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.locator('#limits-error').textContent(), POLL).not.toBe('');
    said.push((await page.locator('#limits-error').textContent())!);
    await limits.getByRole('button', { name: 'Cancel' }).click();

    await page.goto(`${started.platform.consoleUrl}/billing`);
    await page.getByLabel('Amount (USD)').fill('abc');
    await page.getByRole('button', { name: 'Top up' }).click();
    await expect.poll(() => page.locator('#topup-error').textContent(), POLL).not.toBe('');
    said.push((await page.locator('#topup-error').textContent())!);
    await page.getByLabel(/^Budget/).fill('abc');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await expect.poll(() => page.locator('#budget-error').textContent(), POLL).not.toBe('');
    said.push((await page.locator('#budget-error').textContent())!);

    expect(said).toEqual([
      'Monthly spend limit: write an amount like 25 or 7.50, or leave it blank for none.',
      'Monthly spend limit: write an amount like 25 or 7.50, or leave it blank for none.',
      'Spend limit: write an amount like 25 or 7.50, or leave it blank for none.',
      'Amount: write an amount like 25 or 7.50.',
      'Budget: write an amount like 25 or 7.50, or leave it blank for none.',
    ]);
    await context.close();
  }, 60_000);

  it('a key is renamed from its row; a name another key has is refused in the dialog, in words', async () => {
    const owner = await newOwner(started.redis, 'Rename Co', { credit: '10' });
    const { key } = await started.keys.create(owner.accountId, { name: 'old name' });
    await started.keys.create(owner.accountId, { name: 'taken' });
    const { context, page } = await signedIn(owner.email, '/api');
    const row = page.locator(`#keys-table tbody tr[data-key-id="${key.id}"]`);
    await row.waitFor(POLL);
    await row.getByRole('button', { name: 'Rename' }).click();
    const box = page.getByRole('dialog', { name: 'Rename Key: old name' });
    await expect.poll(() => box.getByLabel('Name').inputValue(), POLL).toBe('old name');
    await box.getByLabel('Name').fill('taken');
    await box.getByLabel('Name').press('Enter');
    await expect
      .poll(() => box.locator('#rename-error').textContent(), POLL)
      .toBe('Another key of this account is already named “taken”: choose another name.');
    await box.getByLabel('Name').fill('new name');
    await shoot(page, `${out}api-management-rename`);
    await box.getByRole('button', { name: 'Save' }).click();
    await box.waitFor({ state: 'detached' });
    await expect.poll(() => row.getByTestId('key-name').textContent(), POLL).toBe('new name');
    expect((await started.keys.get(owner.accountId, key.id))?.name).toBe('new name');
    await context.close();
  }, 60_000);

  it('the key actions never overlap or touch, at either width, with a spend limit shown', async () => {
    const owner = await newOwner(started.redis, 'Buttons Co', { credit: '10' });
    await started.keys.create(owner.accountId, {
      name: 'a key with a rather long name for its column',
      spendLimit: 5_000_000_000,
    });
    const { context, page } = await signedIn(owner.email, '/api');
    await page.locator('#keys-table tbody tr').first().waitFor(POLL);
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      const problems = await page.evaluate(() => {
        const found: string[] = [];
        for (const cell of document.querySelectorAll('#keys-table td.actions')) {
          const boxes = [...cell.querySelectorAll('button')].map((b) => ({
            name: b.textContent,
            r: b.getBoundingClientRect(),
          }));
          const scroller = cell.closest('.scroll')!.getBoundingClientRect();
          // Two buttons are apart when at least GAP px of page lie between them, across or down.
          const GAP = 4;
          for (const [i, a] of boxes.entries()) {
            if (a.r.right > scroller.right + 0.5) found.push(`${a.name} is cut off`);
            for (const b of boxes.slice(i + 1)) {
              const across = Math.max(b.r.left - a.r.right, a.r.left - b.r.right);
              const down = Math.max(b.r.top - a.r.bottom, a.r.top - b.r.bottom);
              if (across < GAP && down < GAP)
                found.push(`${a.name} and ${b.name} touch (${Math.round(Math.max(across, down))} px apart)`);
            }
          }
        }
        return found;
      });
      expect([viewport.width, problems]).toEqual([viewport.width, []]);
    }
    await shoot(page, `${out}api-management-actions`);
    await context.close();
  }, 60_000);

  it('the only owner is not offered Remove or a role change on themselves; a removal refused is said inside its dialog', async () => {
    const owner = await newOwner(started.redis, 'Sole Owner Co', { credit: '10' });
    const { context, page } = await signedIn(owner.email, '/team');
    const mine = page.locator(`tbody tr[data-user-id="${owner.userId}"]`);
    await mine.waitFor(POLL);
    expect(await mine.getByRole('button', { name: 'Remove' }).count()).toBe(0);
    expect(await mine.getByRole('combobox').isDisabled()).toBe(true);
    expect(await mine.textContent()).toMatch(/the only owner/);
    await shoot(page, `${out}team-sole-owner`);

    // Two owners: each may leave, until the other one has left first.
    const second = `co-owner-${Date.now().toString(36)}@example.com`;
    const user = await new Users(started.redis).create({
      email: second,
      password: PASSWORD,
      accountId: owner.accountId,
    });
    const team = new Team(started.redis);
    await team.add(owner.accountId, user.id, 'owner');
    await page.reload();
    await mine.getByRole('button', { name: 'Remove' }).click();
    const box = page.getByRole('dialog', { name: 'Remove member?' });
    await box.waitFor(POLL);
    await team.remove(owner.accountId, user.id, { revokeKeys: false });
    await box.getByRole('button', { name: 'Remove', exact: true }).click();
    await expect.poll(() => box.getByRole('alert').textContent(), POLL).toMatch(/needs an owner/);
    // The words are in the dialog, on top, not behind the backdrop.
    const onTop = await box.getByRole('alert').evaluate((el) => {
      const r = el.getBoundingClientRect();
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return el.contains(hit);
    });
    expect(onTop).toBe(true);
    await shoot(page, `${out}team-remove-refused`);
    await box.getByRole('button', { name: 'Cancel' }).click();
    await context.close();
  }, 60_000);
});

describe('issue 48 item 11: dialogs on an accessible component library', () => {
  it('in a dialog Tab goes field by field (a select too) and stays inside; the page behind is hidden and inert; Esc closes and focus returns', async () => {
    const owner = await newOwner(started.redis, 'Dialog Co', { credit: '10' });
    await started.keys.create(owner.accountId, { name: 'tool' });
    const { context, page } = await signedIn(owner.email, '/api');
    // What the browser reports while dialogs open and close: nothing (a style the page's CSP
    // refuses, say, would be an error here).
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    const row = page.locator('#keys-table tbody tr', { hasText: 'tool' });
    await row.waitFor(POLL);
    const focused = () =>
      page.evaluate(() => {
        const el = document.activeElement as HTMLElement | null;
        const label = el?.closest('label')?.firstChild?.textContent?.trim();
        return {
          inDialog: el?.closest('[role="dialog"]') !== null,
          name: label || el?.textContent?.trim() || '',
        };
      });
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      const opener = row.getByRole('button', { name: 'Limits' });
      await opener.click();
      const box = page.getByRole('dialog', { name: 'Limits: tool' });
      await box.getByLabel('Resets').waitFor(POLL);
      await box.getByLabel('Resets').focus();
      await page.keyboard.press('Tab');
      expect([viewport.width, await focused()]).toEqual([
        viewport.width,
        { inDialog: true, name: 'Requests per minute' },
      ]);
      // Round the whole dialog and back: focus never leaves it.
      for (let i = 0; i < 12; i++) {
        await page.keyboard.press('Tab');
        expect((await focused()).inDialog).toBe(true);
      }
      // The page behind: hidden from screen readers (live regions aside, which stay announced:
      // the aria-hidden package's rule), and a click on it does not reach it.
      for (const behind of ['#keys-table', 'nav', 'h1'])
        expect([
          behind,
          await page
            .locator(behind)
            .first()
            .evaluate((e) => e.closest('[aria-hidden="true"], [inert]') !== null),
        ]).toEqual([behind, true]);
      const hit = await page.evaluate(() => {
        const r = document.querySelector('#keys-table')!.getBoundingClientRect();
        return document.elementFromPoint(r.left + 5, r.top + 5)?.closest('#keys-table') !== null;
      });
      expect(hit).toBe(false);
      await page.keyboard.press('Escape');
      await box.waitFor({ state: 'detached' });
      await expect.poll(() => opener.evaluate((b) => b === document.activeElement), POLL).toBe(true);
    }
    await row.getByRole('button', { name: 'Limits' }).click();
    await page.getByRole('dialog').getByLabel('Resets').waitFor(POLL);
    await shoot(page, `${out}api-management-limits-dialog`);
    expect(errors).toEqual([]);
    await context.close();
  }, 60_000);
});
