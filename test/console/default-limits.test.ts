// API Management's default key limits (issue 34), in Debian's Chromium through playwright-core
// against the platform started as `make dev` starts it. An owner sets each of the account's four
// default rate limits on the page (one at a time, clearing the others), and a key that has no limit
// of its own — a new one each time, so no proxy has it cached — is refused through the real API
// over HTTP exactly as the default says: the second request of the minute, the second call once the
// input or output token bucket is taken, a call while another holds the only slot. A member sees
// the defaults but has no way to change them on the page, and the console API refuses them (403).
// Clear All at phone width (390×844) leaves a new key answering as an unlimited one. Ledger last.
import { mkdirSync } from 'node:fs';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Accounts } from '../../core/accounts/accounts.ts';
import { Team } from '../../core/accounts/team.ts';
import { Users } from '../../core/accounts/users.ts';
import { Metering } from '../../core/billing/index.ts';
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
import { registerSecrets } from '../helpers/run-log.ts';

const out = new URL('../out/', import.meta.url).pathname;
const POLL = { timeout: 15_000 };
const CHAT = 'Meta-Llama/Llama-3.1-8B-Instruct';

let started: BrowserPlatform;
let models: ReturnType<typeof exampleModels>;

beforeAll(async () => {
  await ensureConsoleWeb();
  models = exampleModels('mp-default-limits-');
  started = await startBrowserPlatform({
    dataDir: models.dataDir,
    modelsDir: models.modelsDir,
    env: {},
    log: () => {},
  });
  mkdirSync(out, { recursive: true });
}, 300_000);

afterAll(async () => {
  await started?.stop();
  models?.remove();
}, 60_000);

type Fields = Record<
  'Requests per minute' | 'Input tokens per minute' | 'Output tokens per minute' | 'Calls at once',
  string
>;
const NONE: Fields = {
  'Requests per minute': '',
  'Input tokens per minute': '',
  'Output tokens per minute': '',
  'Calls at once': '',
};

describe('default key limits on API Management (issue 34)', () => {
  let owner: Awaited<ReturnType<typeof newOwner>>;
  let context: BrowserContext;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    owner = await newOwner(started.redis, 'Default Limits Co');
    // The account has a key already, so the first visit mints no Default (no dialog in the way).
    registerSecrets((await started.keys.create(owner.accountId, { name: 'existing' })).secret);
    context = await started.browser.newContext({ viewport: DESKTOP });
    page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await signIn(page, started.platform.consoleUrl, owner.email);
    await page.getByRole('heading', { name: 'API Management' }).waitFor(POLL);
  }, 60_000);

  afterAll(async () => {
    await context?.close();
  });

  /** A key with no limit of its own, never called before (no proxy has its lookup cached). */
  async function plainKey(name: string): Promise<{ keyId: string; secret: string }> {
    const { key, secret } = await started.keys.create(owner.accountId, { name });
    registerSecrets(secret);
    expect(Object.values(key.rateLimits).every((v) => v === null)).toBe(true);
    return { keyId: key.id, secret };
  }

  const chat = (secret: string) =>
    fetch(`${started.platform.apiBase}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: CHAT, messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 }),
    });

  async function expectRefused(res: Response, words: string): Promise<void> {
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe('rate_limit_exceeded');
    expect(error.message).toContain(words);
  }

  /** Edit Defaults on the page: each field typed as given (blank clears it), then Save. */
  async function saveDefaults(fields: Fields): Promise<void> {
    await page.getByRole('button', { name: 'Edit Defaults' }).click();
    const box = page.getByRole('dialog').filter({ hasText: 'Default Key Limits' });
    for (const [label, value] of Object.entries(fields)) await box.getByLabel(label).fill(value);
    await box.getByRole('button', { name: 'Save' }).click();
    await box.waitFor({ state: 'detached' });
  }

  const summary = () => page.getByTestId('default-limits').textContent();
  const stored = async () => (await new Accounts(started.redis).get(owner.accountId))!.rateLimits;

  it('an owner sets each default on the page; a key without its own limits is refused through the API as the default says', async () => {
    await expect.poll(summary, POLL).toBe('None: a key without its own limits is not limited.');
    // All four at once: the page lists them, and a key's Limits dialog offers each as its fallback.
    await saveDefaults({
      'Requests per minute': '60',
      'Input tokens per minute': '10000',
      'Output tokens per minute': '5000',
      'Calls at once': '3',
    });
    await expect
      .poll(summary, POLL)
      .toBe(
        'Requests per minute: 60; Input tokens per minute: 10,000; Output tokens per minute: 5,000; Calls at once: 3.',
      );
    await page
      .locator('tbody tr')
      .filter({ hasText: 'existing' })
      .getByRole('button', { name: 'Limits' })
      .click();
    const keyBox = page.getByRole('dialog').filter({ hasText: 'Limits: existing' });
    await expect
      .poll(() => keyBox.getByLabel('Requests per minute').getAttribute('placeholder'), POLL)
      .toBe('account default: 60');
    expect(await keyBox.getByLabel('Input tokens per minute').getAttribute('placeholder')).toBe(
      'account default: 10,000',
    );
    await keyBox.getByRole('button', { name: 'Cancel' }).click();
    await keyBox.waitFor({ state: 'detached' });
    // Requests per minute alone (the others cleared): one a minute, so the second request is refused.
    await saveDefaults({ ...NONE, 'Requests per minute': '1' });
    await expect.poll(summary, POLL).toBe('Requests per minute: 1.');
    expect(await stored()).toEqual({
      requestsPerMinute: 1,
      inputTokensPerMinute: null,
      outputTokensPerMinute: null,
      concurrentCalls: null,
    });
    await shoot(page, `${out}default-limits`);
    const rpm = await plainKey('rpm default');
    const first = await chat(rpm.secret);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('1');
    await expectRefused(await chat(rpm.secret), 'rate limit of 1 requests per minute');

    // Input, then output tokens per minute (the other defaults cleared): a call wanting more than a
    // whole bucket waits for a full one and takes it all, so the first passes and the next is refused.
    for (const [label, words] of [
      ['Input tokens per minute', 'input tokens per minute'],
      ['Output tokens per minute', 'output tokens per minute'],
    ] as const) {
      await saveDefaults({ ...NONE, [label]: '2' });
      await expect.poll(summary, POLL).toBe(`${label}: 2.`);
      const key = await plainKey(label);
      expect((await chat(key.secret)).status).toBe(200);
      await expectRefused(await chat(key.secret), `rate limit of 2 ${words}`);
    }

    // Calls at once: a hold of the key's (a call running) takes the only slot; its release frees it.
    await saveDefaults({ ...NONE, 'Calls at once': '1' });
    await expect.poll(summary, POLL).toBe('Calls at once: 1.');
    expect(await stored()).toEqual({
      requestsPerMinute: null,
      inputTokensPerMinute: null,
      outputTokensPerMinute: null,
      concurrentCalls: 1,
    });
    const conc = await plainKey('concurrency default');
    const metering = new Metering(started.redis);
    const running = await metering.reserve({
      accountId: owner.accountId,
      holdId: 'req_default_limits_running',
      min: 1,
      max: 1_000,
      ttlMs: 60_000,
      keyId: conc.keyId,
    });
    expect(running).toMatchObject({ ok: true });
    await expectRefused(await chat(conc.secret), 'rate limit of 1 calls at once');
    await metering.release(owner.accountId, 'req_default_limits_running');
    expect((await chat(conc.secret)).status).toBe(200);
    await expectLedgerClean(started.redis, [owner.accountId]);
  }, 120_000);

  it('a member sees the defaults and cannot change them: no button on the page, 403 from the console API', async () => {
    const email = `default-limits-member-${Date.now().toString(36)}@example.com`;
    const user = await new Users(started.redis).create({
      email,
      password: PASSWORD,
      accountId: owner.accountId,
    });
    await new Team(started.redis).add(owner.accountId, user.id, 'member');
    const memberContext = await started.browser.newContext({ viewport: DESKTOP });
    const memberPage = await memberContext.newPage();
    memberPage.on('pageerror', (e) => errors.push(e.message));
    await signIn(memberPage, started.platform.consoleUrl, email);
    await expect
      .poll(() => memberPage.getByTestId('default-limits').textContent(), POLL)
      .toBe('Calls at once: 1.');
    expect(await memberPage.getByRole('button', { name: 'Edit Defaults' }).count()).toBe(0);
    expect(await memberPage.getByText('Only an owner of the account can change them.').count()).toBe(1);
    const refused = await memberPage.evaluate(async () => {
      const me = (await (await fetch('/api/session')).json()) as { csrfToken: string };
      const res = await fetch('/api/account/limits', {
        method: 'PUT',
        headers: { 'x-csrf-token': me.csrfToken, 'content-type': 'application/json' },
        body: JSON.stringify({ rateLimits: { concurrentCalls: null } }),
      });
      return res.status;
    });
    expect(refused).toBe(403);
    expect((await stored()).concurrentCalls).toBe(1);
    await memberContext.close();
  }, 60_000);

  it('Clear All at phone width: the page says there are none and a new key answers as an unlimited one', async () => {
    await page.setViewportSize(PHONE);
    await page.getByRole('button', { name: 'Edit Defaults' }).click();
    const box = page.getByRole('dialog').filter({ hasText: 'Default Key Limits' });
    expect(await box.getByLabel('Calls at once').inputValue()).toBe('1');
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBe(0);
    await box.getByRole('button', { name: 'Clear All' }).click();
    await box.waitFor({ state: 'detached' });
    await expect.poll(summary, POLL).toBe('None: a key without its own limits is not limited.');
    await page.setViewportSize(DESKTOP);
    expect(await stored()).toEqual({
      requestsPerMinute: null,
      inputTokensPerMinute: null,
      outputTokensPerMinute: null,
      concurrentCalls: null,
    });
    const free = await plainKey('after clear');
    for (let i = 0; i < 2; i++) {
      const res = await chat(free.secret);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit-requests')).toBeNull();
    }
    await expectLedgerClean(started.redis, [owner.accountId]);
    expect(errors).toEqual([]);
  }, 60_000);
});
